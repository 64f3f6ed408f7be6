"""Times in CDC row images (:mod:`python_udfs.ingest.cdc_formats`, and the declared streams of
:mod:`python_udfs.ingest.stream_lines`): the wall clock a Debezium, Canal or Maxwell time value
stands for, its unit taken from the Debezium ``schema`` wrapper's logical type when there is
one, else from the stream's declaration (docs/cdc_formats.md, Times)."""

from __future__ import annotations

__all__ = ["MS_MAX", "MS_MIN", "TIME_UNITS", "semantic_type", "undeclared_unit", "with_wall_clock"]

# Epoch milliseconds Spark can turn into a timestamp (years 1..9999); days likewise.
MS_MIN, MS_MAX = -62135596800000, 253402300799999
_DAYS_MIN, _DAYS_MAX = -719162, 2932896
# The JSON text of an integer a time value may be (a bigint's digits at most).
_INTEGER = "^-?[0-9]{1,19}$"
TIME_UNITS = ("seconds", "millis", "micros", "nanos", "days")
# The unit of a JSON integer whose Debezium schema names its logical type.
_SEMANTIC_UNITS = {
    "io.debezium.time.Timestamp": "millis", "org.apache.kafka.connect.data.Timestamp": "millis",
    "io.debezium.time.MicroTimestamp": "micros", "io.debezium.time.NanoTimestamp": "nanos",
    "io.debezium.time.Date": "days", "org.apache.kafka.connect.data.Date": "days",
}


def semantic_type(types: str, name: str) -> str:
    """The logical type (the ``name`` of its schema, e.g. ``io.debezium.time.MicroTimestamp``)
    a Debezium schema wrapper gives field ``name`` of a row, from an event's ``types`` (SQL);
    NULL without a wrapper."""
    return (f"try_variant_get(try_element_at(filter({types}, g -> try_variant_get(g, '$.field', 'string') = "
            f"'{name}'), 1), '$.name', 'string')")


def undeclared_unit(x: str, semantic: str, unit, field: str, declare: str):
    """The quarantine reason (a Column; NULL otherwise) of a time value ``x`` (SQL, a variant)
    that is a JSON integer with no unit: no schema names its logical type (``semantic``) and
    the stream declares none (``unit`` None). Reading it in any one unit would be a guess that
    can be off by a factor of 1,000 and still look like a time."""
    from pyspark.sql import functions as F

    if unit is not None:
        return F.lit(None).cast("string")
    integer = F.expr(f"to_json({x}) RLIKE '{_INTEGER}' AND ({semantic}) IS NULL")
    return F.when(integer, F.concat(F.lit(f"{field} "), F.expr(f"to_json({x})"), F.lit(
        f" is an integer with no unit: no schema names it; declare {declare} ({', '.join(TIME_UNITS)})")))


def with_wall_clock(df, x: str, semantic: str, unit, out: str):
    """``df`` with column ``out``: the wall clock (TIMESTAMP_NTZ) the CDC time value ``x`` (SQL,
    a variant) stands for: a JSON integer in the unit its logical type ``semantic`` (SQL,
    :func:`semantic_type`) names, else in ``unit`` (``TIME_UNITS``; None: no integer is read,
    :func:`undeclared_unit`); an ISO-8601 string with
    ``T``: as written or, with an offset (``Z``, ``+08:00``), the instant as the session's
    (business) wall clock. NULL for anything else: other strings (the caller reads them as
    written), a time out of the years 1..9999, a fraction finer than microseconds. Computed in
    steps (projections Spark keeps apart), so each part is evaluated once a row and the
    generated code stays small."""
    from pyspark.sql import functions as F

    cases = " ".join(f"WHEN '{k}' THEN '{v}'" for k, v in _SEMANTIC_UNITS.items())
    default = "NULL" if unit is None else f"'{unit}'"
    parts = df.withColumn("__x", F.expr(x)).withColumn("__u", F.expr(f"CASE {semantic} {cases} ELSE {default} END"))
    parts = parts.withColumn("__j", F.expr("to_json(__x)"))
    parts = parts.withColumn("__n", F.expr(
        f"CASE WHEN __j RLIKE '{_INTEGER}' THEN try_variant_get(__x, '$', 'bigint') END")).withColumn(
        "__s", F.expr("CASE WHEN startswith(__j, '\"') THEN try_variant_get(__x, '$', 'string') END"))
    epoch = "timestamp_ntz'1970-01-01 00:00:00'"
    iso = "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}([.][0-9]{1,6}0{0,3})?"
    wall = f"""CASE
        WHEN __n IS NULL AND __s RLIKE '{iso}(Z|[+-][0-9]{{2}}:[0-9]{{2}})$'
            THEN cast(try_cast(__s as timestamp_ltz) as timestamp_ntz) -- ltz: an ntz cast drops the offset
        WHEN __n IS NULL AND __s RLIKE '{iso}$' THEN try_cast(__s as timestamp_ntz)
        WHEN __u = 'millis' AND __n BETWEEN {MS_MIN} AND {MS_MAX} THEN timestampadd(MILLISECOND, __n, {epoch})
        WHEN __u = 'micros' AND __n BETWEEN {MS_MIN * 1000} AND {MS_MAX * 1000}
            THEN timestampadd(MICROSECOND, __n, {epoch})
        WHEN __u = 'nanos' AND __n % 1000 = 0 THEN timestampadd(MICROSECOND, __n div 1000, {epoch})
        WHEN __u = 'seconds' AND __n BETWEEN {MS_MIN // 1000} AND {MS_MAX // 1000}
            THEN timestampadd(SECOND, __n, {epoch})
        WHEN __u = 'days' AND __n BETWEEN {_DAYS_MIN} AND {_DAYS_MAX}
            THEN cast(date_add(date'1970-01-01', cast(__n as int)) as timestamp_ntz)
    END"""
    return parts.withColumn(out, F.expr(wall)).drop("__x", "__u", "__j", "__n", "__s")
