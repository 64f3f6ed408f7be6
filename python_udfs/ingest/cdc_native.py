"""The contract stream's native events of CDC lines: each event :func:`change_events` makes of
a ``debezium-json``, ``canal-json`` or ``maxwell-json`` line (:mod:`python_udfs.ingest.cdc_formats`)
written as the native JSON line it stands for (``op``, ``project_id``, ``contract_id``,
``sign_time``, ``amount``, ``op_ts``), which the native parser and validator
(:mod:`python_udfs.ingest.contract_lines`) then check unchanged; the event's log position rides
beside it (``src``, ``pos``: :mod:`python_udfs.ingest.cdc_positions`). Time values are read
as their wall clock (:mod:`python_udfs.ingest.cdc_times`), Debezium's exact decimals as their
text (:mod:`python_udfs.ingest.cdc_decimals`)."""

from __future__ import annotations

from typing import Optional

from python_udfs.ingest.cdc_decimals import schema_parameter, with_decimal_text
from python_udfs.ingest.cdc_formats import CdcOptions, change_events
from python_udfs.ingest.cdc_times import semantic_type, undeclared_unit, with_wall_clock

__all__ = ["to_native_events"]

_FIELDS = ("contract_id", "project_id", "sign_time", "amount")


def _field(name: str, digit_strings: bool):
    """The native JSON text of field ``name`` of an exploded event ``e`` (SQL): the old
    value if the event has one for it, else the row's; ``null`` when absent."""
    x = f"coalesce(variant_get(e.old, '$.{name}'), variant_get(e.row, '$.{name}'))"
    j = f"to_json({x})"
    if name in ("contract_id", "project_id") and digit_strings:
        # Canal's values are strings: "1001" -> 1001 (other strings stay strings: refused).
        digits = f"substring({j}, 2, length({j}) - 2)"
        return f"coalesce(CASE WHEN {j} RLIKE '^\"-?[0-9]+\"$' THEN {digits} ELSE {j} END, 'null')"
    if name == "amount":
        # a Debezium decimal as its exact text (with_decimal_text), else the JSON value
        return f"coalesce(concat('\"', __amount_text, '\"'), {j}, 'null')"
    if name == "sign_time":
        # a time value as the wall-clock text it stands for (with_wall_clock; a fraction stays:
        # the validator refuses it)
        return f"coalesce(concat('\"', cast(__sign_wall as string), '\"'), {j}, 'null')"
    return f"coalesce({j}, 'null')"


def to_native_events(lines, fmt: str, opts: Optional[CdcOptions] = None):
    """``lines`` (``landed_lines.numbered_lines``) of format ``fmt`` as the contract stream's
    events (:func:`change_events`, read with ``opts``) with ``native`` (the event as a native
    JSON line), ``origin`` (``<format> <image>``, the prefix of a validation reason) and
    ``bad`` (an envelope's quarantine reason)."""
    from pyspark.sql import functions as F

    opts = opts or CdcOptions()

    def columns(e, ts_ms, bad):
        return [("e", e), ("ts_ms", ts_ms), ("origin", F.concat(F.lit(f"{fmt} "), e.image)), ("bad", bad)]

    events = change_events(lines, fmt, columns, opts=opts, positions=True)
    amount = "coalesce(variant_get(e.old, '$.amount'), variant_get(e.row, '$.amount'))"
    events = with_decimal_text(events, amount, semantic_type("e.types", "amount"),
                               schema_parameter("e.types", "amount", "scale"), opts.scale("amount"), "__amount_text")
    sign, semantic, unit = ("coalesce(variant_get(e.old, '$.sign_time'), variant_get(e.row, '$.sign_time'))",
                            semantic_type("e.types", "sign_time"), opts.unit("sign_time"))
    events = with_wall_clock(events, sign, semantic, unit, "__sign_wall")
    e = F.col("e")
    # a delete needs only the key: its sign_time is not read
    unitless = F.when(e.op != "-D", undeclared_unit(sign, semantic, unit, "sign_time", opts.declare_unit))
    events = events.withColumn("bad", F.coalesce("bad", F.concat(F.col("origin"), F.lit(": "), unitless)))
    op_ts = F.timestamp_millis(F.col("ts_ms")).cast("timestamp_ntz").cast("string")  # the business wall clock
    native = F.concat(
        F.lit('{"op":"'), e.op, F.lit('"'),
        *[F.concat(F.lit(f',"{n}":'), F.expr(_field(n, fmt == "canal-json"))) for n in _FIELDS],
        F.lit(',"op_ts":"'), op_ts, F.lit('"}'))
    return events.select("file", "line", "n_events", "text", "batch_us", "skip", "src", "pos",
                         F.when(F.col("bad").isNull(), native).alias("native"), "origin", "bad")
