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

``run_commit_union`` builds one commit stream out of several: each call reads the
pending commits of every source (per-source watermarks), normalises them to one schema
and publishes them as the next commit of its own table. See its docstring.

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
  ``yyyy-MM-dd`` for dates; timestamps are stored as TIMESTAMP_NTZ, the wall clock as written), ``{"values": [...]}`` the allowed values
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

from python_udfs.ingest.contract_ingest import (
    _ensure_table,
    _mkdirs,
    rename_relanded,
    parse_ntz,
    _publish_partition,
    _quote_name,
    landing_path,
    publish_quarantine_and_log,
)
from python_udfs.jvm import kept, partition_values, release, split_table_name
from python_udfs.ingest.landed_lines import line_stream, numbered_lines, trim_space, whole_files

__all__ = [
    "run_declared_stream",
    "run_landing_ingest",
    "run_commit_union",
    "landing_path",
    "normalise_fields",
    "table_ddl",
    "QUARANTINE_DDL",
    "INGEST_LOG_DDL",
]

QUARANTINE_DDL = (
    "reason STRING, raw_line STRING, _source_file STRING, _source_line BIGINT, "
    "_quarantined_at TIMESTAMP_NTZ, _commit_id BIGINT"
)
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
# back exactly as landed in any zone (see contract_ingest.parse_ntz).
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
            if t == "timestamp":  # wall clock as written, zone-free (contract_ingest.parse_ntz)
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

    marker = F.col("line") == 0
    checked = lines.withColumn("reason", F.when(~marker, reason))
    valid = ~marker & F.col("reason").isNull()
    return checked.select(
        F.when(marker, F.lit("file")).when(valid, F.lit("E")).otherwise(F.lit("quarantined")).alias("kind"),
        "file",
        "line",
        "n_events",
        "reason",
        F.when(~marker & ~valid, F.col("text")).alias("raw"),
        *[F.when(valid, values[f["name"]]).cast(_STORED_TYPE.get(f["type"], f["type"])).alias("__f_" + f["name"]) for f in fields],
        "batch_us",
    )


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
    locations = {
        "table": _ensure_table(spark, table, table_ddl(fields)),
        "quarantine": _ensure_table(spark, quarantine_table, QUARANTINE_DDL),
        "ingest_log": _ensure_table(spark, ingest_log_table, INGEST_LOG_DDL),
    }
    _mkdirs(spark, landing_dir)
    rename_relanded(landing_dir, checkpoint_dir)
    output = line_stream(spark, landing_dir, max_files_per_trigger)
    stats_by_commit: Dict[int, Dict[str, int]] = {}

    def write_batch(lines_df, batch_id: int) -> None:
        commit_id = int(batch_id)
        batch_df = kept(_parse_lines(numbered_lines(lines_df, whole_files(spark, checkpoint_dir, int(batch_id))), spec))
        try:
            kind = F.col("kind")
            agg = batch_df.agg(
                F.count(F.when(kind == "file", 1)).alias("files"),
                F.coalesce(F.sum(F.when(kind == "file", F.col("n_events"))), F.lit(0)).alias("events_landed"),
                F.count(F.when(kind == "E", 1)).alias("applied"),
                F.count(F.when(kind == "quarantined", 1)).alias("quarantined"),
                F.max("batch_us").alias("batch_us"),
            ).collect()[0]
            stats = {n: int(agg[n]) for n in ("files", "events_landed", "applied", "quarantined")}
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
                    batch_df.where(kind == "E")
                    .select(
                        *[F.col("__f_" + f["name"]).alias(f["name"]) for f in spec],
                        F.col("file").alias("_source_file"),
                        F.col("line").alias("_source_line"),
                    )
                    .repartition(1)
                    .sortWithinPartitions("_source_file", "_source_line")
                )
                _publish_partition(spark, table, locations["table"], commit_id, rows)
            stats_by_commit[commit_id] = stats
        finally:
            release(batch_df)

    _mkdirs(spark, checkpoint_dir)
    query = (
        output.writeStream.foreachBatch(write_batch)
        .option("checkpointLocation", checkpoint_dir)
        .outputMode("append")
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()
    commits = sorted(stats_by_commit)
    totals = {n: sum(s[n] for s in stats_by_commit.values())
              for n in ("events_landed", "applied", "quarantined")}
    counts = (f"landed {totals['events_landed']}, applied {totals['applied']}, "
              f"quarantined {totals['quarantined']}")
    if not commits:
        return f"no new commits: {counts}"
    if len(commits) == 1:
        return f"commit {commits[0]}: {counts}"
    return f"commits {commits[0]}..{commits[-1]}: {counts}"


# --------------------------------------------------------------------------
# Multi-source commits
# --------------------------------------------------------------------------

WATERMARK_PREFIX = "lakerank.source."


def _properties(spark, table: str) -> Dict[str, str]:
    return {r[0]: r[1] for r in spark.sql(f"SHOW TBLPROPERTIES {_quote_name(table)}").collect()}


def _table_exists(spark, table: str) -> bool:
    return spark.catalog.tableExists(table)


def run_commit_union(spark, *, table: str, ddl: str, sources: Sequence[Dict[str, str]],
                     reset: bool = False) -> str:
    """Publish the pending commits of several commit sources as ONE new commit of ``table``.

    ``sources``: dicts with ``name`` (the watermark's name), ``head_table`` and
    ``head_property`` (the source's head, its last committed commit: the table property
    ``lakerank.commit_id`` of a stream ingest or ``swap_partitions`` model,
    ``lakerank.snapshot_id`` of a pk_table), ``rows_table`` (the rows, with
    ``_commit_id``; default ``head_table``; a pk_table's ``<model>__audit_log``) and
    ``select`` (a SELECT over ``{rows}``, the source's rows in its window, returning any
    subset of ``ddl``'s columns; the others are NULL). A missing table or property is
    an empty source.

    Per call: the window of each source is ``(watermark, head]``, the watermark being
    this table's property ``lakerank.source.<name>``; if any window is non-empty, the
    union of their rows becomes partition ``_commit_id = n`` (``n`` = this table's
    ``lakerank.commit_id`` + 1), written into a fresh directory and published with one
    metastore call, and then ONE ``ALTER TABLE ... SET TBLPROPERTIES`` records ``n`` and
    every source's new watermark together. A call killed before that statement left at
    most an unrecorded partition ``n``: the next call drops it and recomputes it from
    the same (or wider) windows, so every source commit lands in exactly one recorded
    commit of ``table``. Readers of ``table`` read only up to its recorded head.

    A source whose head is below this table's watermark for it was rebuilt (its commit
    ids restarted): the call fails rather than skip or re-read commits. ``reset`` (a
    ``--full-refresh``) drops ``table`` first and re-reads every source from the start;
    its consumers must then be rebuilt too (their watermarks refer to the old commits).
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import _parse_datatype_string

    qname = _quote_name(table)
    if reset:
        spark.sql(f"DROP TABLE IF EXISTS {qname}")
    location = _ensure_table(spark, table, ddl)
    props = _properties(spark, table)
    head = int(props.get("lakerank.commit_id", "-1"))
    # A partition beyond the recorded head is a dead attempt's: never read, drop it.
    for value in partition_values(spark, *split_table_name(spark, table), "_commit_id"):
        commit = int(value)
        if commit > head:
            spark.sql(f"ALTER TABLE {qname} DROP IF EXISTS PARTITION (_commit_id = {commit})")

    schema = [f for f in _parse_datatype_string(ddl).fields if f.name != "_commit_id"]
    windows = []
    for source in sources:
        name = source["name"]
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
            raise ValueError(f"commit source name {name!r} must be an identifier")
        rows_table = source.get("rows_table") or source["head_table"]
        source_head = -1
        if _table_exists(spark, source["head_table"]) and _table_exists(spark, rows_table):
            source_head = int(_properties(spark, source["head_table"]).get(source["head_property"], "-1"))
        mark = int(props.get(WATERMARK_PREFIX + name, "-1"))
        if source_head < mark:
            raise RuntimeError(
                f"commit source {name} ({source['head_table']}) is at commit {source_head} but {table} "
                f"already consumed it up to {mark}: the source was rebuilt. Rebuild {table} and its "
                "consumers too (dbt build --full-refresh on them).")
        windows.append((name, rows_table, source["select"], mark, source_head))
    pending = [w for w in windows if w[4] > w[3]]
    if not pending:
        return f"no pending commits (head {head})"

    commit_id = head + 1
    frames = []
    for name, rows_table, select_sql, mark, source_head in pending:
        view = f"__lr_union_{name}"
        spark.sql(
            f"CREATE OR REPLACE TEMPORARY VIEW {view} AS SELECT * FROM {_quote_name(rows_table)} "
            f"WHERE _commit_id > {mark} AND _commit_id <= {source_head}")
        df = spark.sql(select_sql.format(rows=view))
        have = set(df.columns)
        frames.append(df.select(*[
            (F.col(f.name) if f.name in have else F.lit(None)).cast(f.dataType).alias(f.name)
            for f in schema]))
    union = frames[0]
    for df in frames[1:]:
        union = union.unionByName(df)
    _publish_partition(spark, table, location, commit_id, union.repartition(1))
    marks = [("lakerank.commit_id", commit_id)] + [(WATERMARK_PREFIX + w[0], w[4]) for w in pending]
    spark.sql(f"ALTER TABLE {qname} SET TBLPROPERTIES ("
              + ", ".join(f"'{k}' = '{v}'" for k, v in marks) + ")")
    return f"commit {commit_id}: " + ", ".join(f"{w[0]} ({w[3]}, {w[4]}]" for w in pending)
