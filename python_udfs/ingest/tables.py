"""What both ingests share: their tables and commits, the landing and checkpoint folders,
and the streaming run.

Each table is parquet, partitioned by ``_commit_id``; a commit's partition is staged, swapped
and finished by the commit protocol (:mod:`python_udfs.commit.protocol`): written into a fresh
directory ``<table>/_v/i<id>_<uuid>`` and published with one metastore call, so a replayed
batch replaces rather than appends and a reader never sees half a partition.
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any, Callable, Dict, List, Optional, Sequence
from urllib.parse import unquote, urlparse

from python_udfs import progress
from python_udfs.commit import protocol
from python_udfs.faults import inject_full_disk
from python_udfs.ingest.landed_lines import line_stream
from python_udfs.jvm import (
    external_catalog,
    jvm_class,
    split_table_name,
)

__all__ = [
    "QUARANTINE_DDL",
    "batch_counts",
    "checked_lines",
    "commits_summary",
    "ensure_table",
    "ensure_tables",
    "checkpoint_dir",
    "landing_path",
    "stream_landing",
    "mkdirs",
    "publish_partition",
    "publish_quarantine_and_log",
    "quote_name",
    "rename_relanded",
    "run_available_now",
    "start_stream",
]

QUARANTINE_DDL = (
    "reason STRING, raw_line STRING, _source_file STRING, _source_line BIGINT, "
    "_quarantined_at TIMESTAMP_NTZ, _commit_id BIGINT"
)


def landing_path(home: str, stream: str = "contracts") -> str:
    """``<home>/landing/<stream>``: where a stream's JSON Lines files land."""
    return os.path.join(home, "landing", stream)


def stream_landing(spark, stream: str) -> str:
    """Where ``stream``'s files land for ``spark``: ``<spark.lakerank.landing>/<stream>``
    when the session has a landing zone of its own (the shared target's ``LAKERANK_LANDING``,
    which may be ``s3a://``: docs/deployment.md), else the home's (:func:`landing_path`)."""
    root = (spark.conf.get("spark.lakerank.landing", None) or "").strip()
    if root:
        return f"{root.rstrip('/')}/{stream}"
    return landing_path(spark.conf.get("spark.lakerank.home"), stream)


def checkpoint_dir(spark, name: str) -> str:
    """Where stream ``name``'s checkpoint (what it consumed) lives: ``<spark.lakerank.checkpoints>/
    <name>`` when set; on the shared catalog (a metastore service) beside its tables,
    ``<warehouse>/_lakerank/checkpoints/<name>``, so that every builder resumes from what any
    builder consumed (docs/deployment.md, "Several writers"); else the home's
    ``checkpoints/<name>``."""
    root = (spark.conf.get("spark.lakerank.checkpoints", None) or "").strip()
    if not root and (spark.conf.get("spark.hadoop.hive.metastore.uris", None) or "").strip():
        root = spark.conf.get("spark.sql.warehouse.dir").rstrip("/") + "/_lakerank/checkpoints"
    return f"{(root or spark.conf.get('spark.lakerank.home') + '/checkpoints').rstrip('/')}/{name}"


# --------------------------------------------------------------------------
# Tables and partitions
# --------------------------------------------------------------------------

def quote_name(name: str) -> str:
    return ".".join("`" + part.strip("`").replace("`", "``") + "`" for part in name.split("."))


