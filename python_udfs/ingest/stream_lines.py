"""A declared stream's lines (:mod:`python_udfs.ingest.landing_ingest`): the schema of its
fields, and each landed line (or, in a CDC format, each change event) parsed and typed against
it, with its quarantine reason. The rules are in the module doc of ``landing_ingest`` and in
docs/examples.md."""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Sequence

from python_udfs.ingest.cdc_formats import CdcOptions, change_events, check_format
from python_udfs.ingest.cdc_times import TIME_UNITS, semantic_type, undeclared_unit, with_wall_clock
from python_udfs.ingest.landed_lines import trim_space
from python_udfs.ingest.tables import checked_lines
from python_udfs.ingest.wall_clock import parse_ntz

__all__ = ["check_stream_format", "normalise_fields", "parse_stream_lines", "table_ddl"]

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_INTEGERS = {"tinyint": "tinyint", "smallint": "smallint", "int": "int", "integer": "int",
             "bigint": "bigint", "long": "bigint"}
_SIMPLE = {"string", "double", "float", "boolean", "date", "timestamp"}
_DECIMAL = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")
_DEFAULT_FORMATS = {
    "timestamp": ["yyyy-MM-dd HH:mm:ss.SSS", "yyyy-MM-dd HH:mm:ss"],
    "date": ["yyyy-MM-dd"],
}


# --------------------------------------------------------------------------
# Schema
# --------------------------------------------------------------------------

def normalise_fields(fields: Sequence[Sequence[Any]]) -> List[Dict[str, Any]]:
    """``[{"name", "type", "required", "formats", "values", "unit"}]``; ValueError on a bad spec."""
    out: List[Dict[str, Any]] = []
    seen = set()
    for spec in fields:
        if isinstance(spec, Mapping):
            spec = _field_tuple(spec)
        if len(spec) not in (3, 4):
            raise ValueError(f"field spec {spec!r}: expected (name, spark_type, required[, options])")
        name, spark_type, required = spec[0], str(spec[1]).strip().lower(), bool(spec[2])
        options = dict(spec[3]) if len(spec) == 4 and spec[3] else {}
        if not isinstance(name, str) or not _NAME.match(name):
            raise ValueError(f"field name {name!r}: a plain identifier not starting with '_' is required")
        if name.lower() in seen:
            raise ValueError(f"field {name!r} is declared twice")
        seen.add(name.lower())
        unknown = set(options) - {"formats", "values", "unit"}
        if unknown:
            raise ValueError(f"field {name!r}: unknown options {sorted(unknown)}")
        if spark_type in _INTEGERS:
            spark_type = _INTEGERS[spark_type]
        elif _DECIMAL.match(spark_type):
            p, s = (int(x) for x in _DECIMAL.match(spark_type).groups())
            if not (0 < p <= 38 and 0 <= s <= p):
                raise ValueError(f"field {name!r}: bad decimal type {spark_type!r}")
            spark_type = f"decimal({p},{s})"
        elif spark_type not in _SIMPLE:
            raise ValueError(f"field {name!r}: unsupported type {spark_type!r}")
        formats = options.get("formats")
        if formats is not None:
            if spark_type not in _DEFAULT_FORMATS:
                raise ValueError(f"field {name!r}: 'formats' applies to date and timestamp fields only")
            formats = [formats] if isinstance(formats, str) else list(formats)
        unit = options.get("unit")
        if unit is not None and (spark_type not in _DEFAULT_FORMATS or unit not in TIME_UNITS):
            raise ValueError(f"field {name!r}: 'unit' applies to date and timestamp fields, one of "
                             f"{', '.join(TIME_UNITS)}; got {unit!r}")
        out.append({
            "name": name,
            "type": spark_type,
            "required": required,
            "formats": formats or _DEFAULT_FORMATS.get(spark_type, []),
            "values": list(options["values"]) if options.get("values") is not None else None,
            "unit": unit,
        })
    if not out:
        raise ValueError("at least one field must be declared")
    return out


