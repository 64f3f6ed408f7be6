"""Property tests of the pk_table materialization through real dbt runs.

For random commits (keys, sequence values, NULLs, row kinds), three pk_tables — deduplicate
with a sequence field, aggregation (sum / max ignore-retract / last_non_null_value) and
partial-update with a sequence group — must equal a straightforward Python model of Paimon's
merge rules written here from docs/paimon_semantics.md (independently of python_udfs), after every
commit; `lakerank_lib.as_of(t, c)` must equal the table right after commit c and the replay of the
audit log up to c (lookup changelog); `lakerank_lib.changes` must be the audit log slice.
"""

from __future__ import annotations

import json
from typing import Dict, List, Optional, Tuple

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pk_project import PkProject

COLS = ["k", "s", "v", "m"]
Row = Dict[str, Optional[int]]

MODELS = {
    "p_dedup": {"merge-engine": "deduplicate", "sequence.field": "s", "changelog-producer": "lookup", "bucket": "2"},
    "p_agg": {
        "merge-engine": "aggregation",
        "fields.v.aggregate-function": "sum",
        "fields.m.aggregate-function": "max",
        "fields.m.ignore-retract": "true",
        "changelog-producer": "lookup",
        "bucket": "3",
    },
    "p_pu": {"merge-engine": "partial-update", "fields.s.sequence-group": "v", "changelog-producer": "input"},
}
KINDS = {"p_dedup": ["+I", "+U", "-U", "-D"], "p_agg": ["+I", "+U", "-U", "-D"], "p_pu": ["+I"]}


# -- the model of the rules ----------------------------------------------------------------

def _null_first(x: Optional[int]) -> Tuple[int, int]:
    return (0, 0) if x is None else (1, x)


def dedup_commit(stored: Optional[Row], recs: List[Tuple[str, Row]]) -> Optional[Row]:
    # Order by sequence field (NULL smallest) then arrival; the last record wins and a -U/-D result
    # removes the key; the stored row precedes the commit's rows on ties (docs/paimon_semantics.md#merge-order,
    # #deduplicate).
    order = sorted(range(len(recs)), key=lambda i: (_null_first(recs[i][1]["s"]), i))
    kind, last = recs[order[-1]]
    if stored is not None and _null_first(stored["s"]) > _null_first(last["s"]):
        return stored
    return dict(last) if kind in ("+I", "+U") else None


def _agg_fold(acc: Optional[Row], kind: str, rec: Row) -> Row:
    out = dict(acc) if acc is not None else {"k": rec["k"], "s": None, "v": None, "m": None}
    add = kind in ("+I", "+U")
    # v: sum (retract subtracts; NULL-safe)
    if rec["v"] is not None:
        out["v"] = (out["v"] or 0) + rec["v"] if add else (out["v"] or 0) - rec["v"]
    # m: max, retraction ignored
    if add and rec["m"] is not None:
        out["m"] = rec["m"] if out["m"] is None else max(out["m"], rec["m"])
    # s: last_non_null_value (a retract with a non-NULL value clears it)
    if rec["s"] is not None:
        out["s"] = rec["s"] if add else None
    return out


def agg_commit(stored: Optional[Row], recs: List[Tuple[str, Row]]) -> Optional[Row]:
    # The commit's rows are pre-merged (a lone row passes unchanged); with the lookup producer the
    # merge with the stored row always runs the aggregators; the result is +I
    # (docs/paimon_semantics.md#where-merges-happen, #single-record-shortcut).
    if len(recs) == 1:
        pre_kind, pre = recs[0]
    else:
        acc = None
        for kind, rec in recs:
            acc = _agg_fold(acc, kind, rec)
        pre_kind, pre = "+I", acc
    acc = _agg_fold(None, "+I", stored) if stored is not None else None
    return _agg_fold(acc, pre_kind, pre)


def _pu_fold(acc: Row, rec: Row) -> Row:
    out = dict(acc)
    # group (s) -> v: skipped if the incoming sequence is NULL; newer-or-equal replaces (NULL too)
    if rec["s"] is not None and _null_first(rec["s"]) >= _null_first(out["s"]):
        out["s"], out["v"] = rec["s"], rec["v"]
    # m: outside any group, non-NULL overwrite
    if rec["m"] is not None:
        out["m"] = rec["m"]
    return out


def pu_commit(stored: Optional[Row], recs: List[Tuple[str, Row]]) -> Optional[Row]:
    if len(recs) == 1:
        pre = recs[0][1]
    else:
        pre = {"k": recs[0][1]["k"], "s": None, "v": None, "m": None}
        for _, rec in recs:
            pre = _pu_fold(pre, rec)
    if stored is None:
        return dict(pre)
    start = {"k": stored["k"], "s": None, "v": None, "m": None}
    return _pu_fold(_pu_fold(start, stored), pre)


MERGE = {"p_dedup": dedup_commit, "p_agg": agg_commit, "p_pu": pu_commit}


