"""The contract stream's lines: JSON parsing and validation (the reasons of the module doc of
:mod:`python_udfs.ingest.contract_ingest`)."""

from __future__ import annotations

from python_udfs.ingest.landed_lines import trim_space
from python_udfs.ingest.tables import checked_lines
from python_udfs.ingest.wall_clock import (
    WALL_CLOCK,
    WALL_CLOCK_MS,
    ntz_micros,
    parse_wall_clock,
)

__all__ = ["ROWKINDS", "parse_contract_lines"]

ROWKINDS = ("+I", "-U", "+U", "-D")
FIELDS = ("op", "contract_id", "project_id", "sign_time", "amount", "op_ts")


def parse_contract_lines(lines, converted: bool = False):
    """``lines`` (``landed_lines.numbered_lines``: file, line, n_events, text, batch_us; line 0
    = the file's marker) as one row per file (``kind`` 'file', ``n_events`` = its non-blank
    lines) and one per non-blank line (``kind`` 'E' for a valid event, 'quarantined' with a
    ``reason`` otherwise). ``converted``: ``lines`` are events converted from a CDC format
    (``cdc_native.to_native_events``): the event's ``native`` text is checked, an envelope's
    ``bad`` is the reason, a validation reason is prefixed with the event's ``origin``, the
    quarantined line is ``text``, the landed line, and a line with a ``skip`` reason is
    ``kind`` 'skipped'; an event keeps its log position (``src``, ``pos``; NULL on native
    lines, which carry none: :mod:`python_udfs.ingest.cdc_positions`)."""
    from pyspark.sql import functions as F

    source = "native" if converted else "text"
    keep = ("file", "line", "n_events", "text", "batch_us", "v") + (
        ("skip", "src", "pos", "native", "origin", "bad") if converted else ())
    values = _field_values(_json_fields(lines, source, keep), source)
    reason = _reason(F.col("op"), F.col("contract_id"), F.col("project_id"), F.col("sign_time"),
                     F.col("op_ts"), F.col("amount"))
    if converted:
        reason = F.coalesce(F.col("bad"), F.concat(F.col("origin"), F.lit(": "), reason))
    return checked_lines(values, reason, [
        ("contract_id", F.col("contract_id")),
        ("op", F.col("op")),
        ("project_id", F.col("project_id")),
        ("sign_us", ntz_micros(F.col("sign_time"))),
        ("amount", F.col("amount").cast("string")),
        ("op_ts_us", ntz_micros(F.col("op_ts"))),
        *[(c, F.col(c) if converted else F.lit(None).cast("string")) for c in ("src", "pos")],
    ])


def _json_fields(lines, source: str, keep):
    """Each line's JSON (``v``) and, per field, its sub-variant ``x_<field>`` and JSON text
    ``j_<field>``.

    VARIANT keeps JSON's own types: integer literals, exact decimals, strings, objects
    (from_json with STRING fields would read 1.5, "1" and 1e3 alike, and numbers through a
    double). A field's JSON type is its text's first character and a string's content is the
    text between the quotes unless it holds an escape: schema_of_variant and casts of variants
    to string cost several times to_json's (docs/benchmarks.md); the exact cast
    (try_variant_get as string) is kept for escapes and for the quarantine messages, inside
    CASE branches that only bad lines reach. Separate projections with non-trivial columns are
    not collapsed, so each value is computed once per line (an expression repeated in later
    CASE branches would be evaluated again)."""
    from pyspark.sql import functions as F

    lines = lines.withColumn("v", F.expr(f"try_parse_json({source})"))
    subs = lines.select(*keep, *[F.expr(f"variant_get(v, '$.{n}')").alias(f"x_{n}") for n in FIELDS])
    return subs.select(*keep, *[f"x_{n}" for n in FIELDS],
                       *[F.expr(f"to_json(x_{n})").alias(f"j_{n}") for n in FIELDS])