def _field_tuple(spec: Mapping[str, Any]) -> tuple:
    """``(name, type, required, options)`` of a YAML field mapping."""
    unknown = set(spec) - {"name", "type", "required", "formats", "values", "unit"}
    if unknown or "name" not in spec or "type" not in spec:
        raise ValueError(f"field {dict(spec)!r}: expected keys name, type[, required, formats, values, unit]")
    options = {k: spec[k] for k in ("formats", "values", "unit") if spec.get(k) is not None}
    return spec["name"], spec["type"], bool(spec.get("required", False)), options


# A declared `timestamp` is a wall-clock business time: stored as TIMESTAMP_NTZ so it reads
# back exactly as landed in any zone (see wall_clock.parse_ntz).
_STORED_TYPE = {"timestamp": "timestamp_ntz"}


def table_ddl(fields: Sequence[Sequence[Any]]) -> str:
    """DDL of the ingest's table for ``fields`` (the declared fields, then lineage)."""
    cols = [f"{f['name']} {_STORED_TYPE.get(f['type'], f['type']).upper()}" for f in normalise_fields(fields)]
    return ", ".join(cols + ["_source_file STRING", "_source_line BIGINT", "_commit_id BIGINT"])


# --------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------

def check_stream_format(fmt, fields: List[Dict[str, Any]], delete_time: Optional[str] = None,
                        key: Optional[Sequence[str]] = None) -> str:
    """``fmt`` if it is a format (``cdc_formats.FORMATS``) the normalised ``fields`` can take,
    else a ValueError: a CDC format sets ``op_ts`` (declared as a timestamp) and, when the
    stream declares it, ``op`` (a string); ``delete_time``, if given, names a declared
    timestamp field (a CDC delete sets it to the change time); ``key``, if given, is a list of
    declared fields (all a CDC delete needs)."""
    check_format(fmt, "stream format")
    types = {f["name"]: f["type"] for f in fields}
    if delete_time is not None and types.get(delete_time) != "timestamp":
        raise ValueError(f"delete_time {delete_time!r} must name a declared field of type timestamp")
    if key is not None and (isinstance(key, str) or not key or any(k not in types for k in key)):
        raise ValueError(f"key {key!r} must be a list of declared fields")
    if fmt != "lakerank":
        if types.get("op_ts") != "timestamp":
            raise ValueError(f"format {fmt} sets op_ts, the source's change time: the stream must declare "
                             f"{{name: op_ts, type: timestamp}}")
        if types.get("op", "string") != "string":
            raise ValueError(f"format {fmt} sets op (c, u or d): a declared op must be of type string")
    return fmt


def _change_columns(fmt: str):
    """The columns a CDC line's events carry into the typing (``cdc_formats.change_events``):
    ``v`` the row image, ``change`` its kind (c, u, d), ``change_ts`` the source's change time
    as the business wall clock, ``types`` the row's field schemas (a Debezium schema wrapper's),
    ``origin`` (``<format> <image>``) and ``bad``."""
    from pyspark.sql import functions as F

    def columns(e, ts_ms, bad):
        return [("v", e.row), ("change", e.op), ("change_ts", F.timestamp_millis(ts_ms).cast("timestamp_ntz")),
                ("types", e.types), ("origin", F.concat(F.lit(f"{fmt} "), e.image)), ("bad", bad)]

    return columns


_INTEGER_JSON = ("TINYINT", "SMALLINT", "INT", "BIGINT")


def _jtype(name):  # NULL if absent, 'VOID' if JSON null
    from pyspark.sql import functions as F

    return F.expr(f"schema_of_variant(variant_get(v, '$.{name}'))")


def _jstr(name):  # a string's content, or the JSON text of another value
    from pyspark.sql import functions as F

    return F.expr(f"try_variant_get(v, '$.{name}', 'string')")


