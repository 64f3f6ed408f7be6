"""The contract ingest's state lookup (python_udfs.ingest.state_lookup) on a real local
SparkSession (``spark``, conftest.py; no mocks): the state read under literal ranges of the batch's stored ids gives
exactly the rows of the plain semi-join, for ids below, at and above the highest stored id,
after compaction, beside a killed attempt's partition, from partitions written without an id
record, and on an empty state; and the literals do skip row groups."""

from __future__ import annotations

import os

import pytest
from test_contract_ingest import Stream, ev

from python_udfs.ingest import contract_state, state_lookup
from python_udfs.ingest.contract_state import STATE_DDL, latest_state
from python_udfs.ingest.state_lookup import ID_RECORD, id_record, lookup_ranges, partition_locations
from python_udfs.ingest.tables import ensure_table, publish_partition

pytest.importorskip("pyspark")

ROWS_PER_GROUP = 4  # row groups this small, so a few dozen contracts span many


@pytest.fixture
def small_groups(monkeypatch):
    """Row groups of 4 rows, compaction at 3 partitions, and the lookup on any state (a state
    this small is read whole otherwise: MIN_LOOKUP_SPAN)."""
    monkeypatch.setitem(state_lookup.STATE_WRITE_OPTIONS, "parquet.block.row.count.limit", str(ROWS_PER_GROUP))
    monkeypatch.setattr(contract_state, "COMPACT_AT_PARTITIONS", 3)
    monkeypatch.setattr(state_lookup, "MIN_LOOKUP_SPAN", 0)


def ids_frame(spark, ids):
    return spark.createDataFrame([(i,) for i in sorted(set(ids))], "contract_id bigint")


def rows(df):
    return sorted(tuple(r) for r in df.collect())


def assert_same_rows(spark, table, below, ids):
    """The pruned lookup's rows are the semi-join's; returns them."""
    got = rows(latest_state(spark, table, below, ids_frame(spark, ids)))
    want = rows(latest_state(spark, table, below, ids_frame(spark, ids), prune=False))
    assert got == want, (below, ids)
    return got


def scanned(spark, df) -> int:
    """The rows the state scan of ``df`` returned (its file scan's numOutputRows: the rows of
    the row groups it did not skip), the plan run without adaptive stages."""
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    try:
        df.collect()
        leaves = df._jdf.queryExecution().executedPlan().collectLeaves()
        scans = [leaves.apply(i) for i in range(leaves.size())
                 if "FileSourceScan" in leaves.apply(i).getClass().getSimpleName()]
        return sum(int(s.metrics().apply("numOutputRows").value()) for s in scans)
    finally:
        spark.conf.unset("spark.sql.adaptive.enabled")


def land_batches(stream):
    """Five commits over contracts 10, 20, ..., 400 (inserts, then updates, deletes and new
    ids): with compaction at 3 partitions, commit 3 folds 0..2 into 2, and commit 4 reads
    partitions 2 and 3."""
    day = "2024-03-0{} 00:00:00"
    stream.land([ev("+I", c, f"2024-03-05 10:00:00.{c % 1000:03d}", 1, day.format(1)) for c in range(10, 210, 10)])
    assert stream.run().startswith("commit 0:")
    stream.land([ev("+I", c, "2024-03-05 11:00:00.000", 2, day.format(2)) for c in range(210, 410, 10)]
                + [ev("+U", 50, "2024-03-05 11:00:00.000", 3, day.format(3), "1.5")])
    assert stream.run().startswith("commit 1:")
    stream.land([ev("-D", 60, "2024-03-05 12:00:00.000"), ev("+U", 390, "2024-03-05 12:00:00.000", 4, day.format(4))])
    assert stream.run().startswith("commit 2:")
    stream.land([ev("+U", 20, "2024-03-05 13:00:00.000", 5, day.format(5)), ev("+I", 401, "2024-03-05 13:00:00.000",
                                                                               6, day.format(6))])
    assert stream.run().startswith("commit 3:")
    stream.land([ev("+U", 30, "2024-03-05 14:00:00.000", 7, day.format(7))])
    assert stream.run().startswith("commit 4:")


