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
Events are ordered by ``(op_ts, file, line)``, except that two events of one
source log (a CDC message's ``src``) are ordered by their log position ``pos``
alone, so a re-sent copy is stale (:mod:`python_udfs.ingest.cdc_positions`,
:func:`python_udfs.ingest.contract_state.apply_events`). State per contract:
the order key and position of the last applied event, a live flag and the
current image ``(project_id, sign_time, amount)``. A batch's events of a
contract are sorted in that order and each is applied to the state left by
earlier ones:

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

1. the events left-join the stored state of their contracts (the state
   partitions ``< b`` read under literal ranges of the batch's ids that can be
   stored, semi-joined with the batch's contract ids, then
   ``max_by(row, _commit_id)``: :mod:`python_udfs.ingest.state_lookup`);
2. ``-U`` -> ``before_image``; an event at or before the stored key -> ``stale``;
   the others are *effective*: within a batch they are applied in key order and
   each sets the state outright (upsert: live with its image; delete: not live),
   so the state an effective event sees is ``lag`` over the contract's
   effective events, the stored state for the first; outcome and changelog rows
   (``-U``/``+U``, ``+I``, ``-D``) follow from that and the event; the last
   effective event of each contract (``lead`` is NULL) is its new state row;
3. ``_seq`` is ``row_number`` over the commit's rows by (op_ts, file, line, n).

Cost of a commit: the window work and all writes follow the batch; the state
read is a columnar scan of the state partitions below the batch under literal
ranges of the batch's stored ids, which skips the row groups (state files are
sorted by contract_id, 10,000 rows a row group) and pages no range meets,
filtered by the batch's contracts before any shuffle; a batch with too
many stored ids reads every row. Each state partition's directory records its
least and greatest contract id (``_contract_ids.json``), published with it.
``COMPACT_AT_PARTITIONS`` (16) committed partitions below the batch are folded
into the newest of them (one row per contract). docs/pipeline.md, "The
ingest's state", has the trade-off.

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
written as parquet into a fresh directory ``<table>/_v/i<id>_<uuid>``
and then published with one metastore call (the external catalog's
``createPartitions`` or ``alterPartitions``: ``python_udfs.jvm.point_partition``):
readers see the old partition or the new one, never a half-written one, and a
replay replaces rather than appends.
The timestamps ``_quarantined_at`` / ``_committed_at`` are the micro-batch's
timestamp recorded in the checkpoint's offset log, so a replay writes
identical rows. A replay leaves the directory written by the killed attempt
behind, unreferenced (deleting it could break a reader in flight).

A checkpoint whose state lives in a state store (``<checkpoint>/state``) is
refused when its state table does not exist yet: starting it from an empty
state would re-apply history wrongly.
"""

from __future__ import annotations

import os
from typing import Dict, List, Optional

from python_udfs.ingest.cdc_formats import CdcOptions, check_format, physical_line
from python_udfs.ingest.cdc_native import to_native_events
from python_udfs.ingest.contract_lines import parse_contract_lines
from python_udfs.ingest.contract_state import (
    STATE_DDL,
    apply_events,
    compact_state,
    latest_state,
)
from python_udfs.ingest.landed_lines import numbered_lines, whole_files
from python_udfs.ingest.sorted_output import numbered_in_order, sorted_files
from python_udfs.ingest.state_lookup import ID_RECORD, STATE_WRITE_OPTIONS, id_record
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
    streaming batch id): :class:`_ContractCommit`. ``fmt``: the landed lines' format
    (``cdc_formats.FORMATS``; a CDC format's lines are converted to native events first, read
    with ``cdc``: change time, database and table filters, time units). See the module doc.
    """
    check_format(fmt)
    state_table = state_table or f"{changelog_table}_state"
    if not spark.catalog.tableExists(state_table):
        _refuse_legacy_state(checkpoint_dir, state_table)
    locations = ensure_tables(
        spark, changelog=(changelog_table, CHANGELOG_DDL), quarantine=(quarantine_table, QUARANTINE_DDL),
        ingest_log=(ingest_log_table, INGEST_LOG_DDL), state=(state_table, STATE_DDL))
    output = start_stream(spark, landing_dir, checkpoint_dir, max_files_per_trigger)
    commit = _ContractCommit(spark, checkpoint_dir, fmt, cdc, locations, tables={
        "changelog": changelog_table, "quarantine": quarantine_table, "ingest_log": ingest_log_table,
        "state": state_table})
    run_available_now(spark, output, commit.write_batch, checkpoint_dir)
    totals = {n: sum(s[n] for s in commit.stats_by_commit.values()) for n in ("events_landed",) + _OUTCOMES}
    return commits_summary(commit.stats_by_commit, (
        f"landed {totals['events_landed']}, applied {totals['applied']}, "
        f"noop {totals['noop']}, stale {totals['stale']}, "
        f"before_image {totals['before_image']}, quarantined {totals['quarantined']}"
        # native lines are never skipped: their summary keeps its shape
        + (f", skipped {totals['skipped']}" if fmt != "lakerank" else "")))