def ensure_table(spark, table: str, ddl: str) -> str:
    """Create ``table`` if missing (parquet, partitioned by ``_commit_id``),
    check its columns, and return its location. A table that exists costs one metastore
    read (the external catalog's table entry: schema and location), not four statements."""
    from pyspark.sql.types import StructType, _parse_datatype_string

    database, name = split_table_name(spark, table)
    catalog = external_catalog(spark)
    if not catalog.tableExists(database, name):
        spark.sql(f"CREATE SCHEMA IF NOT EXISTS {quote_name(database)}")
        spark.sql(f"CREATE TABLE IF NOT EXISTS {quote_name(table)} ({ddl}) USING parquet "
                  "PARTITIONED BY (_commit_id)")
    want = [(f.name, f.dataType.simpleString()) for f in _parse_datatype_string(ddl).fields]

    def columns(entry):
        schema = StructType.fromJson(json.loads(entry.schema().json()))
        return [(f.name, f.dataType.simpleString()) for f in schema.fields]

    entry = catalog.getTable(database, name)
    have = columns(entry)
    added = want[len(have) - 1:-1]
    if added and have[:-1] == want[:len(have) - 1] and have[-1:] == want[-1:]:
        # columns the DDL adds after the last data column (an ingest log's later counts): added
        # to the table in place, NULL on the partitions written before
        spark.sql(f"ALTER TABLE {quote_name(table)} ADD COLUMNS ("
                  + ", ".join(f"`{n}` {t}" for n, t in added) + ")")
        entry = catalog.getTable(database, name)
        have = columns(entry)
    if want != have:
        raise ValueError(f"table {table} exists with columns {have}, expected {want}")
    # the twin of the adapter's lakerank_table_location (python_udfs does not import the adapter)
    return str(jvm_class(spark, "org.apache.hadoop.fs.Path")(entry.location()).toString()).rstrip("/")


def ensure_tables(spark, **tables) -> Dict[str, str]:
    """``ensure_table`` of each ``name=(table, ddl)``; their locations by name."""
    return {name: ensure_table(spark, table, ddl) for name, (table, ddl) in tables.items()}


def publish_partition(spark, table: str, location: str, commit_id: int, df,
                      options: Optional[Dict[str, str]] = None, records: Optional[Dict[str, Any]] = None) -> str:
    """Write ``df`` (without ``_commit_id``) into a fresh directory and point
    the table's partition ``_commit_id=commit_id`` at it in one metastore call; then delete
    the other directories of that commit (a killed or failed attempt's, or the one a replay
    replaced): stage, swap and finish of the commit protocol (the ingest records its commit
    in its checkpoint and the changelog table's property). ``options``: the parquet writer's;
    ``records``: JSON files (name -> value, names starting with ``_`` so readers skip them)
    written beside the rows before the swap, published with them."""
    target = protocol.stage_dir(location, "i", commit_id, uuid.uuid4().hex[:12])
    df.write.options(**(options or {})).mode("errorifexists").parquet(target)
    for name, value in (records or {}).items():
        protocol.write_json(spark, f"{target}/{name}", value)
    if os.environ.get("LAKERANK_TEST_HOOKS") == "1":  # test hook: a full disk in this write
        inject_full_disk(target, os.environ.get("LAKERANK_INGEST_WRITE_FAULT", ""), "LAKERANK_INGEST_WRITE_FAULT")
    name = split_table_name(spark, table)
    protocol.swap(spark, name, {"commit_id": commit_id, "create": [[f"_commit_id={commit_id}", target]]})
    protocol.sweep(spark, name, location, live=[target], prefix=f"i{commit_id}_")
    # a home written before the ingests staged under _v/ kept a commit's files in Spark's
    # partition directory: superseded now
    protocol.delete_path(spark, f"{location}/_commit_id={commit_id}")
    return target


# --------------------------------------------------------------------------
# Landing and checkpoint folders
# --------------------------------------------------------------------------

def is_local(path: str) -> bool:
    scheme = urlparse(path).scheme
    return scheme in ("", "file") or (len(scheme) == 1 and os.name == "nt")


def local_path(path: str) -> str:
    return urlparse(path).path if path.startswith("file:") else path


def mkdirs(spark, path: str) -> None:
    if is_local(path):
        os.makedirs(local_path(path), exist_ok=True)
        return
    jpath = jvm_class(spark, "org.apache.hadoop.fs.Path")(path)
    jpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).mkdirs(jpath)