def _field_values(typed, source: str):
    """The fields' values, typed (NULL where a field is absent or not of its type), beside
    whether the line is one JSON object."""
    from pyspark.sql import functions as F

    trimmed = trim_space(F.col(source))
    strings = typed.select(
        "*",
        trimmed.startswith("{").alias("is_object"),
        trimmed.endswith("}").alias("closed"),
        *[F.when(_is_string(n), _content(n)).alias(f"c_{n}") for n in ("op", "sign_time", "op_ts")],
        # A JSON number's text or a string's content.
        F.when(_is_string("amount"), _content("amount")).otherwise(_jtext("amount")).alias("c_amount"),
    )
    return strings.select(
        "*",
        F.col("c_op").alias("op"),
        _as_int("contract_id").alias("contract_id"),
        _as_int("project_id").alias("project_id"),
        parse_wall_clock(F.col("c_sign_time"), WALL_CLOCK).alias("sign_time"),
        parse_wall_clock(F.col("c_op_ts"), WALL_CLOCK_MS).alias("op_ts"),
        # A JSON number or a string holding one; rounded half-up to 2 places
        # (Spark's cast); NULL if it does not fit decimal(18,2).
        trim_space(F.col("c_amount")).try_cast("decimal(18,2)").alias("amount"),
    )


def _reason(op, contract_id, project_id, sign_time, op_ts, amount):
    """The first failing check's quarantine reason (NULL for a valid event)."""
    from pyspark.sql import functions as F

    needs_image = op.isin("+I", "+U", "-U")
    return (
        F.when(F.col("v").isNull(), F.lit("invalid json"))
        .when(~F.col("is_object"), F.lit("not a json object"))
        .when(~F.col("closed"), F.lit("invalid json"))  # trailing text after the object
        .when(~_present("op"), F.lit("missing op"))
        .when(op.isNull() | ~op.isin(*ROWKINDS),
              F.concat(F.lit("unknown op '"), F.substring(_jstr("op"), 1, 200), F.lit("'")))
        .when(~_present("contract_id"), F.lit("null contract_id"))
        .when(contract_id.isNull(), _shown("contract_id"))
        .when(~_present("op_ts"), F.lit("null op_ts"))
        .when(op_ts.isNull(), _shown("op_ts"))
        .when(needs_image & ~_present("project_id"), F.lit("null project_id"))
        .when(needs_image & project_id.isNull(), _shown("project_id"))
        .when(needs_image & ~_present("sign_time"), F.lit("null sign_time"))
        .when(needs_image & sign_time.isNull(), _shown("sign_time"))
        .when(_present("amount") & amount.isNull(), _shown("amount"))
    )


def _jtext(name):
    """The field's JSON text: NULL if absent, 'null' if JSON null."""
    from pyspark.sql import functions as F

    return F.col(f"j_{name}")


def _jstr(name):
    """A string's content, or the JSON text of another value (exact, slower)."""
    from pyspark.sql import functions as F

    return F.expr(f"try_variant_get(x_{name}, '$', 'string')")


def _present(name):
    return _jtext(name).isNotNull() & (_jtext(name) != "null")


def _is_string(name):
    return _jtext(name).startswith('"')


def _content(name):
    """A JSON string's content."""
    from pyspark.sql import functions as F

    text = _jtext(name)
    return F.when(~text.contains("\\"), F.expr(f"substring(j_{name}, 2, length(j_{name}) - 2)")) \
        .otherwise(_jstr(name))


def _as_int(name):
    """A JSON integer literal that fits a bigint."""
    from pyspark.sql import functions as F

    return F.when(_jtext(name).rlike("^-?[0-9]+$"), F.expr(f"try_variant_get(x_{name}, '$', 'bigint')"))


def _shown(name):
    from pyspark.sql import functions as F

    return F.concat(F.lit(f"bad {name} '"), F.substring(_jstr(name), 1, 200), F.lit("'"))
