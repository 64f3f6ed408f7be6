"""Generic exactly-once ingest of JSON Lines streams, and a multi-source commit union.

``run_landing_ingest`` is the stateless sibling of :mod:`python_udfs.ingest.contract_ingest`:
it consumes every file under ``$LAKERANK_HOME/landing/<stream>/`` that an earlier call
has not consumed yet (Structured Streaming, ``trigger(availableNow=True)``, checkpoint
in ``checkpoint_dir``), validates each line against a declared schema and writes, per
micro-batch (= commit ``_commit_id``, the streaming batch id), three tables:

* ``table``: one typed row per valid line (the declared fields, then ``_source_file``,
  ``_source_line``), sorted by file and line;
* ``quarantine_table``: every line that is not a valid event, with the reason and the
  raw line;
* ``ingest_log_table``: one row per commit with the counts, which reconcile:
  ``events_landed = applied + quarantined``.

``run_commit_union`` (:mod:`python_udfs.ingest.commit_union`) builds one commit stream out
of several landed ones.

Schema
------
``fields`` is a list of ``(name, spark_type, required)`` or
``(name, spark_type, required, options)``, or of mappings ``{name, type, required,
formats, values}`` (how a model's YAML declares them: ``run_declared_stream``):

* ``spark_type``: ``string``, ``bigint``/``long``, ``int``/``integer``, ``smallint``,
  ``tinyint``, ``decimal(p,s)``, ``double``, ``float``, ``boolean``, ``date``,
  ``timestamp``;
* ``required``: a missing (absent or JSON null) value quarantines the line
  (``missing <name>``); an optional missing value is NULL;
* ``options``: ``{"formats": [...]}`` date/timestamp patterns tried in order (default
  ``yyyy-MM-dd HH:mm:ss.SSS`` then ``yyyy-MM-dd HH:mm:ss`` for timestamps,
  ``yyyy-MM-dd`` for dates; timestamps are stored as TIMESTAMP_NTZ, the wall clock as written),
  ``{"values": [...]}`` the allowed values
  (after the cast).

Names are plain identifiers not starting with ``_`` (those are the ingest's own).
Fields not declared are ignored.

Typing (a value that does not type quarantines the line: ``bad <name> '<value>'``)

* integers: a JSON integer literal in the type's range (strings, decimals, booleans and
  ``1.0`` are rejected);
* ``decimal``/``double``/``float``: a JSON number or a string holding one (surrounding
  white space allowed); decimal literals and strings are read exactly (a number in
  exponent notation is a double in VARIANT) and rounded half-up to the scale, as Spark's
  cast; a value that does not fit is bad; ``NaN``/``Infinity`` strings are bad;
* ``string``: a JSON string (a number is not a string);
* ``boolean``: ``true``/``false``;
* ``date``/``timestamp``: a JSON string matching one of the formats as a whole.

Lines
-----
Lines are parsed with ``try_parse_json`` (VARIANT). The first failing check gives the
reason: ``invalid json`` (not JSON, duplicate keys, or text after the object), ``not a
json object``, then the fields in declared order. Blank lines are not events (skipped,
not counted); a leading byte-order mark is dropped; lines end at ``\\n``, ``\\r\\n`` or
``\\r``; ``_source_line`` is the 1-based physical line number and ``_source_file``
Spark's URI of the file. Files and folders whose name starts with ``.`` or ``_`` are
ignored (Spark's rule), sub-folders are read, a file is consumed once by path. A
missing or empty landing folder is an empty stream (the folder is created).

Crash safety
------------
As :mod:`python_udfs.ingest.contract_ingest`: a replayed batch has the same ``batch_id`` and
files, the output is a function of them, and each table's partition for a commit is
written into a fresh directory and published with one metastore call
(``python_udfs.jvm.point_partition``), so a replay replaces rather than appends and a
reader never sees half a partition. ``_quarantined_at``/``_committed_at`` are the batch timestamp of the
checkpoint's offset log (identical on a replay).
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Mapping, Optional, Sequence

from python_udfs.ingest.landed_lines import numbered_lines, trim_space, whole_files
from python_udfs.ingest.tables import (
    QUARANTINE_DDL,
    batch_counts,
    checked_lines,
    commits_summary,
    ensure_tables,
    landing_path,
    publish_partition,
    publish_quarantine_and_log,
    run_available_now,
    start_stream,
)
from python_udfs.ingest.wall_clock import parse_ntz
from python_udfs.jvm import kept, release

__all__ = [
    "run_declared_stream",
    "run_landing_ingest",
    "normalise_fields",
    "table_ddl",
    "INGEST_LOG_DDL",
]

INGEST_LOG_DDL = (
    "files BIGINT, events_landed BIGINT, applied BIGINT, quarantined BIGINT, "
    "_committed_at TIMESTAMP_NTZ, _commit_id BIGINT"
)

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
    """``[{"name", "type", "required", "formats", "values"}]``; ValueError on a bad spec."""
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
        unknown = set(options) - {"formats", "values"}
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
        out.append({
            "name": name,
            "type": spark_type,
            "required": required,
            "formats": formats or _DEFAULT_FORMATS.get(spark_type, []),
            "values": list(options["values"]) if options.get("values") is not None else None,
        })
    if not out:
        raise ValueError("at least one field must be declared")
    return out


def _field_tuple(spec: Mapping[str, Any]) -> tuple:
    """``(name, type, required, options)`` of a YAML field mapping."""
    unknown = set(spec) - {"name", "type", "required", "formats", "values"}
    if unknown or "name" not in spec or "type" not in spec:
        raise ValueError(f"field {dict(spec)!r}: expected keys name, type[, required, formats, values]")
    options = {k: spec[k] for k in ("formats", "values") if spec.get(k) is not None}
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

def _parse_lines(lines, fields: List[Dict[str, Any]]):
    """``lines`` (``landed_lines.numbered_lines``) as one row per file (``kind`` 'file',
    ``n_events`` = its non-blank lines) and one per non-blank line (``kind`` 'E' for a valid
    event with typed ``__f_<name>`` columns, 'quarantined' with a ``reason`` otherwise), with
    the batch timestamp ``batch_us``."""
    from pyspark.sql import functions as F

    lines = lines.withColumn("v", F.expr("try_parse_json(text)"))

    def jtype(name):  # NULL if absent, 'VOID' if JSON null
        return F.expr(f"schema_of_variant(variant_get(v, '$.{name}'))")

    def jstr(name):  # a string's content, or the JSON text of another value
        return F.expr(f"try_variant_get(v, '$.{name}', 'string')")

    def typed(f):
        name, t = f["name"], f["type"]
        if t in _INTEGERS.values():
            value = F.when(jtype(name).isin("TINYINT", "SMALLINT", "INT", "BIGINT"),
                           F.expr(f"try_variant_get(v, '$.{name}', '{t}')"))
        elif t.startswith("decimal") or t in ("double", "float"):
            number = jtype(name).startswith("DECIMAL") | jtype(name).isin(
                "TINYINT", "SMALLINT", "INT", "BIGINT", "DOUBLE", "FLOAT", "STRING")
            value = F.when(number, trim_space(jstr(name)).try_cast(t))
            if t in ("double", "float"):  # a string such as 'NaN' or 'Infinity' is not a number here
                value = F.when(~F.isnan(value) & (F.abs(value) != F.lit(float("inf"))), value)
        elif t == "string":
            value = F.when(jtype(name) == "STRING", jstr(name))
        elif t == "boolean":
            value = F.when(jtype(name) == "BOOLEAN", F.expr(f"try_variant_get(v, '$.{name}', 'boolean')"))
        else:  # date, timestamp
            if t == "timestamp":  # wall clock as written, zone-free (wall_clock.parse_ntz)
                parsed = parse_ntz(jstr(name), *f["formats"])
            else:
                parsed = F.coalesce(*[F.to_date(F.try_to_timestamp(jstr(name), F.lit(fmt))) for fmt in f["formats"]])
            value = F.when(jtype(name) == "STRING", parsed)
        if f["values"] is not None:
            value = F.when(value.isin(*f["values"]), value)
        return value

    def present(name):
        return jtype(name).isNotNull() & (jtype(name) != "VOID")

    trimmed = trim_space(F.col("text"))
    reason = (
        F.when(F.col("v").isNull(), F.lit("invalid json"))
        .when(~F.expr("schema_of_variant(v)").startswith("OBJECT"), F.lit("not a json object"))
        .when(~trimmed.endswith("}"), F.lit("invalid json"))  # trailing text after the object
    )
    values = {}
    for f in fields:
        name = f["name"]
        values[name] = typed(f)
        if f["required"]:
            reason = reason.when(~present(name), F.lit(f"missing {name}"))
        reason = reason.when(present(name) & values[name].isNull(), F.concat(
            F.lit(f"bad {name} '"), F.substring(jstr(name), 1, 200), F.lit("'")))

    return checked_lines(lines, reason, [
        ("__f_" + f["name"], values[f["name"]].cast(_STORED_TYPE.get(f["type"], f["type"]))) for f in fields])


# --------------------------------------------------------------------------
# The job
# --------------------------------------------------------------------------

def run_declared_stream(spark, this, stream: Optional[Mapping[str, Any]]) -> str:
    """The ingest of model ``this`` (dbt's relation) for the stream its YAML declares in
    config ``stream``: ``folder`` (under ``$LAKERANK_HOME/landing/``) and ``fields`` (a list of
    ``{name, type, required, formats, values}``). Writes ``<model>``, ``<model>__quarantine``
    and ``<model>__ingest_log`` in the model's schema; checkpoint
    ``$LAKERANK_HOME/checkpoints/<model>``. A stream is a YAML entry and a three-line model
    (``models/examples/stg_payments.py``)."""
    if not stream or not stream.get("folder") or not stream.get("fields"):
        raise ValueError(f"model {this.identifier}: config 'stream' must declare 'folder' and 'fields' "
                         f"(docs/examples.md), got {stream!r}")
    home = spark.conf.get("spark.lakerank.home")
    name = f"{this.schema}.{this.identifier}"
    return run_landing_ingest(
        spark,
        fields=stream["fields"],
        landing_dir=landing_path(home, stream["folder"]),
        checkpoint_dir=f"{home}/checkpoints/{this.identifier}",
        table=name,
        quarantine_table=f"{name}__quarantine",
        ingest_log_table=f"{name}__ingest_log",
    )


def run_landing_ingest(spark, *, fields: Sequence[Sequence[Any]], landing_dir: str,
                       checkpoint_dir: str, table: str, quarantine_table: str,
                       ingest_log_table: str, max_files_per_trigger: Optional[int] = None) -> str:
    """Consume every JSON Lines file under ``landing_dir`` not consumed yet, exactly once
    (``trigger(availableNow=True)``, checkpoint in ``checkpoint_dir``); returns a one-line
    summary. Creates the three tables if missing (parquet, partitioned by ``_commit_id``)
    and the landing folder if missing. See the module doc."""
    from pyspark.sql import functions as F

    spec = normalise_fields(fields)
    locations = ensure_tables(spark, table=(table, table_ddl(fields)), quarantine=(quarantine_table, QUARANTINE_DDL),
                              ingest_log=(ingest_log_table, INGEST_LOG_DDL))
    output = start_stream(spark, landing_dir, checkpoint_dir, max_files_per_trigger)
    stats_by_commit: Dict[int, Dict[str, int]] = {}

    def write_batch(lines_df, batch_id: int) -> None:
        commit_id = int(batch_id)
        batch_df = kept(_parse_lines(numbered_lines(lines_df, whole_files(spark, checkpoint_dir, commit_id)), spec))
        try:
            agg = batch_counts(batch_df)
            stats = {"files": int(agg["files"]), "events_landed": int(agg["events_landed"]),
                     "applied": int(agg["events"]), "quarantined": int(agg["quarantined"])}
            if stats["events_landed"] != stats["applied"] + stats["quarantined"]:
                raise RuntimeError(
                    f"landing ingest {table} commit {commit_id}: counts do not reconcile: events_landed "
                    f"{stats['events_landed']} != applied {stats['applied']} + quarantined {stats['quarantined']}")
            publish_quarantine_and_log(
                spark, batch_df, commit_id=commit_id, checkpoint_dir=checkpoint_dir, batch_us=agg["batch_us"],
                stats=stats, counts=("files", "events_landed", "applied", "quarantined"),
                quarantine=(quarantine_table, locations["quarantine"]),
                ingest_log=(ingest_log_table, locations["ingest_log"]))

            if stats["applied"]:
                rows = (
                    batch_df.where(F.col("kind") == "E")
                    .select(
                        *[F.col("__f_" + f["name"]).alias(f["name"]) for f in spec],
                        F.col("file").alias("_source_file"),
                        F.col("line").alias("_source_line"),
                    )
                    .repartition(1)
                    .sortWithinPartitions("_source_file", "_source_line")
                )
                publish_partition(spark, table, locations["table"], commit_id, rows)
            stats_by_commit[commit_id] = stats
        finally:
            release(batch_df)

    run_available_now(spark, output, write_batch, checkpoint_dir)
    totals = {n: sum(s[n] for s in stats_by_commit.values()) for n in ("events_landed", "applied", "quarantined")}
    return commits_summary(stats_by_commit, f"landed {totals['events_landed']}, applied {totals['applied']}, "
                                            f"quarantined {totals['quarantined']}")