def rename_relanded(landing_dir: str, checkpoint_dir: str) -> List[str]:
    """Give a new name to every landed file whose name the stream has already consumed but
    whose modification time is later than when it was consumed (content re-landed under an
    old name). Spark's file source remembers consumed paths (``<checkpoint>/sources/0``) and
    would skip such a file for good; renamed (``<stem>.relanded-<mtime ms><ext>``, one atomic
    rename in the landing folder) it is read as a new file. Local folders only; returns the
    new paths."""
    if not (is_local(landing_dir) and is_local(checkpoint_dir)):
        return []
    log_dir = os.path.join(local_path(checkpoint_dir), "sources", "0")
    if not os.path.isdir(log_dir):
        return []
    consumed: Dict[str, int] = {}
    for name in os.listdir(log_dir):
        if name.startswith("."):
            continue
        with open(os.path.join(log_dir, name), encoding="utf-8") as fh:
            fh.readline()  # version line, "v1"
            for line in fh:
                if line.strip():
                    entry = json.loads(line)
                    path = os.path.normpath(unquote(urlparse(entry["path"]).path))  # a URI
                    consumed[path] = max(consumed.get(path, 0), int(entry["timestamp"]))
    renamed = []
    for folder, dirs, files in os.walk(local_path(landing_dir)):
        dirs[:] = [d for d in dirs if not d.startswith((".", "_"))]  # hidden, as Spark lists
        for name in files:
            if name.startswith((".", "_")):
                continue
            path = os.path.normpath(os.path.join(folder, name))
            # whole milliseconds truncated, as Hadoop's local file system reports them (a float
            # st_mtime * 1000 can round up past the recorded value and re-read an unchanged file)
            mtime_ms = os.stat(path).st_mtime_ns // 1_000_000
            if path in consumed and mtime_ms > consumed[path]:
                stem, ext = os.path.splitext(name)
                target = os.path.join(folder, f"{stem}.relanded-{mtime_ms}{ext}")
                os.replace(path, target)
                renamed.append(target)
    return renamed


def _offset_log_timestamp_us(checkpoint_dir: str, batch_id: int) -> Optional[int]:
    """The batch timestamp Spark recorded in ``offsets/<batch_id>`` (the same on
    a replay), in microseconds; None when it cannot be read."""
    if not is_local(checkpoint_dir):
        return None
    try:
        with open(os.path.join(local_path(checkpoint_dir), "offsets", str(batch_id)), encoding="utf-8") as fh:
            fh.readline()  # version line, "v1"
            meta = json.loads(fh.readline())
        return int(meta["batchTimestampMs"]) * 1000
    except (OSError, ValueError, KeyError, TypeError):
        return None


# --------------------------------------------------------------------------
# The stream and its batches
# --------------------------------------------------------------------------

def start_stream(spark, landing_dir: str, checkpoint_dir: str, max_files_per_trigger: Optional[int]):
    """The landing folder's line stream (``landed_lines.line_stream``), the folder created if
    missing (an empty stream) and re-landed files renamed first (:func:`rename_relanded`)."""
    mkdirs(spark, landing_dir)
    rename_relanded(landing_dir, checkpoint_dir)
    return line_stream(spark, landing_dir, max_files_per_trigger)


def run_available_now(spark, output, write_batch: Callable, checkpoint_dir: str) -> None:
    """Run ``write_batch`` on every pending micro-batch of ``output`` (``availableNow``,
    checkpoint in ``checkpoint_dir``) and wait for the end."""
    mkdirs(spark, checkpoint_dir)
    query = (
        output.writeStream.foreachBatch(write_batch)
        .option("checkpointLocation", checkpoint_dir)
        .outputMode("append")
        .trigger(availableNow=True)
        .start()
    )
    query.awaitTermination()


