"""Assertions comparing lakerank's tables with the independent oracle (tests/support/cdc_oracle.py)."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

import pandas as pd

from cdc import SEGMENT_SECONDS, segment_start

TS = "%Y-%m-%d %H:%M:%S"
OPEN_END = "9999-12-31 23:59:59"
RANK_COLS = ["project_id", "contract_id", "sign_time", "segment_start", "mem_rn", "base_max_rn", "asc_rn", "amount"]


def _amount(v):
    if v is None or (isinstance(v, float) and pd.isna(v)):
        return None
    if isinstance(v, str) and len(v) > 3 and v[-3] == "." and v[-2:].isdigit() and v[:-3].lstrip("-").isdigit():
        return v  # already to the cent (decimal(18,2) read as a string)
    return str(Decimal(str(v)).quantize(Decimal("0.01")))


def _none_for_missing(values):
    """A Series or frame as Python objects, NaN/NaT as None (NaN is unequal to itself)."""
    return values.astype(object).where(values.notna(), None)


def _rows(df: pd.DataFrame, cols) -> Counter:
    """The rows as a multiset of tuples (NaN/NaT as None, amounts to the cent), built column
    by column: the wide streams compare ~50,000 rows a table after every build."""
    columns = []
    for c in cols:
        s = df[c]
        if c == "amount":
            columns.append([_amount(v) for v in s.tolist()])
        else:
            columns.append(_none_for_missing(s).tolist())
    return Counter(zip(*columns))


def expected_ranks(oracle, rank_function: str) -> pd.DataFrame:
    ranks = oracle.ranks(rank_function)
    live = oracle.live()[["contract_id", "amount"]]
    df = ranks.merge(live, on="contract_id", how="left")
    df["sign_time"] = df["sign_time"].dt.strftime(TS)
    return df


def assert_fct_exact(lr, oracle, rank_function: str) -> pd.DataFrame:
    fct = lr.table("fct_contract_rank")
    exp = expected_ranks(oracle, rank_function)
    got = _rows(fct, ["project_id", "contract_id", "sign_time", "asc_rn", "amount"])
    want = _rows(exp, ["project_id", "contract_id", "sign_time", "asc_rn", "amount"])
    if got != want:
        g, w = set(got), set(want)
        raise AssertionError(
            f"fct_contract_rank != oracle ({rank_function}): {len(g - w)} unexpected, {len(w - g)} missing;"
            f" e.g. unexpected {sorted(g - w, key=repr)[:5]} missing {sorted(w - g, key=repr)[:5]}"
        )
    # internal consistency of the seed's decomposition
    assert (fct["asc_rn"] == fct["mem_rn"] + fct["base_max_rn"]).all()
    # cdc.segment_start (a floor to SEGMENT_SECONDS since the epoch), for every row at once
    seg = pd.to_datetime(fct["sign_time"]).dt.floor(pd.Timedelta(seconds=SEGMENT_SECONDS)).dt.strftime(TS)
    assert (seg == fct["segment_start"]).all(), "segment_start is not the floor of sign_time"
    assert (fct["mem_rn"] >= 1).all() and (fct["base_max_rn"] >= 0).all()
    return fct


def assert_zipper_exact(lr, oracle, rank_function: str) -> None:
    got = lr.table("dim_project_rank_version")
    exp = oracle.expected_zipper(rank_function)
    exp = exp.assign(
        ver_start=pd.to_datetime(exp["ver_start"]).dt.strftime(TS),
        ver_end=pd.to_datetime(exp["ver_end"]).dt.strftime(TS).fillna(OPEN_END),
    )
    cols = ["project_id", "ver_start", "ver_end", "base_max_rn"]
    g, w = _rows(got, cols), _rows(exp, cols)
    if g != w:
        gs, ws = set(g), set(w)
        raise AssertionError(
            f"zipper != oracle ({rank_function}): unexpected {sorted(gs - ws, key=repr)[:5]} "
            f"missing {sorted(ws - gs, key=repr)[:5]}"
        )


def replay_changelog(changelog: pd.DataFrame) -> pd.DataFrame:
    """Apply a retract changelog in _commit_id order, retractions before additions."""
    state: dict = {}
    contract = RANK_COLS.index("contract_id")
    for _, commit in changelog.sort_values("_commit_id", kind="stable").groupby("_commit_id", sort=True):
        tuples = list(_none_for_missing(commit[RANK_COLS]).itertuples(index=False, name=None))
        is_retract = commit["rowkind"].isin(["-U", "-D"]).tolist()
        for rec in (t for t, r in zip(tuples, is_retract) if r):
            assert state.get(rec[contract]) is not None, f"retraction of a row not present: {rec}"
            old = state.pop(rec[contract])
            assert old == rec, f"retraction does not match the row it retracts: {rec} vs {old}"
        for rec in (t for t, r in zip(tuples, is_retract) if not r):
            assert rec[contract] not in state, f"addition over a live row: {rec}"
            state[rec[contract]] = rec
    return pd.DataFrame(list(state.values()), columns=RANK_COLS)


def assert_changelog_replays(lr, fct: pd.DataFrame) -> pd.DataFrame:
    changelog = lr.table("fct_contract_rank_changelog")
    replayed = replay_changelog(changelog)
    assert _rows(replayed, RANK_COLS) == _rows(fct, RANK_COLS), "changelog replay != fct_contract_rank"
    kinds = set(changelog["rowkind"])
    assert kinds <= {"+I", "-U", "+U", "-D"}
    # -U and +U come in pairs per (commit, contract)
    updates = changelog[changelog["rowkind"].isin(["-U", "+U"])]
    pairs = updates.groupby(["_commit_id", "contract_id"])["rowkind"].apply(sorted)
    assert all(p == ["+U", "-U"] for p in pairs), "unpaired -U/+U in the changelog"
    return changelog


def assert_counts(lr, oracle) -> None:
    log = lr.table("stg_contract_ingest_log")
    got = {k: int(log[k].sum()) for k in ["events_landed", "applied", "noop", "stale", "before_image", "quarantined"]}
    # CDC lines that are not data (or of other tables) are landed and skipped; the oracle's
    # events are the data's (the tests that land such lines check the skipped counts)
    got["events_landed"] -= int(log["skipped"].fillna(0).sum())
    assert got == oracle.counts(), f"ingest counts {got} != oracle {oracle.counts()}"
    assert got["events_landed"] == sum(v for k, v in got.items() if k != "events_landed")
    quarantine = lr.table("stg_contract_quarantine")
    assert len(quarantine) == got["quarantined"]
    assert quarantine["raw_line"].notna().all() and quarantine["reason"].str.len().gt(0).all()


def assert_all_exact(lr, oracle, rank_function: str) -> None:
    fct = assert_fct_exact(lr, oracle, rank_function)
    assert_zipper_exact(lr, oracle, rank_function)
    assert_changelog_replays(lr, fct)
    assert_counts(lr, oracle)


def assert_read_layer_current(lr, published=("fct_contract_rank", "dim_project_rank_version",
                                               "fct_contract_rank_changelog")) -> None:
    """After a build that passed, every reader view (schema `lakerank_read`) returns its mart's
    rows exactly."""
    spark = lr.spark()
    for name in published:
        cols = ", ".join(spark.table(f"lakerank.{name}").columns)
        for a, b in ((f"lakerank_read.{name}", f"lakerank.{name}"), (f"lakerank.{name}", f"lakerank_read.{name}")):
            extra = spark.sql(f"select {cols} from {a} except all select {cols} from {b}").count()
            assert extra == 0, f"{extra} rows of {a} are not in {b}"


# One query a reader in another process runs while builds run: the published commit and the
# read layer's summaries (fact, zipper, changelog), which must equal the marts' summaries
# (:func:`mart_summary`) after the build that published that commit.
_SUMMARIES = (
    " (select count(*) as n, coalesce(sum(asc_rn * contract_id), 0) as s from {s}.fct_contract_rank) as f"
    " cross join (select count(*) as n, coalesce(sum(base_max_rn * hash(ver_start)), 0) as s"
    "             from {s}.dim_project_rank_version) as d"
    " cross join (select count(*) as n from {s}.fct_contract_rank_changelog) as c")
READ_LAYER_SUMMARY = ("select p.commit_id, f.n, f.s, d.n, d.s, c.n"
                      " from (select max(commit_id) as commit_id from lakerank_read.published_commit) as p"
                      " cross join" + _SUMMARIES.format(s="lakerank_read"))


def mart_summary(spark) -> list:
    """The marts' summary (READ_LAYER_SUMMARY's, over the marts themselves), led by the recorded
    commit id of the fact's table of ranks."""
    row = spark.sql("select f.n, f.s, d.n, d.s, c.n from" + _SUMMARIES.format(s="lakerank")).first()
    watermark = {r[0]: r[1] for r in spark.sql("show tblproperties lakerank.int_contract_block_rank").collect()}
    return [int(watermark["lakerank.commit_id"]), *(int(x) for x in row)]


