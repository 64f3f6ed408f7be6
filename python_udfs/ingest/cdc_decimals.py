"""Debezium's exact decimals in CDC row images (:mod:`python_udfs.ingest.cdc_formats`): the
default ``decimal.handling.mode=precise`` writes a ``numeric``/``DECIMAL`` column as

* ``org.apache.kafka.connect.data.Decimal``: a JSON string, the base64 of the unscaled value's
  big-endian two's-complement bytes; the scale is the field schema's ``parameters.scale``
  (in the ``schema``/``payload`` wrapper) or, without the wrapper, the scale the stream
  declares for the field;
* ``io.debezium.data.VariableScaleDecimal`` (Postgres ``numeric`` without a scale): a JSON
  object ``{"scale": s, "value": "<base64>"}``, whatever the wrapper.

:func:`with_decimal_text` turns either into the exact decimal's text (``-12.345``), which the
contract stream's validator then reads as any amount: rounded half-up to ``decimal(18,2)``
(Spark's cast), quarantined when out of range (docs/cdc_formats.md, "Decimals").
"""

from __future__ import annotations

from typing import Optional

__all__ = ["DECIMAL", "MAX_BYTES", "VARIABLE_SCALE_DECIMAL", "schema_parameter", "with_decimal_text"]

DECIMAL = "org.apache.kafka.connect.data.Decimal"
VARIABLE_SCALE_DECIMAL = "io.debezium.data.VariableScaleDecimal"
# Unscaled values of at most 15 bytes (|x| < 2**119, 36 digits) fit decimal(38,0), where the
# bytes are added up; a longer one is quarantined (a decimal(18,2) holds 18 digits).
MAX_BYTES = 15
_TWO_64 = "18446744073709551616"


def _unscaled(h: str) -> str:
    """The unsigned integer (SQL, decimal(38,0)) of a hex text ``h`` of at most 30 digits."""
    lo = f"cast(conv(right({h}, 16), 16, 10) as decimal(38,0))"
    hi = f"cast(conv(if(length({h}) > 16, left({h}, length({h}) - 16), '0'), 16, 10) as decimal(38,0))"
    return f"try_add(try_multiply({hi}, {_TWO_64}BD), {lo})"


def schema_parameter(types: str, name: str, parameter: str) -> str:
    """A Debezium schema wrapper's ``parameters.<parameter>`` of field ``name`` of a row, from
    an event's ``types`` (SQL, a string); NULL without a wrapper."""
    return (f"try_variant_get(try_element_at(filter({types}, g -> try_variant_get(g, '$.field', 'string') = "
            f"'{name}'), 1), '$.parameters.{parameter}', 'string')")


def with_decimal_text(df, x: str, semantic: str, schema_scale: str, declared_scale: Optional[int], out: str):
    """``df`` with column ``out``: the text of the exact decimal a Debezium value ``x`` (SQL, a
    variant) stands for, or NULL when it is no Debezium decimal (a JSON number or a decimal's
    text: the caller reads it as written) or cannot be read (bad base64, more than MAX_BYTES
    bytes: the caller then shows the raw value in the quarantine reason). ``semantic``: the
    field's logical type (:func:`python_udfs.ingest.cdc_times.semantic_type`),
    ``schema_scale``: its schema's ``parameters.scale`` (SQL, NULL without a wrapper),
    ``declared_scale``: the stream's. Computed in steps, each part once a row (as
    :func:`python_udfs.ingest.cdc_times.with_wall_clock`)."""
    from pyspark.sql import functions as F

    declared = "NULL" if declared_scale is None else str(int(declared_scale))
    parts = df.withColumn("__dx", F.expr(x)).withColumn("__dsem", F.expr(semantic))
    variable = ("(__dsem <=> '" + VARIABLE_SCALE_DECIMAL + "' OR schema_of_variant(__dx) RLIKE "
                "'^OBJECT<scale: BIGINT, value: STRING>$')")
    fixed = (f"(__dsem <=> '{DECIMAL}' OR (__dsem IS NULL AND {declared} IS NOT NULL)) "
             "AND startswith(to_json(__dx), '\"')")
    parts = parts.withColumn("__b64", F.expr(f"""CASE
        WHEN {variable} THEN try_variant_get(__dx, '$.value', 'string')
        WHEN {fixed} THEN try_variant_get(__dx, '$', 'string') END""")).withColumn("__s", F.expr(f"""CASE
        WHEN {variable} THEN try_variant_get(__dx, '$.scale', 'int')
        WHEN {fixed} THEN coalesce(try_cast(({schema_scale}) as int), {declared}) END"""))
    parts = parts.withColumn("__h", F.expr("hex(try_to_binary(__b64, 'base64'))"))
    # two's complement: a negative value's magnitude is its bits inverted, plus one
    parts = parts.withColumn("__neg", F.expr("substring(__h, 1, 1) IN ('8', '9', 'A', 'B', 'C', 'D', 'E', 'F')"))
    inverted = "translate(__h, '0123456789ABCDEF', 'FEDCBA9876543210')"
    parts = parts.withColumn("__d", F.expr(f"""CASE WHEN length(__h) BETWEEN 2 AND {2 * MAX_BYTES}
        AND __s BETWEEN -38 AND 38 THEN cast(if(__neg, try_add({_unscaled(inverted)}, 1BD), {_unscaled('__h')})
        as string) END"""))
    padded = "lpad(__d, greatest(length(__d), __s + 1), '0')"  # lpad cuts a longer text
    text = f"""CASE WHEN __d IS NULL THEN NULL
        WHEN __s <= 0 THEN concat(if(__neg, '-', ''), __d, repeat('0', -__s))
        ELSE concat(if(__neg, '-', ''), left({padded}, length({padded}) - __s), '.', right({padded}, __s)) END"""
    return parts.withColumn(out, F.expr(text)).drop("__dx", "__dsem", "__b64", "__s", "__h", "__neg", "__d")