def test_empty_state_reads_nothing(spark, tmp_path):
    table = "sl_empty.state"
    spark.sql("CREATE SCHEMA IF NOT EXISTS sl_empty")
    ensure_table(spark, table, STATE_DDL)
    assert lookup_ranges(spark, table, 0, ids_frame(spark, [1, 2, 3])) == []
    assert assert_same_rows(spark, table, 0, [1, 2, 3]) == []
    spark.sql("DROP SCHEMA sl_empty CASCADE")


def test_literal_lookup_equals_the_semi_join(spark, tmp_path, small_groups):
    stream = Stream(spark, tmp_path)
    land_batches(stream)
    table = stream.changelog + "_state"
    # compaction folded commits 0..2 into partition 2 (commit 3 ran it), commit 4's delta beside
    assert sorted(partition_locations(spark, table, 10)) == [2, 3, 4]
    merged = partition_locations(spark, table, 10)[2]
    assert state_lookup.read_json(spark, f"{merged}/{ID_RECORD}") == id_record(10, 400)

    below_, at, above = [5, 10, 15, 20, 50, 60, 65], [401], [402, 10_000]
    for below in (1, 2, 3, 4, 5):  # a commit's view: the partitions under it
        for ids in (below_, at, above, below_ + at + above, list(range(1, 500, 7))):
            assert_same_rows(spark, table, below, ids)
    state = assert_same_rows(spark, table, 5, below_ + at + above)
    assert [r[0] for r in state] == [10, 20, 50, 60, 401]  # 5, 15, 65, 402, 10000: never stored
    live = {r[0]: (r[4], r[5]) for r in state}
    assert live[60] == (False, None) and live[20][1] == 5 and live[50][1] == 3
    # ids above the highest stored one are not looked up; those below are, as literals
    assert lookup_ranges(spark, table, 5, ids_frame(spark, above)) == []
    assert lookup_ranges(spark, table, 5, ids_frame(spark, below_ + at + above)) == [
        (i, i) for i in below_ + at if i >= 10]  # 10..401 stored below commit 5
    # as of before commit 3 (compaction's partition 2 holds 10..400; 401 came with commit 3)
    assert lookup_ranges(spark, table, 3, ids_frame(spark, at + [400])) == [(400, 400)]
    # ranges that cover over half the span, or a span under MIN_LOOKUP_SPAN: no literals
    assert lookup_ranges(spark, table, 5, ids_frame(spark, range(10, 402))) is None
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(state_lookup, "MIN_LOOKUP_SPAN", 401 - 10 + 2)
        assert lookup_ranges(spark, table, 5, ids_frame(spark, below_)) is None
        assert_same_rows(spark, table, 5, below_ + at + above)

    # a killed attempt of commit 5 (new ids and a changed 10) is ignored by commit 5's read
    before = assert_same_rows(spark, table, 5, [10, 401, 999])
    killed = spark.createDataFrame([(10, 1, "x", 1, True, 9, 9, None, None, None),
                                    (999, 1, "x", 1, True, 9, 9, None, None, None)],
                                   STATE_DDL.rsplit(",", 1)[0])
    publish_partition(spark, table, partition_locations(spark, table, 10)[2].rsplit("/_v/", 1)[0], 5, killed,
                      records={ID_RECORD: id_record(10, 999)})
    assert assert_same_rows(spark, table, 5, [10, 401, 999]) == before
    assert lookup_ranges(spark, table, 5, ids_frame(spark, [10, 401, 999])) == [(10, 10), (401, 401)]
    assert [r[0] for r in assert_same_rows(spark, table, 6, [10, 401, 999])] == [10, 401, 999]

    # a partition written without a record gets one computed from its rows
    delta = partition_locations(spark, table, 10)[3]
    os.remove(f"{delta.replace('file:', '')}/{ID_RECORD}")
    assert assert_same_rows(spark, table, 5, [10, 20, 401, 402]) == before[:1] + [
        r for r in state if r[0] in (20, 401)]
    assert state_lookup.read_json(spark, f"{delta}/{ID_RECORD}") == id_record(20, 401)