def apply_commit(model: str, state: Dict[int, Row], rows: List[Tuple[str, Row]]) -> Dict[int, Row]:
    new = dict(state)
    by_key: Dict[int, List[Tuple[str, Row]]] = {}
    for kind, rec in rows:
        by_key.setdefault(rec["k"], []).append((kind, rec))
    for key, recs in by_key.items():
        after = MERGE[model](state.get(key), recs)
        if after is None:
            new.pop(key, None)
        else:
            new[key] = after
    return new


# -- dbt plumbing ------------------------------------------------------------------------------

def _models() -> Dict[str, str]:
    return {
        name: "{{ config(materialized='pk_table', primary_key=['k'], order_by=['ord'], options="
        + json.dumps(options) + ") }}\n"
        "select k, s, v, m, rowkind, ord from {{ var('rows_" + name + "') }}\n"
        for name, options in MODELS.items()
    }


def _values(rows: List[Tuple[str, Row]]) -> str:
    if not rows:
        return ("(select cast(null as int) as k, cast(null as int) as s, cast(null as int) as v, "
                "cast(null as int) as m, cast(null as string) as rowkind, 0 as ord where false)")
    lit = lambda x: "null" if x is None else str(x)  # noqa: E731
    body = ", ".join(
        f"({lit(r['k'])}, {lit(r['s'])}, {lit(r['v'])}, {lit(r['m'])}, '{kind}', {i})"
        for i, (kind, r) in enumerate(rows))
    return (f"(select cast(k as int) as k, cast(s as int) as s, cast(v as int) as v, cast(m as int) as m, "
            f"rowkind, ord from values {body} as t(k, s, v, m, rowkind, ord))")


def _as_state(rows: List[Row]) -> Dict[int, Row]:
    return {r["k"]: {c: r[c] for c in COLS} for r in rows}


row_st = st.fixed_dictionaries({
    "k": st.integers(1, 5),
    "s": st.one_of(st.none(), st.integers(0, 4)),
    "v": st.one_of(st.none(), st.integers(-3, 9)),
    "m": st.one_of(st.none(), st.integers(0, 9)),
})


def commits_st(kinds):
    return st.lists(st.lists(st.tuples(st.sampled_from(kinds), row_st), max_size=7), min_size=3, max_size=3)


def _persisted() -> set:
    """The ids of the embedded session's persisted RDDs (none before its first build)."""
    from pyspark.sql import SparkSession

    spark = SparkSession._instantiatedSession
    if spark is None:
        return set()
    return set(str(spark.sparkContext._jsc.sc().getPersistentRDDs().keys().mkString(",")).split(",")) - {""}


@settings(max_examples=2, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_pk_tables_follow_the_merge_rules(runner, tmp_path_factory, data):
    dbt = PkProject(runner, tmp_path_factory.mktemp("pk_props"), _models())
    commits = {name: data.draw(commits_st(KINDS[name]), label=name) for name in MODELS}
    expected = {name: {} for name in MODELS}
    history: Dict[str, List[Dict[int, Row]]] = {name: [] for name in MODELS}
    for c in range(3):
        vars_ = {f"rows_{name}": _values(commits[name][c]) for name in MODELS}
        held = _persisted()
        dbt.invoke("run", *(["--full-refresh"] if c == 0 else []), vars_=vars_)
        # a commit frees the rows it materialized (a dropped view's checkpoint would stay until
        # a JVM garbage collection: memory growing with every run of a long-lived session)
        assert _persisted() - held == set(), f"commit {c} left persisted RDDs"
        for name in MODELS:
            expected[name] = apply_commit(name, expected[name], commits[name][c])
            got = _as_state(dbt.rows(f"select {', '.join(COLS)} from lakerank.{name}"))
            assert got == expected[name], f"{name} after commit {c}: inputs {commits[name][: c + 1]}"
            history[name].append(got)

    for name in MODELS:
        snaps = dbt.rows(f"select snapshot_id from lakerank.{name}__snapshots")
        n_commits = len(snaps)
        # a commit whose input is empty records no snapshot; map snapshots to non-empty commits
        non_empty = [i for i in range(3) if commits[name][i]]
        assert n_commits == len(non_empty)
        for snap, commit_index in enumerate(non_empty, start=1):
            sql = dbt.compiled(
                "select k, s, v, m from {{ lakerank_lib.as_of(ref('" + name + "'), " + str(snap) + ") }}")
            assert _as_state(dbt.rows(sql)) == history[name][commit_index], f"{name} as_of {snap}"
            if MODELS[name].get("changelog-producer") == "lookup":
                log = dbt.rows(dbt.compiled(
                    "select * from {{ lakerank_lib.changes(ref('" + name + "'), 0, " + str(snap) + ") }}"))
                replay: Dict[int, Row] = {}
                for r in sorted(log, key=lambda r: (r["_commit_id"], r["rowkind"] in ("+I", "+U"))):
                    if r["rowkind"] in ("+I", "+U"):
                        replay[r["k"]] = {c: r[c] for c in COLS}
                    else:
                        assert replay.pop(r["k"]) == {c: r[c] for c in COLS}, "retraction of a row not live"
                assert replay == history[name][commit_index], f"{name} audit replay up to {snap}"