class _ContractCommit:
    """One micro-batch of the contract stream as commit ``_commit_id`` (the streaming batch
    id), in named steps: parse the lines, apply the events to the stored state, check the
    counts reconcile, then publish the quarantine and ingest log, the changelog and the
    state's delta (the module doc has the semantics)."""

    def __init__(self, spark, checkpoint_dir: str, fmt: str, cdc: Optional[CdcOptions],
                 locations: Dict[str, str], tables: Dict[str, str]) -> None:
        self.spark, self.checkpoint_dir, self.fmt, self.cdc = spark, checkpoint_dir, fmt, cdc
        self.locations, self.tables = locations, tables
        self.stats_by_commit: Dict[int, Dict[str, int]] = {}

    def write_batch(self, batch_df, batch_id: int) -> None:
        commit_id = int(batch_id)
        parsed = self.parse(batch_df, commit_id)
        out = None
        held: List = []  # frames kept for one write, released at the end
        try:
            agg = batch_counts(parsed)
            stats = {name: int(agg[name]) for name in ("files", "events_landed", "skipped", "quarantined")}
            stats.update({o: 0 for o in _COUNTED}, changes=0)
            if agg["events"]:
                out = self.apply(parsed, commit_id, stats)
            _check_reconciles(commit_id, stats)
            self.publish_quarantine_and_log(parsed, commit_id, agg["batch_us"], stats)
            if stats["changes"]:
                self.publish_changelog(out, commit_id, stats, held)
            if out is not None and stats["applied"] + stats["noop"]:
                self.publish_state(out, commit_id, stats)
            self.stats_by_commit[commit_id] = stats
        finally:
            for frame in [*held, out, parsed]:
                if frame is not None:
                    release(frame)

    def parse(self, batch_df, commit_id: int):
        """The batch's lines, numbered, converted from a CDC format, validated (kept once)."""
        from pyspark.sql import functions as F

        lines = numbered_lines(batch_df, whole_files(self.spark, self.checkpoint_dir, commit_id))
        if self.fmt != "lakerank":
            lines = to_native_events(lines, self.fmt, self.cdc)
        return kept(parse_contract_lines(lines, converted=self.fmt != "lakerank").select(
            "kind", "file", "line", "n_events", "reason", "raw",
            "contract_id", "op", "project_id", "sign_us",
            F.col("amount").cast("decimal(18,2)").alias("amount"), "op_ts_us", "src", "pos", "batch_us",
        ))

    def apply(self, parsed, commit_id: int, stats: Dict[str, int]):
        """The events applied to the state as of before this commit (a replay ignores what a
        killed attempt wrote): one row an event with its outcome and changelog rows (kept);
        the outcomes' counts go into ``stats``."""
        from pyspark.sql import functions as F

        listed = compact_state(self.spark, self.tables["state"], self.locations["state"], commit_id)
        events = parsed.where(F.col("kind") == "E").select(
            "contract_id", "op", "op_ts_us", "file", "line", "src", "pos", "project_id", "sign_us", "amount")
        state = latest_state(self.spark, self.tables["state"], commit_id, events.select("contract_id").distinct(),
                             locations=listed)
        out = kept(apply_events(events, state))
        counts = out.agg(
            *[F.count(F.when(F.col("outcome") == o, 1)).alias(o) for o in _COUNTED],
            F.coalesce(F.sum(F.size("changes")), F.lit(0)).alias("changes"),
            # the state delta's id span (its rows: the is_last events), recorded with it
            F.min(F.when(F.col("is_last"), F.col("contract_id"))).alias("delta_min_id"),
            F.max(F.when(F.col("is_last"), F.col("contract_id"))).alias("delta_max_id"),
        ).collect()[0]
        stats.update({name: int(counts[name]) for name in (*_COUNTED, "changes")})
        stats.update(delta_min_id=counts["delta_min_id"], delta_max_id=counts["delta_max_id"])
        return out

    def publish_quarantine_and_log(self, parsed, commit_id: int, batch_us, stats: Dict[str, int]) -> None:
        """The quarantined lines (``_source_line``: the physical line; a CDC event's line is
        its position) and the commit's row of counts."""
        from pyspark.sql import functions as F

        lined = parsed if self.fmt == "lakerank" else parsed.withColumn("line", physical_line(F.col("line"), self.fmt))
        publish_quarantine_and_log(
            self.spark, lined, commit_id=commit_id, checkpoint_dir=self.checkpoint_dir, batch_us=batch_us,
            stats=stats, counts=("files", "events_landed") + _OUTCOMES,
            quarantine=(self.tables["quarantine"], self.locations["quarantine"]),
            ingest_log=(self.tables["ingest_log"], self.locations["ingest_log"]))

    def publish_changelog(self, out, commit_id: int, stats: Dict[str, int], held: List) -> None:
        """The commit's changelog rows, ``_seq`` in (op_ts, file, line) order (``seq_us`` for
        op_ts: a contract's rows stay in the order they were applied when its log orders them
        otherwise, :func:`apply_events`)."""
        from pyspark.sql import functions as F

        changes = (
            out.where(F.size("changes") > 0)
            .select("contract_id", "op_ts_us", "seq_us", "file", "line", F.inline("changes"))
        )
        changelog = numbered_in_order(
            changes, ["seq_us", "file", "line", "n"], stats["changes"], "_seq", held).select(
                F.col("rowkind"),
                F.col("project_id"),
                F.col("contract_id"),
                ntz_from_micros(F.col("sign_us")).alias("sign_time"),
                F.col("amount"),
                ntz_from_micros(F.col("op_ts_us")).alias("op_ts"),
                F.col("_seq"),
                F.col("file").alias("_source_file"),
                physical_line(F.col("line"), self.fmt).alias("_source_line"),
        )
        publish_partition(self.spark, self.tables["changelog"], self.locations["changelog"], commit_id, changelog)

    def publish_state(self, out, commit_id: int, stats: Dict[str, int]) -> None:
        """The state's delta: each changed contract's last effective event (a tombstone for a
        delete), sorted by contract_id in row groups of ``STATE_ROW_GROUP_ROWS``, with the
        record of its id span (:mod:`python_udfs.ingest.state_lookup`)."""
        from pyspark.sql import functions as F

        live = F.col("op").isin("+I", "+U")
        delta = (
            out.where("is_last")
            .select(
                "contract_id", "op_ts_us", "file", "line", live.alias("live"),
                *[F.when(live, F.col(c)).alias(c) for c in ("project_id", "sign_us", "amount")], "src", "pos",
            )
        )
        delta = sorted_files(delta, ["contract_id"], stats["applied"] + stats["noop"])
        publish_partition(self.spark, self.tables["state"], self.locations["state"], commit_id, delta,
                          options=STATE_WRITE_OPTIONS,
                          records={ID_RECORD: id_record(stats["delta_min_id"], stats["delta_max_id"])})


def _check_reconciles(commit_id: int, stats: Dict[str, int]) -> None:
    """Every landed event is applied, a no-op, stale, a before image, skipped or quarantined."""
    total = sum(stats[o] for o in _OUTCOMES)
    if stats["events_landed"] != total:
        raise RuntimeError(
            f"contract ingest commit {commit_id}: counts do not reconcile: "
            f"events_landed {stats['events_landed']} != " + " + ".join(
                f"{o} {stats[o]}" for o in _OUTCOMES) + f" = {total}")


def _refuse_legacy_state(checkpoint_dir: str, state_table: str) -> None:
    """A checkpoint written by the earlier ingest keeps the per-contract state in its
    state store (``<checkpoint>/state``), which this ingest does not read: refuse rather
    than start from an empty state table."""
    if is_local(checkpoint_dir) and os.path.isdir(os.path.join(local_path(checkpoint_dir), "state")):
        raise RuntimeError(
            f"contract ingest: checkpoint {checkpoint_dir} holds per-contract state of the earlier "
            f"streaming-state ingest, but the state table {state_table} is new; rebuild this "
            "LAKERANK_HOME (fresh home, landing files copied over)")

