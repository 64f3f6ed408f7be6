"""The contract ingest's per-contract state: the state table (one partition of changed
contracts per commit, compacted; a batch's contracts looked up under literal ranges of their
ids, :mod:`python_udfs.ingest.state_lookup`) and the set-based state step that applies a
batch's events (the module doc of :mod:`python_udfs.ingest.contract_ingest`)."""

from __future__ import annotations

from typing import Dict

from python_udfs.commit.protocol import path_bytes
from python_udfs.ingest.state_lookup import (
    ID_RECORD,
    STATE_WRITE_OPTIONS,
    id_record,
    in_ranges,
    lookup_ranges,
    partition_locations,
    span_of,
)
from python_udfs.ingest.tables import publish_partition, quote_name

__all__ = ["COMPACT_AT_PARTITIONS", "FOLD_BASE_AT", "STATE_DDL", "apply_events", "compact_state", "latest_state"]

# State rows: one per contract and commit that changed it (the order key of its last
# effective event and its log position, live flag, live image); partition ``_commit_id`` = the
# commit that wrote them. ``src``/``pos`` came later: ensure_table adds them to an older state
# table, whose rows read NULL there (no position: ordered by change time).
STATE_DDL = (
    "contract_id BIGINT, op_ts_us BIGINT, file STRING, line BIGINT, live BOOLEAN, "
    "project_id BIGINT, sign_us BIGINT, amount DECIMAL(18,2), src STRING, pos STRING, _commit_id BIGINT"
)
_STATE_COLS = ("op_ts_us", "file", "line", "live", "project_id", "sign_us", "amount", "src", "pos")
# Fold the state's delta partitions into one when this many lie below the batch; the base
# (the oldest partition) with them once the deltas hold this share of its bytes. Folding the
# base rewrites every contract in one sorted file (at 1e7, ~22 s of one core); the deltas
# alone, a batch's contracts at a time, fold in a fraction of it.
COMPACT_AT_PARTITIONS = 16
FOLD_BASE_AT = 0.25


def latest_state(spark, table: str, below: int, contracts=None, prune: bool = True, locations=None):
    """Each contract's state as of before commit ``below``: its row of the greatest
    ``_commit_id < below`` (rows of ``below`` and later — a killed attempt of this very
    batch — are ignored). With ``contracts`` (a DataFrame of distinct contract_id), only
    those: the rows under the literal ranges of :func:`lookup_ranges` (``prune``; row groups
    no range meets are skipped; ``locations``: the partitions' listing when the caller has
    it), then semi-joined with ``contracts`` (the exact filter)."""
    from pyspark.sql import functions as F

    rows = spark.table(quote_name(table)).where(F.col("_commit_id") < F.lit(below))
    if contracts is not None:
        ranges = lookup_ranges(spark, table, below, contracts, locations) if prune else None
        if ranges is not None:
            rows = rows.where(in_ranges(ranges))
        rows = rows.join(contracts, "contract_id", "left_semi")
    return _latest(rows)


def _latest(rows):
    """Each contract's row of the greatest ``_commit_id`` among ``rows`` (state rows)."""
    from pyspark.sql import functions as F

    latest = rows.groupBy("contract_id").agg(
        F.max_by(F.struct(*_STATE_COLS), F.col("_commit_id")).alias("s"))
    return latest.select("contract_id", *[F.col(f"s.{c}").alias(c) for c in _STATE_COLS])


def compact_state(spark, table: str, location: str, below: int) -> Dict[int, str]:
    """Fold the committed state partitions ``< below`` when there are COMPACT_AT_PARTITIONS
    or more: the deltas (every partition but the oldest, the state's base) into the newest of
    them, or, once the deltas' bytes reach ``FOLD_BASE_AT`` of the base's, all of them. The
    folded partitions' latest rows (one file sorted by contract_id, in row groups of
    ``STATE_ROW_GROUP_ROWS``, with their id span as its record) are written into a fresh
    directory, that partition is re-pointed at it (one metastore call), then the other folded
    partitions are dropped. Every step leaves a valid state: the merged partition holds each
    folded contract's latest row and is newer than every partition it leaves out, so the
    dropped ones are redundant for any later read. Only commits below the running batch are
    touched (they are committed and never replayed). Returns the partitions ``< below`` as
    they stand after it (for :func:`latest_state`: the one metastore listing of a batch)."""
    from pyspark.sql import functions as F

    older = partition_locations(spark, table, below)
    if len(older) < COMPACT_AT_PARTITIONS:
        return older
    base = min(older)
    deltas = {c: loc for c, loc in older.items() if c != base}
    whole = sum(path_bytes(spark, loc) for loc in deltas.values()) >= FOLD_BASE_AT * path_bytes(spark, older[base])
    fold = older if whole else deltas
    head = max(fold)
    record = id_record(*(span_of(spark, fold.values()) or (None, None)))
    # One sorted file, whatever the size (its row count is not known without another pass).
    rows = spark.table(quote_name(table)).where(F.col("_commit_id").isin(sorted(fold)))
    merged = _latest(rows).repartition(1).sortWithinPartitions("contract_id")
    merged_at = publish_partition(spark, table, location, head, merged, options=STATE_WRITE_OPTIONS,
                                  records={ID_RECORD: record})
    specs = ", ".join(f"PARTITION (_commit_id={c})" for c in sorted(fold) if c != head)
    spark.sql(f"ALTER TABLE {quote_name(table)} DROP IF EXISTS {specs}")
    return {**{c: loc for c, loc in older.items() if c not in fold}, head: merged_at}