def assert_reads_consistent(report: dict, expected: dict, min_samples: int = 3) -> None:
    """A reader's ``report`` (``samples``: READ_LAYER_SUMMARY rows; ``errors``) against
    ``expected`` (commit id: :func:`mart_summary` after the build that published it): never
    failed, and every sample is one published commit's summary, whole."""
    assert report["errors"] == [] and len(report["samples"]) >= min_samples, report["errors"][:3]
    seen = {tuple(s) for s in report["samples"]}
    inconsistent = [s for s in seen if list(s) != expected.get(s[0])]
    assert inconsistent == [], (inconsistent, expected)


def _changed_keys(before: pd.DataFrame, after: pd.DataFrame, cols) -> tuple[set, set, set]:
    """Keys (contract_id) new in ``after``, gone from ``before``, and on both sides with a
    different row (``cols``, amounts to the cent)."""
    def rows(df):
        values = [[_amount(v) for v in df[c].tolist()] if c == "amount" else _none_for_missing(df[c]).tolist()
                  for c in cols]
        return dict(zip(df["contract_id"].tolist(), zip(*values)))
    b, a = rows(before), rows(after)
    return set(a) - set(b), set(b) - set(a), {k for k in set(a) & set(b) if a[k] != b[k]}


def _with_block_ranks(ranks: pd.DataFrame) -> pd.DataFrame:
    """``expected_ranks`` (dense_rank) as the rank tables store them: the segment, the dense
    rank of the sign time within it (``mem_rn``), the block (the month of the segment start)
    and the dense rank within the block (``block_rn``)."""
    df = ranks.copy()
    times = pd.to_datetime(df["sign_time"])
    df["segment_start"] = [segment_start(t) for t in times]
    df["mem_rn"] = times.groupby([df["project_id"], df["segment_start"]]).rank(method="dense").astype("int64")
    df["block"] = pd.to_datetime(df["segment_start"]).dt.strftime("%Y-%m")
    df["block_rn"] = times.groupby([df["project_id"], df["block"]]).rank(method="dense").astype("int64")
    return df


