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
  ``events_landed = applied + skipped + quarantined`` (``skipped``: CDC lines that are not
  data, or of tables the stream filters out).

``run_commit_union`` (:mod:`python_udfs.ingest.commit_union`) builds one commit stream out
of several landed ones. The schema and the parsing of the lines are in
:mod:`python_udfs.ingest.stream_lines`.

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

Formats
-------
``fmt`` (a declared stream's ``format``): ``lakerank``, the native lines above (nothing else
runs), or ``debezium-json``, ``canal-json``, ``maxwell-json``: each line a CDC message of the
source table, checked and exploded by :func:`python_udfs.ingest.cdc_formats.change_events` into
versions (insert, snapshot read: ``c`` with the new row; update: ``u`` with the new row;
delete: ``d`` with the old row; with a declared ``key``, a delete needs only the key's fields),
each row image typed as a native line would be, with
``op_ts`` (declared as a timestamp: required) the source's change time and a declared ``op``
(a string) the change kind; a delete on a stream without an ``op`` field is quarantined. Canal's
digit strings read as integers; a JSON integer for a timestamp (date) is epoch milliseconds
(days) of the wall clock. The table's ``_source_line`` of a CDC event is its position ``line *
2**SUB_BITS + index`` (unique, ordered), the quarantine's the physical line; ``events_landed``
counts events. docs/examples.md has the details.

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

from typing import Any, Dict, Mapping, Optional, Sequence

from python_udfs.ingest.cdc_formats import CdcOptions, cdc_options, physical_line
from python_udfs.ingest.landed_lines import numbered_lines, whole_files
from python_udfs.ingest.stream_lines import check_stream_format, normalise_fields, parse_stream_lines, table_ddl
from python_udfs.ingest.tables import (
    QUARANTINE_DDL,
    batch_counts,
    checkpoint_dir,
    commits_summary,
    ensure_tables,
    publish_partition,
    publish_quarantine_and_log,
    run_available_now,
    start_stream,
    stream_landing,
)
from python_udfs.jvm import kept, release

__all__ = [
    "run_declared_stream",
    "run_landing_ingest",
    "check_stream_format",
    "normalise_fields",
    "table_ddl",
    "INGEST_LOG_DDL",
]

INGEST_LOG_DDL = (
    "files BIGINT, events_landed BIGINT, applied BIGINT, quarantined BIGINT, "
    "_committed_at TIMESTAMP_NTZ, skipped BIGINT, _commit_id BIGINT"
)
_COUNTS = ("files", "events_landed", "applied", "skipped", "quarantined")
# --------------------------------------------------------------------------
# The job
# --------------------------------------------------------------------------

def run_declared_stream(spark, this, stream: Optional[Mapping[str, Any]]) -> str:
    """The ingest of model ``this`` (dbt's relation) for the stream its YAML declares in
    config ``stream``: ``folder`` (under ``$LAKERANK_HOME/landing/``), ``format`` (the landed
    lines' format, ``cdc_formats.FORMATS``; default ``lakerank``), ``delete_time`` (optional:
    the timestamp field a CDC delete sets to the change time), ``key`` (optional: the fields a
    CDC delete needs), ``change_time``, ``database_include``, ``table_include``
    (``cdc_formats.cdc_options``) and ``fields`` (a list of ``{name, type, required, formats,
    values, unit}``). Writes ``<model>``, ``<model>__quarantine``
    and ``<model>__ingest_log`` in the model's schema; checkpoint
    ``$LAKERANK_HOME/checkpoints/<model>`` (the shared target: under the warehouse). A stream
    is a YAML entry and a three-line model (``models/examples/stg_payments.py``)."""
    if not stream or not stream.get("folder") or not stream.get("fields"):
        raise ValueError(f"model {this.identifier}: config 'stream' must declare 'folder' and 'fields' "
                         f"(docs/examples.md), got {stream!r}")
    fmt = stream.get("format") or "lakerank"
    delete_time, key = stream.get("delete_time"), stream.get("key")
    try:
        spec = normalise_fields(stream["fields"])
        check_stream_format(fmt, spec, delete_time, key)
        cdc = cdc_options(stream.get("change_time"), stream.get("database_include"), stream.get("table_include"),
                          {f["name"]: f["unit"] for f in spec if f["unit"]})
    except ValueError as e:
        raise ValueError(f"model {this.identifier}: {e}") from None
    name = f"{this.schema}.{this.identifier}"
    return run_landing_ingest(
        spark,
        fields=stream["fields"],
        fmt=fmt,
        delete_time=delete_time,
        key=key,
        cdc=cdc,
        landing_dir=stream_landing(spark, stream["folder"]),
        checkpoint_dir=checkpoint_dir(spark, this.identifier),
        table=name,
        quarantine_table=f"{name}__quarantine",
        ingest_log_table=f"{name}__ingest_log",
    )


def run_landing_ingest(spark, *, fields: Sequence[Sequence[Any]], landing_dir: str,
                       checkpoint_dir: str, table: str, quarantine_table: str,
                       ingest_log_table: str, max_files_per_trigger: Optional[int] = None,
                       fmt: str = "lakerank", delete_time: Optional[str] = None,
                       key: Optional[Sequence[str]] = None, cdc: Optional[CdcOptions] = None) -> str:
    """Consume every JSON Lines file under ``landing_dir`` not consumed yet, exactly once
    (``trigger(availableNow=True)``, checkpoint in ``checkpoint_dir``); returns a one-line
    summary. Creates the three tables if missing (parquet, partitioned by ``_commit_id``)
    and the landing folder if missing. ``fmt``: the landed lines' format
    (``cdc_formats.FORMATS``; a CDC format's lines are read as row images, with ``cdc``);
    ``delete_time``: the timestamp field a CDC delete sets to the change time; ``key``: the
    fields a CDC delete needs. See the module doc."""
    from pyspark.sql import functions as F

    spec = normalise_fields(fields)
    check_stream_format(fmt, spec, delete_time, key)
    locations = ensure_tables(spark, table=(table, table_ddl(fields)), quarantine=(quarantine_table, QUARANTINE_DDL),
                              ingest_log=(ingest_log_table, INGEST_LOG_DDL))
    output = start_stream(spark, landing_dir, checkpoint_dir, max_files_per_trigger)
    stats_by_commit: Dict[int, Dict[str, int]] = {}

    def write_batch(lines_df, batch_id: int) -> None:
        commit_id = int(batch_id)
        lines = numbered_lines(lines_df, whole_files(spark, checkpoint_dir, commit_id))
        batch_df = kept(parse_stream_lines(lines, spec, fmt, delete_time, key, cdc))
        try:
            agg = batch_counts(batch_df)
            stats = {n: int(agg["events" if n == "applied" else n]) for n in _COUNTS}
            if stats["events_landed"] != stats["applied"] + stats["skipped"] + stats["quarantined"]:
                raise RuntimeError(
                    f"landing ingest {table} commit {commit_id}: counts do not reconcile: events_landed "
                    f"{stats['events_landed']} != applied {stats['applied']} + skipped {stats['skipped']} "
                    f"+ quarantined {stats['quarantined']}")
            # the quarantine's _source_line: the physical line (a CDC event's line is its position)
            lined = batch_df if fmt == "lakerank" else batch_df.withColumn("line", physical_line(F.col("line"), fmt))
            publish_quarantine_and_log(
                spark, lined, commit_id=commit_id, checkpoint_dir=checkpoint_dir, batch_us=agg["batch_us"],
                stats=stats, counts=_COUNTS,
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
    totals = {n: sum(s[n] for s in stats_by_commit.values()) for n in _COUNTS}
    return commits_summary(stats_by_commit, f"landed {totals['events_landed']}, applied {totals['applied']}, "
                                            f"quarantined {totals['quarantined']}"
                                            # native lines are never skipped: their summary keeps its shape
                                            + (f", skipped {totals['skipped']}" if fmt != "lakerank" else ""))