def _typed(f: Dict[str, Any], fmt: str, delete_time: Optional[str]):
    """The typed value (a Column, NULL when it does not type) of declared field ``f`` of a
    line's ``v`` (a CDC event's row image, with ``change``, ``change_ts`` and ``types``)."""
    from pyspark.sql import functions as F

    cdc = fmt != "lakerank"
    name, t = f["name"], f["type"]
    jtype, jstr = _jtype, _jstr
    if cdc and name == "op_ts":
        return F.col("change_ts")
    if cdc and name == "op":
        value = F.col("change")
    elif t in _INTEGERS.values():
        value = F.when(jtype(name).isin(*_INTEGER_JSON), F.expr(f"try_variant_get(v, '$.{name}', '{t}')"))
        if fmt == "canal-json":  # Canal writes every value as a string: "1001" is 1001
            value = value.when((jtype(name) == "STRING") & jstr(name).rlike("^-?[0-9]+$"), jstr(name).try_cast(t))
    elif t.startswith("decimal") or t in ("double", "float"):
        number = jtype(name).startswith("DECIMAL") | jtype(name).isin(*_INTEGER_JSON, "DOUBLE", "FLOAT", "STRING")
        value = F.when(number, trim_space(jstr(name)).try_cast(t))
        if t in ("double", "float"):  # a string such as 'NaN' or 'Infinity' is not a number here
            value = F.when(~F.isnan(value) & (F.abs(value) != F.lit(float("inf"))), value)
    elif t == "string":
        value = F.when(jtype(name) == "STRING", jstr(name))
    elif t == "boolean":
        value = F.when(jtype(name) == "BOOLEAN", F.expr(f"try_variant_get(v, '$.{name}', 'boolean')"))
    else:  # date, timestamp
        text, accepted = jstr(name), jtype(name) == "STRING"
        if cdc:  # an integer or ISO-8601 time is the text it stands for (cdc_times.with_wall_clock)
            text, accepted = F.coalesce(_cdc_time_text(f), text), accepted | jtype(name).isin(*_INTEGER_JSON)
        if t == "timestamp":  # wall clock as written, zone-free (wall_clock.parse_ntz)
            parsed = parse_ntz(text, *f["formats"])
        else:
            parsed = F.coalesce(*[F.to_date(F.try_to_timestamp(text, F.lit(p))) for p in f["formats"]])
        value = F.when(accepted, parsed)
    if f["values"] is not None:
        value = F.when(value.isin(*f["values"]), value)
    if cdc and name == delete_time:  # a delete took effect when it happened
        value = F.when(F.col("change") == "d", F.col("change_ts")).otherwise(value)
    return value