def apply_events(events, state):
    """The state step, set-based: one row per valid event with its ``outcome``, the
    changelog rows it emits (``changes``: array of rowkind, n, image) and, on the
    contract's last effective event of the batch, the contract's new state (``is_last``).

    ``state``: the contracts' stored state (``latest_state``). Per contract: a ``-U`` is a before
    image; an event at or before the stored order key is stale; every other event is
    effective, and since the batch's effective events of a contract are applied in order and
    each one sets the live flag and image (upsert: live, its image; delete: not live), the
    state an effective event sees is the one left by the previous effective event (``lag``)
    or, for the first, the stored one.

    The order (docs/cdc_formats.md, "The log's order"): two events of one log (the same
    ``src``) are ordered by their position ``pos`` alone, so a re-sent copy (the position of
    one already applied) is stale whatever file it lands in; any other two by the key
    ``(op_ts_us, file, line)``. A batch applies a contract's events in position order when
    they all come from one log, else in key order. ``seq_us`` (the running maximum of
    ``op_ts_us`` in that order) lets the changelog number a commit's rows in an order that
    keeps each contract's rows in the order they were applied."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    s = state.select("contract_id", *[F.col(c).alias("s_" + c) for c in _STATE_COLS])
    j = events.join(s, "contract_id", "left")
    t, f, n = F.col("op_ts_us"), F.col("file"), F.col("line")
    st, sf, sl = F.col("s_op_ts_us"), F.col("s_file"), F.col("s_line")
    by_key = (t < st) | ((t == st) & ((f < sf) | ((f == sf) & (n <= sl))))
    same_log = F.col("src").isNotNull() & (F.col("src") == F.col("s_src"))
    at_or_before = F.when(same_log, F.col("pos") <= F.col("s_pos")).otherwise(by_key)
    op = F.col("op")
    stale = st.isNotNull() & at_or_before
    j = j.withColumn("outcome", F.when(op == "-U", F.lit("before_image"))
                     .when(stale, F.lit("stale")))

    # one log for all of a contract's effective events of the batch: position order
    contract = Window.partitionBy("contract_id")
    eff0 = j.where(F.col("outcome").isNull())
    one_log = (F.count("src").over(contract) == F.count(F.lit(1)).over(contract)) & (
        F.min("src").over(contract) == F.max("src").over(contract))
    eff0 = eff0.withColumn("__k", F.when(one_log, F.col("pos")))
    w = contract.orderBy("__k", "op_ts_us", "file", "line")
    first = F.lag("op").over(w).isNull()  # op is never NULL on a valid event
    image_cols = ("project_id", "sign_us", "amount")
    eff = eff0.select(
        "*",
        F.max("op_ts_us").over(w.rowsBetween(Window.unboundedPreceding, Window.currentRow)).alias("seq_us"),
        F.when(first, F.coalesce(F.col("s_live"), F.lit(False)))
        .otherwise(F.lag("op").over(w).isin("+I", "+U")).alias("p_live"),
        *[F.when(first, F.col("s_" + c)).otherwise(F.lag(c).over(w)).alias("p_" + c)
          for c in image_cols],
        F.lead("op").over(w).isNull().alias("is_last"),
    )
    upsert = op.isin("+I", "+U")
    p_live = F.col("p_live")
    same = (p_live & (F.col("project_id") == F.col("p_project_id"))
            & (F.col("sign_us") == F.col("p_sign_us")) & F.col("amount").eqNullSafe(F.col("p_amount")))

    def row(kind, n, prefix):
        return F.struct(F.lit(kind).alias("rowkind"), F.lit(n).cast("bigint").alias("n"),
                        *[F.col(prefix + c).alias(c) for c in image_cols])

    no_rows = F.array().cast(
        "array<struct<rowkind:string,n:bigint,project_id:bigint,sign_us:bigint,amount:decimal(18,2)>>")
    eff = eff.select(
        "contract_id", "op", "op_ts_us", "seq_us", "file", "line", "src", "pos", *image_cols, "is_last",
        F.when(upsert & same, F.lit("noop")).when(upsert | p_live, F.lit("applied"))
        .otherwise(F.lit("noop")).alias("outcome"),
        F.when(upsert & p_live & ~same, F.array(row("-U", 0, "p_"), row("+U", 1, "")))
        .when(upsert & ~p_live, F.array(row("+I", 0, "")))
        .when(~upsert & p_live, F.array(row("-D", 0, "p_")))
        .otherwise(no_rows).alias("changes"),
    )
    rest = j.where(F.col("outcome").isNotNull()).select(
        "contract_id", "op", "op_ts_us", F.col("op_ts_us").alias("seq_us"), "file", "line", "src", "pos", *image_cols,
        F.lit(False).alias("is_last"), "outcome", no_rows.alias("changes"))
    return eff.unionByName(rest)