def checked_lines(lines, reason, values: Sequence):
    """``lines`` (``landed_lines.numbered_lines`` plus the ingest's columns) as the ingest's
    parsed rows: ``kind`` 'file' for a file's marker (line 0), 'skipped' for a line that is not
    data (a CDC format's ``skip`` column, :func:`python_udfs.ingest.cdc_formats.change_events`),
    'E' for a line ``reason`` (a Column, NULL when valid) passes, else 'quarantined' with its
    ``reason`` and ``raw`` line; ``values``, ``(name, Column)`` pairs, are kept on valid lines only."""
    from pyspark.sql import functions as F

    marker = F.col("line") == 0
    skipped = F.col("skip").isNotNull() if "skip" in lines.columns else F.lit(False)
    checked = lines.withColumn("reason", F.when(~marker & ~skipped, reason))
    valid = ~marker & ~skipped & F.col("reason").isNull()
    return checked.select(
        F.when(marker, F.lit("file")).when(skipped, F.lit("skipped")).when(valid, F.lit("E"))
        .otherwise(F.lit("quarantined")).alias("kind"),
        "file",
        "line",
        "n_events",
        "reason",
        F.when(~marker & ~valid & ~skipped, F.col("text")).alias("raw"),
        *[F.when(valid, value).alias(name) for name, value in values],
        "batch_us",
    )


def batch_counts(parsed):
    """One row of a batch's ``checked_lines``: ``files``, ``events_landed`` (their non-blank
    lines, or the events a CDC format's lines became), ``events`` (valid), ``skipped``,
    ``quarantined`` and ``batch_us`` (the batch timestamp)."""
    from pyspark.sql import functions as F

    kind = F.col("kind")
    return parsed.agg(
        F.count(F.when(kind == "file", 1)).alias("files"),
        F.coalesce(F.sum(F.when(kind == "file", F.col("n_events"))), F.lit(0)).alias("events_landed"),
        F.count(F.when(kind == "E", 1)).alias("events"),
        F.count(F.when(kind == "skipped", 1)).alias("skipped"),
        F.count(F.when(kind == "quarantined", 1)).alias("quarantined"),
        F.max("batch_us").alias("batch_us"),
    ).collect()[0]


def publish_quarantine_and_log(spark, parsed, *, commit_id: int, checkpoint_dir: str, batch_us,
                               stats: Dict[str, int], counts: Sequence[str], quarantine, ingest_log):
    """Publish a commit's side tables, both ingests alike: the ``quarantined`` rows of
    ``parsed`` (reason, raw line, lineage) into ``quarantine`` and one row of ``stats``'
    ``counts`` into ``ingest_log`` (each a ``(table, location)``), stamped with the batch's
    timestamp (``batch_us``, else the checkpoint's offset log, else now; stored as the
    business wall clock)."""
    import time

    from pyspark.sql import functions as F

    if batch_us is None:  # a batch of empty files only: no rows carry the timestamp
        batch_us = _offset_log_timestamp_us(checkpoint_dir, commit_id)
    if batch_us is None:
        batch_us = int(time.time() * 1_000_000)
    batch_ts = F.timestamp_micros(F.lit(int(batch_us))).cast("timestamp_ntz")
    if stats["quarantined"]:
        rows = (
            parsed.where(F.col("kind") == "quarantined")
            .select(
                F.col("reason"),
                F.col("raw").alias("raw_line"),
                F.col("file").alias("_source_file"),
                F.col("line").alias("_source_line"),
                batch_ts.alias("_quarantined_at"),
            )
            .repartition(1)
            .sortWithinPartitions("_source_file", "_source_line")
        )
        publish_partition(spark, quarantine[0], quarantine[1], commit_id, rows)
    log = spark.range(1).select(
        *[F.lit(stats[n]).cast("bigint").alias(n) for n in counts], batch_ts.alias("_committed_at"))
    publish_partition(spark, ingest_log[0], ingest_log[1], commit_id, log)
    progress.report(ingest_log[0].split(".")[-1].removesuffix("__ingest_log").removesuffix("_ingest_log"),
                    f"commit {commit_id} ingested: " + ", ".join(f"{n} {stats[n]:,}" for n in counts if n in stats))


def commits_summary(stats_by_commit: Dict[int, Dict[str, int]], counts: str) -> str:
    """The one-line summary of a run: its commits and the totals ``counts`` (text)."""
    commits = sorted(stats_by_commit)
    if not commits:
        return f"no new commits: {counts}"
    if len(commits) == 1:
        return f"commit {commits[0]}: {counts}"
    return f"commits {commits[0]}..{commits[-1]}: {counts}"