def test_compaction_folds_the_deltas_and_leaves_the_base(spark, tmp_path, monkeypatch, small_groups):
    """With deltas under FOLD_BASE_AT of the base's bytes, compaction folds the deltas alone:
    the base (commit 0) stays as written; commit 3 folds 1..2 into 2, commit 4 (three
    partitions again) folds 2..3 into 3; every commit's view reads as the semi-join does."""
    monkeypatch.setattr(contract_state, "FOLD_BASE_AT", 100.0)
    stream = Stream(spark, tmp_path)
    land_batches(stream)
    table = stream.changelog + "_state"
    assert sorted(partition_locations(spark, table, 10)) == [0, 3, 4]
    assert state_lookup.read_json(spark, f"{partition_locations(spark, table, 10)[3]}/{ID_RECORD}") == id_record(
        20, 401)  # commit 1's 50 and 210..400, commit 2's 60 and 390, commit 3's 20 and 401
    for below in (1, 2, 3, 4, 5):
        for ids in ([5, 10, 50, 60, 200, 210, 390, 401, 402], list(range(1, 500, 7))):
            assert_same_rows(spark, table, below, ids)
    live = {r[0]: (r[4], r[5]) for r in assert_same_rows(spark, table, 5, [10, 50, 60, 390])}
    assert live[60] == (False, None) and live[50][1] == 3 and live[390][1] == 4 and live[10][1] == 1
    # what compaction returns is the listing it leaves: commit 5's fold of 3..4 into 4
    root = partition_locations(spark, table, 10)[0].rsplit("/_v/", 1)[0]
    left = contract_state.compact_state(spark, table, root, 5)
    listed = partition_locations(spark, table, 5)
    assert sorted(left) == sorted(listed) == [0, 4]
    assert state_lookup.span_of(spark, left.values()) == state_lookup.span_of(spark, listed.values()) == (10, 401)
    assert_same_rows(spark, table, 5, [10, 20, 30, 50, 60, 390, 401])


def test_the_literals_skip_row_groups(spark, tmp_path, small_groups):
    """The merged state of 41 contracts in row groups of 4: a lookup of three ids reads the
    row groups they fall in, the semi-join alone every row."""
    stream = Stream(spark, tmp_path)
    land_batches(stream)
    table = stream.changelog + "_state"
    ids = ids_frame(spark, [50, 250, 9999])
    pruned = scanned(spark, latest_state(spark, table, 3, ids))
    whole = scanned(spark, latest_state(spark, table, 3, ids, prune=False))
    assert whole == 40  # partition 2 alone lies below commit 3: the merged 10..400
    assert pruned <= 2 * ROWS_PER_GROUP, (pruned, whole)


@pytest.mark.parametrize("fold_base_at", [contract_state.FOLD_BASE_AT, 100.0], ids=["as_set", "deltas_only"])
def test_the_ingest_with_the_lookup_on_matches_the_per_contract_fold(spark, tmp_path, monkeypatch, small_groups,
                                                                     fold_base_at):
    """test_contract_ingest's oracle check (random batches against a plain-Python fold), with
    the literal lookup on every commit's read (whatever share of the 6 contracts it lists)
    and compaction at 3 partitions, of every partition or of the deltas alone."""
    import test_contract_ingest

    monkeypatch.setattr(contract_state, "FOLD_BASE_AT", fold_base_at)
    monkeypatch.setattr(state_lookup, "MAX_COVERED", 1.0)
    looked_up = []
    lookup = contract_state.lookup_ranges
    monkeypatch.setattr(contract_state, "lookup_ranges", lambda *a: looked_up.append(lookup(*a)) or looked_up[-1])
    stream = Stream(spark, tmp_path)
    test_contract_ingest.test_set_based_state_matches_the_per_contract_fold(stream, monkeypatch)
    assert len(partition_locations(stream.spark, stream.changelog + "_state", 99)) < 5  # compacted
    assert len(looked_up) == 5 and looked_up[0] == [] and all(r for r in looked_up[1:]), looked_up