def _blocks(df: pd.DataFrame) -> dict:
    """Per (project, block) of ``_with_block_ranks`` rows: its positions, offset and first,
    last and next block's first sign time, as the offsets table stores them."""
    g = df.groupby(["project_id", "block"]).agg(positions=("block_rn", "max"), first=("sign_time", "min"),
                                                last=("sign_time", "max")).reset_index()
    g = g.sort_values(["project_id", "block"])
    g["offset"] = g.groupby("project_id")["positions"].cumsum() - g["positions"]
    g["next"] = g.groupby("project_id")["first"].shift(-1)
    return {(p, b): tuple(r) for p, b, *r in g[["project_id", "block", "positions", "offset", "first", "last",
                                                 "next"]].astype(object).itertuples(index=False, name=None)}


def assert_build_summary(lr, counts: dict, before: pd.DataFrame, after: pd.DataFrame) -> None:
    """The newest row of `build_summary` (issue G.4) says what the oracle says the build did:
    the batch's events landed, applied and quarantined (``counts``: ``Oracle.consume``'s
    return); the contracts whose stored rank row (rank in the segment and in the block) is
    new, changed or gone from the expected ranks ``before`` to ``after``; and the projects
    with such a contract or a block whose positions or offset changed. For the dense_rank
    pipeline (mem_rn is the dense rank of sign_time within the segment)."""
    row = lr.spark().sql("select * from lakerank.build_summary order by to_commit desc, finished_at desc"
                         " limit 1").collect()[0].asDict()
    before, after = _with_block_ranks(before), _with_block_ranks(after)
    cols = ["project_id", "sign_time", "amount", "segment_start", "mem_rn", "block", "block_rn"]
    new, gone, changed = _changed_keys(before, after, cols)
    projects = set(after[after["contract_id"].isin(new | changed)]["project_id"]) | set(
        before[before["contract_id"].isin(gone | changed)]["project_id"])
    was, now = _blocks(before), _blocks(after)
    projects |= {p for p, _ in set(was) ^ set(now)} | {k[0] for k in set(was) & set(now) if was[k] != now[k]}
    want = {"status": "success", "events_landed": counts["events_landed"], "events_applied": counts["applied"],
            "events_quarantined": counts["quarantined"], "ranks_inserted": len(new), "ranks_updated": len(changed),
            "ranks_deleted": len(gone), "projects_touched": len(projects)}
    assert {k: row[k] for k in want} == want, row
