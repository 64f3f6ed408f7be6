"""Exactly-once ingest of contract CDC events from JSON Lines files.

``run_contract_ingest`` consumes every file under a landing folder that an
earlier call has not consumed yet (Structured Streaming, ``availableNow``,
checkpoint in ``checkpoint_dir``), validates each line, applies the valid
events to per-contract state kept across calls in a state table, with set
operations only (a join and window functions; no Python UDF, no Python
worker) and writes, per micro-batch (= commit ``_commit_id``), three tables
(plus the state's delta):

* ``changelog_table``: the clean retract changelog of the contracts' live
  state (``+I``, ``-U``/``+U`` pairs, ``-D``), every transition, in
  ``(op_ts, file, line)`` order (``_seq`` 1..n within the commit);
* ``quarantine_table``: every line that is not a valid event, with a reason;
* ``ingest_log_table``: one row per commit with the counts, which reconcile:
  ``events_landed = applied + noop + stale + before_image + skipped + quarantined``
  (``skipped``: CDC lines that are not data, or of tables the stream filters out).

Input
-----
One JSON object a line: ``op`` (``+I``, ``+U``, ``-U``, ``-D``),
``project_id`` (bigint), ``contract_id`` (bigint), ``sign_time``
(``yyyy-MM-dd HH:mm:ss``, session time zone), ``amount`` (decimal, optional),
``op_ts`` (``yyyy-MM-dd HH:mm:ss.SSS`` with 1-3 fraction digits, or
``yyyy-MM-dd HH:mm:ss``): the ``lakerank`` format; a CDC format (``fmt``: ``debezium-json``,
``canal-json``, ``maxwell-json``) is converted to these events first, a line to one or
more (a malformed one: one quarantined; one that is not data: one skipped;
:mod:`python_udfs.ingest.cdc_formats`, read with ``cdc``: its change time, filters and units). Any file
name is accepted; files and folders whose name starts with ``.`` or ``_`` are ignored (Spark's rule), sub-folders are
read. Lines end at ``\\n``, ``\\r\\n`` or ``\\r`` (as Spark's line reader; a
leading byte-order mark is dropped); ``_source_line`` is the 1-based physical line number and
``_source_file`` Spark's URI of the file (``file:/...``, URL-encoded).
Blank or whitespace-only lines are not events: they are skipped and not
counted anywhere. A file is consumed once, by path: a file rewritten in
place under the same name is not read again. ``files`` in the ingest log
counts the files with at least one byte (an empty file yields no row).

Semantics (per ``contract_id``)
-------------------------------
Events are totally ordered by ``(op_ts, file, line)``. State per contract:
the order key of the last applied event, a live flag and the current image
``(project_id, sign_time, amount)``. A batch's events of a contract are
sorted by that key and each is applied to the state left by earlier ones:

* ``-U`` -> ``before_image``, whatever its order (nothing changes, state not advanced);
* order key <= state's order key -> ``stale`` (nothing changes);
* ``+I``/``+U``: live with the same image -> ``noop`` (order key advanced);
  live with another image -> emit ``-U`` old, ``+U`` new, ``applied``;
  not live -> emit ``+I`` new, ``applied``;
* ``-D``: live -> emit ``-D`` with the old image, ``applied``; not live ->
  ``noop`` but the order key advances (a tombstone: an older late ``+I`` is
  then ``stale``).

Changelog rows carry the event's ``op_ts``, file and line; ``_seq`` orders a
commit's rows by ``(op_ts, file, line)``, ``-U`` before its ``+U``.

Validation
----------
Lines are parsed with ``try_parse_json`` (VARIANT), which keeps JSON's own
types. The first failing check gives the quarantine reason:

* ``invalid json`` (not JSON, or text after the object), ``not a json object``;
* ``missing op`` (absent or null), ``unknown op 'X'``;
* ``null contract_id``, ``bad contract_id '1.5'`` (not a JSON integer literal
  in the bigint range: strings, decimals and booleans are rejected);
* ``null op_ts``, ``bad op_ts '...'``;
* for ``+I``/``+U``/``-U`` only: ``null project_id``, ``bad project_id '...'``,
  ``null sign_time``, ``bad sign_time '...'`` (``-D`` deletes with the stored
  image, its other fields are not used);
* for every op: ``bad amount '...'`` when ``amount`` is present (not null)
  but is not a JSON number or a string holding one that fits
  ``decimal(18,2)``; amounts are read exactly (never through a double) and
  rounded half-up to 2 places, as Spark's cast does.

Duplicate keys in one object make the line ``invalid json`` (VARIANT refuses
them).

State table and cost
--------------------
The state is a table (``state_table``, parquet, partitioned by
``_commit_id``): partition ``c`` holds one row per contract that commit ``c``
changed (its last effective event's order key, live flag and live image; a
``-D`` leaves a non-live row, the tombstone). A contract's state *as of before
commit b* is its row of the greatest ``_commit_id < b``. A batch is one
set-based pass:

1. the events left-join the stored state of their contracts (a semi-join of
   the state partitions ``< b`` with the batch's contract ids, then
   ``max_by(row, _commit_id)``);
2. ``-U`` -> ``before_image``; an event at or before the stored key -> ``stale``;
   the others are *effective*: within a batch they are applied in key order and
   each sets the state outright (upsert: live with its image; delete: not live),
   so the state an effective event sees is ``lag`` over the contract's
   effective events, the stored state for the first; outcome and changelog rows
   (``-U``/``+U``, ``+I``, ``-D``) follow from that and the event; the last
   effective event of each contract (``lead`` is NULL) is its new state row;
3. ``_seq`` is ``row_number`` over the commit's rows by (op_ts, file, line, n).

Cost of a commit: the window work and all writes follow the batch (events,
changelog rows, one state row per contract changed); the state read is one
columnar scan of the state partitions below the batch, filtered by the
batch's contracts before any shuffle (100 contracts looked up in an
834k-contract state: 7 s on this shared 2-core box), so it grows with the
number of contracts ever seen, not with the number of events. Compaction bounds the number of partitions: when
``COMPACT_AT_PARTITIONS`` (16) committed partitions lie below the batch, they
are folded into the newest of them (its latest rows, a fresh directory, one
metastore call) and the older ones dropped; the fold rewrites the state (one
row per contract), i.e. every 16 commits, amortised 1/16 of the state per
commit. Trade-off: contract-id buckets (one partition per hash bucket,
rewritten when touched) would make the read follow the touched buckets, but a
small batch of random contracts touches most buckets unless there are
thousands of them, each touched bucket costs a rewrite and a metastore call,
and the replay rule would need an old and a new row per contract; a scan with
no per-contract work was cheaper at the sizes measured. A backlog (first
build on a big landing folder) is one batch: one pass, whatever its size.

Crash safety
------------
Structured Streaming replays an uncommitted batch with the same
``batch_id`` and the same files; the stream itself is stateless (the state is
the table). A batch reads the state *as of before* its commit (partitions
``< batch_id``) and ignores any rows a killed attempt of the same batch
wrote, so a replay computes the same rows from the same inputs and never
applies an event twice; the state delta is published last, like the other
tables. Only one batch can be uncommitted at a time (batches run in order, the
next starts after the commit log records this one), and compaction only folds
committed partitions (``< batch_id``), so a replay never finds its input state
folded away. Each table's partition for a commit is
written as parquet into a fresh directory ``<table>/_commit_id=<id>/<uuid>``
and then published with one metastore call (the external catalog's
``createPartitions`` or ``alterPartitions``: ``python_udfs.jvm.point_partition``):
readers see the old partition or the new one, never a half-written one, and a
replay replaces rather than appends.
The timestamps ``_quarantined_at`` / ``_committed_at`` are the micro-batch's
timestamp recorded in the checkpoint's offset log, so a replay writes
identical rows. A replay leaves the directory written by the killed attempt
behind, unreferenced (deleting it could break a reader in flight).

A checkpoint written by the earlier ingest (state in a RocksDB state store
under ``<checkpoint>/state``) is refused when its state table does not exist
yet: starting it from an empty state would re-apply history wrongly.
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional

from python_udfs.ingest.cdc_formats import CdcOptions, check_format, physical_line, to_native_events
from python_udfs.ingest.contract_lines import parse_contract_lines
from python_udfs.ingest.contract_state import (
    STATE_DDL,
    apply_events,
    compact_state,
    latest_state,
)
from python_udfs.ingest.landed_lines import numbered_lines, whole_files
from python_udfs.ingest.tables import (
    QUARANTINE_DDL,
    batch_counts,
    commits_summary,
    ensure_tables,
    is_local,
    local_path,
    publish_partition,
    publish_quarantine_and_log,
    run_available_now,
    start_stream,
)
from python_udfs.ingest.wall_clock import ntz_from_micros
from python_udfs.jvm import kept, release

__all__ = [
    "run_contract_ingest",
    "CHANGELOG_DDL",
    "INGEST_LOG_DDL",
]

CHANGELOG_DDL = (
    "rowkind STRING, project_id BIGINT, contract_id BIGINT, sign_time TIMESTAMP_NTZ, "
    "amount DECIMAL(18,2), op_ts TIMESTAMP_NTZ, _seq BIGINT, _source_file STRING, "
    "_source_line BIGINT, _commit_id BIGINT"
)
INGEST_LOG_DDL = (
    "files BIGINT, events_landed BIGINT, applied BIGINT, noop BIGINT, stale BIGINT, "
    "before_image BIGINT, quarantined BIGINT, _committed_at TIMESTAMP_NTZ, skipped BIGINT, _commit_id BIGINT"
)

_OUTCOMES = ("applied", "noop", "stale", "before_image", "skipped", "quarantined")
_COUNTED = ("applied", "noop", "stale", "before_image")  # by the state step


# A commit's output of up to _ONE_FILE_MAX rows is one file, sorted in one task; a larger one
# (a bulk load) is range partitioned into at least one file per core and at most about
# _ROWS_PER_FILE rows a file, sorted and written in parallel.
_ONE_FILE_MAX = 200_000
_ROWS_PER_FILE = 1_000_000


def _file_count(spark, rows: int) -> int:
    if rows <= _ONE_FILE_MAX:
        return 1
    return max(spark.sparkContext.defaultParallelism, -(-rows // _ROWS_PER_FILE))


def sorted_files(df, order: List[str], rows: int):
    """``df`` as the files of one commit, each sorted by ``order``: one file up to
    ``_ONE_FILE_MAX`` rows (``rows`` is the expected count), else ranges of ``order``
    written in parallel."""
    n = _file_count(df.sparkSession, rows)
    if n == 1:
        return df.repartition(1).sortWithinPartitions(*order)
    return df.repartitionByRange(n, *order).sortWithinPartitions(*order)


def numbered_in_order(df, order: List[str], rows: int, name: str, held: List):
    """``df`` with ``name`` = 1..N in ``order`` (unique per row), as sorted files
    (``sorted_files``). Up to ``_ONE_FILE_MAX`` rows: ``row_number`` over one partition.
    More: the rows are range partitioned and sorted in parallel (kept, so the numbering
    and the write see the same partitions), each partition's row count is collected, and a
    row's number is the rows of earlier ranges plus its position in its own range
    (zipWithIndex's method; a global ``row_number`` would sort every row in one task). The
    kept frame is appended to ``held``: the caller releases it after the write."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    spark = df.sparkSession
    n = _file_count(spark, rows)
    if n == 1:
        return (df.withColumn(name, F.row_number().over(Window.orderBy(*order)).cast("bigint"))
                .repartition(1).sortWithinPartitions(name))
    ranged = kept(
        df.repartitionByRange(n, *order).sortWithinPartitions(*order)
        .withColumn("__part", F.spark_partition_id())
        .withColumn("__pos", F.monotonically_increasing_id())
    )
    held.append(ranged)
    counts = sorted(ranged.groupBy("__part").agg(F.min("__pos").alias("first"), F.count(F.lit(1)).alias("n"))
                    .collect())
    offsets, before = [], 0
    for r in counts:
        offsets.append((r["__part"], r["first"], before))
        before += r["n"]
    split = spark.createDataFrame(offsets, "__part int, __first bigint, __before bigint")
    return (
        ranged.join(F.broadcast(split), "__part")
        .withColumn(name, (F.col("__before") + F.col("__pos") - F.col("__first") + 1).cast("bigint"))
        .drop("__part", "__pos", "__first", "__before")
    )


# --------------------------------------------------------------------------
# The job
# --------------------------------------------------------------------------

def run_contract_ingest(spark, *, landing_dir: str, checkpoint_dir: str, changelog_table: str,
                        quarantine_table: str, ingest_log_table: str, state_table: Optional[str] = None,
                        max_files_per_trigger: Optional[int] = None, fmt: str = "lakerank",
                        cdc: Optional[CdcOptions] = None) -> str:
    """Consume every JSON Lines file under landing_dir not yet consumed (Structured Streaming,
    trigger(availableNow=True), checkpoint in checkpoint_dir), exactly once; returns a one-line summary.

    Creates the tables if missing (parquet, partitioned by ``_commit_id``; the per-contract
    state in ``state_table``, default ``<changelog_table>_state``), and the landing folder
    if missing (an empty stream). Each micro-batch is one commit ``_commit_id`` (the
    streaming batch id). ``fmt``: the landed lines' format (``cdc_formats.FORMATS``; a CDC
    format's lines are converted to native events first, read with ``cdc``: change time,
    database and table filters, time units). See the module doc.
    """
    from pyspark.sql import functions as F

    check_format(fmt)

    state_table = state_table or f"{changelog_table}_state"
    if not spark.catalog.tableExists(state_table):
        _refuse_legacy_state(checkpoint_dir, state_table)
    locations = ensure_tables(
        spark, changelog=(changelog_table, CHANGELOG_DDL), quarantine=(quarantine_table, QUARANTINE_DDL),
        ingest_log=(ingest_log_table, INGEST_LOG_DDL), state=(state_table, STATE_DDL))
    output = start_stream(spark, landing_dir, checkpoint_dir, max_files_per_trigger)

    stats_by_commit: Dict[int, Dict[str, int]] = {}

    def write_batch(batch_df, batch_id: int) -> None:
        commit_id = int(batch_id)
        kind = F.col("kind")
        lines = numbered_lines(batch_df, whole_files(spark, checkpoint_dir, commit_id))
        if fmt != "lakerank":
            lines = to_native_events(lines, fmt, cdc)
        parsed = kept(parse_contract_lines(lines, converted=fmt != "lakerank").select(
            "kind", "file", "line", "n_events", "reason", "raw",
            "contract_id", "op", "project_id", "sign_us",
            F.col("amount").cast("decimal(18,2)").alias("amount"), "op_ts_us", "batch_us",
        ))
        out = None
        held: List = []  # frames kept for one write, released at the end
        try:
            agg = batch_counts(parsed)
            stats = {name: int(agg[name]) for name in ("files", "events_landed", "skipped", "quarantined")}
            stats.update({o: 0 for o in _COUNTED}, changes=0)

            if agg["events"]:
                # The state as of before this commit: a replay ignores what a killed attempt wrote.
                compact_state(spark, state_table, locations["state"], commit_id)
                events = parsed.where(kind == "E").select(
                    "contract_id", "op", "op_ts_us", "file", "line", "project_id", "sign_us", "amount")
                state = latest_state(spark, state_table, commit_id,
                                     events.select("contract_id").distinct())
                out = kept(apply_events(events, state))
                counts = out.agg(
                    *[F.count(F.when(F.col("outcome") == o, 1)).alias(o) for o in _COUNTED],
                    F.coalesce(F.sum(F.size("changes")), F.lit(0)).alias("changes"),
                ).collect()[0]
                stats.update({name: int(counts[name]) for name in counts.asDict()})

            total = sum(stats[o] for o in _OUTCOMES)
            if stats["events_landed"] != total:
                raise RuntimeError(
                    f"contract ingest commit {commit_id}: counts do not reconcile: "
                    f"events_landed {stats['events_landed']} != " + " + ".join(
                        f"{o} {stats[o]}" for o in _OUTCOMES) + f" = {total}")
            # the quarantine's _source_line: the physical line (a CDC event's line is its position)
            lined = parsed if fmt == "lakerank" else parsed.withColumn("line", physical_line(F.col("line"), fmt))
            publish_quarantine_and_log(
                spark, lined, commit_id=commit_id, checkpoint_dir=checkpoint_dir, batch_us=agg["batch_us"],
                stats=stats, counts=("files", "events_landed") + _OUTCOMES,
                quarantine=(quarantine_table, locations["quarantine"]),
                ingest_log=(ingest_log_table, locations["ingest_log"]))

            if stats["changes"]:
                changes = (
                    out.where(F.size("changes") > 0)
                    .select("contract_id", "op_ts_us", "file", "line", F.inline("changes"))
                )
                changelog = numbered_in_order(
                    changes, ["op_ts_us", "file", "line", "n"], stats["changes"], "_seq", held).select(
                        F.col("rowkind"),
                        F.col("project_id"),
                        F.col("contract_id"),
                        ntz_from_micros(F.col("sign_us")).alias("sign_time"),
                        F.col("amount"),
                        ntz_from_micros(F.col("op_ts_us")).alias("op_ts"),
                        F.col("_seq"),
                        F.col("file").alias("_source_file"),
                        physical_line(F.col("line"), fmt).alias("_source_line"),
                )
                publish_partition(spark, changelog_table, locations["changelog"], commit_id, changelog)

            if out is not None and stats["applied"] + stats["noop"]:
                live = F.col("op").isin("+I", "+U")
                delta = (
                    out.where("is_last")
                    .select(
                        "contract_id", "op_ts_us", "file", "line", live.alias("live"),
                        *[F.when(live, F.col(c)).alias(c) for c in ("project_id", "sign_us", "amount")],
                    )
                )
                delta = sorted_files(delta, ["contract_id"], stats["applied"] + stats["noop"])
                publish_partition(spark, state_table, locations["state"], commit_id, delta)
            stats_by_commit[commit_id] = stats
        finally:
            for frame in [*held, out, parsed]:
                if frame is not None:
                    release(frame)

    run_available_now(spark, output, write_batch, checkpoint_dir)
    totals = {n: sum(s[n] for s in stats_by_commit.values()) for n in ("events_landed",) + _OUTCOMES}
    return commits_summary(stats_by_commit, (
        f"landed {totals['events_landed']}, applied {totals['applied']}, "
        f"noop {totals['noop']}, stale {totals['stale']}, "
        f"before_image {totals['before_image']}, quarantined {totals['quarantined']}"
        # native lines are never skipped: their summary keeps its shape
        + (f", skipped {totals['skipped']}" if fmt != "lakerank" else "")))


def _refuse_legacy_state(checkpoint_dir: str, state_table: str) -> None:
    """A checkpoint written by the earlier ingest keeps the per-contract state in its
    state store (``<checkpoint>/state``), which this ingest does not read: refuse rather
    than start from an empty state table."""
    if is_local(checkpoint_dir) and os.path.isdir(os.path.join(local_path(checkpoint_dir), "state")):
        raise RuntimeError(
            f"contract ingest: checkpoint {checkpoint_dir} holds per-contract state of the earlier "
            f"streaming-state ingest, but the state table {state_table} is new; rebuild this "
            "LAKERANK_HOME (fresh home, landing files copied over)")