def parse_stream_lines(lines, fields: List[Dict[str, Any]], fmt: str = "lakerank",
                       delete_time: Optional[str] = None, key: Optional[Sequence[str]] = None,
                       cdc_options: Optional[CdcOptions] = None):
    """``lines`` (``landed_lines.numbered_lines``) as one row per file (``kind`` 'file',
    ``n_events`` = its non-blank lines, or the events a CDC format's lines became) and one per
    non-blank line or event (``kind`` 'E' for a valid event with typed ``__f_<name>`` columns,
    'skipped' for a CDC line that is not data or of another table, 'quarantined' with a
    ``reason`` otherwise), with the batch timestamp ``batch_us``. A CDC format ``fmt`` (read
    with ``cdc_options``): each event's row image is typed as a native line would be, with
    ``op_ts`` and ``op`` set from the envelope, a delete's ``delete_time`` field set to the
    change time and, when the stream declares a ``key``, a delete needing only the key's
    fields (docs/examples.md)."""
    from pyspark.sql import functions as F

    cdc = fmt != "lakerank"
    if cdc:
        lines = change_events(lines, fmt, _change_columns(fmt), versions=True, opts=cdc_options)
        for f in fields:  # each time field's wall clock (_cdc_time_text)
            if f["type"] in _DEFAULT_FORMATS:
                lines = with_wall_clock(lines, f"variant_get(v, '$.{f['name']}')", semantic_type("types", f["name"]),
                                        _unit(f), f"__wall_{f['name']}")
    else:
        lines = lines.withColumn("v", F.expr("try_parse_json(text)"))

    def present(name):
        return _jtype(name).isNotNull() & (_jtype(name) != "VOID")

    if cdc:  # the envelope and the row were checked (bad); a delete needs an op field
        names = {f["name"] for f in fields}
        reason = F.when(F.lit("op" not in names) & (F.col("change") == "d"),
                        F.lit("delete on a stream without an op field"))
    else:
        trimmed = trim_space(F.col("text"))
        reason = (
            F.when(F.col("v").isNull(), F.lit("invalid json"))
            .when(~F.expr("schema_of_variant(v)").startswith("OBJECT"), F.lit("not a json object"))
            .when(~trimmed.endswith("}"), F.lit("invalid json"))  # trailing text after the object
        )
    values = {}
    delete = F.col("change") == "d"
    for f in fields:
        name = f["name"]
        values[name] = _typed(f, fmt, delete_time)
        if cdc and name in ("op", "op_ts"):  # set from the envelope: never missing
            reason = reason.when(values[name].isNull(), F.concat(F.lit(f"bad {name} '"), F.col("change"), F.lit("'")))
            continue
        # the image's value is checked, except a delete's delete_time (set from the change time:
        # the before image need not carry it)
        checked = ~delete if cdc and name == delete_time else F.lit(True)
        # a delete's before image may hold only the key (Postgres' default replica identity)
        needed = ~delete if cdc and key is not None and name not in key else F.lit(True)
        if f["required"]:
            reason = reason.when(checked & needed & ~present(name), F.lit(f"missing {name}"))
        if cdc and f["type"] in _DEFAULT_FORMATS:
            unitless = undeclared_unit(f"variant_get(v, '$.{name}')", semantic_type("types", name), _unit(f), name,
                                       f"its unit on field {name} (unit:)")
            reason = reason.when(checked & unitless.isNotNull(), unitless)
        reason = reason.when(checked & present(name) & values[name].isNull(), F.concat(
            F.lit(f"bad {name} '"), F.substring(_jstr(name), 1, 200), F.lit("'")))
    if cdc:
        reason = F.coalesce(F.col("bad"), F.concat(F.col("origin"), F.lit(": "), reason))

    return checked_lines(lines, reason, [
        ("__f_" + f["name"], values[f["name"]].cast(_STORED_TYPE.get(f["type"], f["type"]))) for f in fields])


def _unit(f: Dict[str, Any]) -> Optional[str]:
    """The unit of a CDC time field's JSON integers when no schema names it: the declared
    ``unit``; a ``date`` is in days (Debezium's and Kafka Connect's Date); an undeclared
    ``timestamp`` has none (its integers are quarantined, never read in a guessed unit)."""
    return f["unit"] or ("days" if f["type"] == "date" else None)


def _cdc_time_text(f: Dict[str, Any]):
    """The text a CDC time value of a ``timestamp`` or ``date`` field stands for (its wall
    clock ``__wall_<name>``, ``cdc_times.with_wall_clock``: the unit from the Debezium schema
    wrapper, else the field's unit (:func:`_unit`)):
    ``yyyy-MM-dd HH:mm:ss`` (``.SSS`` or ``.SSSSSS`` when it has a fraction) or, at midnight,
    ``yyyy-MM-dd`` for a date; NULL when it is not such a value (a string is then read as
    written)."""
    from pyspark.sql import functions as F

    wall = F.col(f"__wall_{f['name']}")
    fraction = F.date_format(wall, "SSSSSS")
    text = (F.when(fraction == "000000", F.date_format(wall, "yyyy-MM-dd HH:mm:ss"))
            .when(fraction.endswith("000"), F.date_format(wall, "yyyy-MM-dd HH:mm:ss.SSS"))
            .otherwise(F.date_format(wall, "yyyy-MM-dd HH:mm:ss.SSSSSS")))
    if f["type"] == "date":
        midnight = F.date_format(wall, "HH:mm:ss.SSSSSS") == "00:00:00.000000"
        return F.when(midnight, F.date_format(wall, "yyyy-MM-dd")).otherwise(text)
    return text
