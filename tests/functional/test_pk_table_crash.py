"""A pk_table commit stopped after any of its steps leaves the previous commit readable,
and the rerun applies the input exactly once (checked on a `sum` aggregation, where applying
twice would show), with one audit-log commit, one snapshot and time travel intact.

The fault points run side by side: one table per fault point in one project, each stopped
at its own step by the same `dbt run` (`lakerank_fault` as a mapping). Besides stops between
steps, a write that fails part-way (disk full, injected: `write:<location part>` leaves a torn
parquet file in the directory being written and raises ENOSPC) in each of the commit's four
writes: the staged buckets, the state log, the audit log and the snapshot row."""

from __future__ import annotations

import os

import pytest

from crash import DBT, dbt_subprocess
from pk_project import PkProject

MODEL = """\
{{ config(materialized='pk_table', primary_key=['k'], order_by=['ord'],
          options={'merge-engine': 'aggregation', 'fields.v.aggregate-function': 'sum',
                   'changelog-producer': 'lookup', 'bucket': '4'}) }}
select k, v, ord from values {{ var('rows_' ~ this.name, var('rows')) }} as t(k, v, ord)
"""
STOPS = ["logged", "planned", "swapped", "recorded"]  # "staged" is a prefix of "logged"
WRITE_FAULTS = {"disk_full_stage": "write:/_v/c", "disk_full_state": "write:__state_log",
                "disk_full_audit": "write:__audit_log", "disk_full_snapshot": "write:__snapshots"}
FAULTS = STOPS + list(WRITE_FAULTS)
FIRST = "(1, 10, 1), (2, 20, 2), (3, 30, 3), (4, 40, 4), (5, 50, 5)"
SECOND = "(1, 1, 1), (3, 3, 2), (6, 6, 3)"
AFTER_FIRST = {1: 10, 2: 20, 3: 30, 4: 40, 5: 50}
AFTER_SECOND = {1: 11, 2: 20, 3: 33, 4: 40, 5: 50, 6: 6}


def _union(select: str) -> str:
    """One inline query over every model: `select` with {m} for the model name."""
    return " union all ".join(f"select '{m}' as m, * from ({select.format(m=m)})" for m in FAULTS)


def _by_model(rows):
    """Rows of a :func:`_union` query, by model."""
    out = {m: [] for m in FAULTS}
    for r in rows:
        out[r.pop("m")].append(r)
    return out


def _table(pk: PkProject, m: str) -> dict:
    return {r["k"]: r["v"] for r in pk.rows(f"select k, v from lakerank.{m}")}


def test_stopped_commit_is_applied_once_on_rerun(runner, tmp_path):
    pk = PkProject(runner, tmp_path, {m: MODEL for m in FAULTS})
    pk.invoke("run", vars_={"rows": FIRST})
    _assert_fault_hook_is_test_only(pk)

    res = pk.invoke("run", vars_={"rows": SECOND,
                                  "lakerank_fault": {m: WRITE_FAULTS.get(m, m) for m in FAULTS}},
                    expect_success=False)
    status = {r.node.name: str(getattr(r.status, "value", r.status)) for r in res.result.results}
    assert status == {m: "error" for m in FAULTS}, status
    messages = {r.node.name: str(r.message) for r in res.result.results}
    for m in WRITE_FAULTS:
        assert "No space left on device" in messages[m], messages[m]
    for fault in FAULTS:
        table = _table(pk, fault)
        # Before the record the table may show directories of the dead commit only once swapped.
        assert table in (AFTER_FIRST, AFTER_SECOND), fault
        if fault != "swapped":
            assert table == (AFTER_SECOND if fault == "recorded" else AFTER_FIRST), fault

    pk.invoke("run", vars_={"rows": SECOND, "rows_recorded": "(7, 7, 1)"})
    for fault in FAULTS:
        expected = dict(AFTER_SECOND)
        if fault == "recorded":
            expected[7] = 7
        assert _table(pk, fault) == expected, fault

    snaps, logs, as_of_1 = map(_by_model, pk.queries(
        _union("select snapshot_id from {{{{ lakerank_lib.snapshots(ref('{m}')) }}}}"),
        _union("select rowkind, k, v, _commit_id from {{{{ lakerank_lib.audit_log(ref('{m}')) }}}}"),
        _union("select k, v from {{{{ lakerank_lib.as_of(ref('{m}'), 1) }}}}")))
    for fault in FAULTS:
        assert sorted(r["snapshot_id"] for r in snaps[fault]) == ([1, 2, 3] if fault == "recorded" else [1, 2])
        second = sorted((r["rowkind"], r["k"], r["v"]) for r in logs[fault] if r["_commit_id"] == 2)
        assert second == sorted([("-U", 1, 10), ("+U", 1, 11), ("-U", 3, 30), ("+U", 3, 33), ("+I", 6, 6)]), fault
        assert {r["k"]: r["v"] for r in as_of_1[fault]} == AFTER_FIRST, fault
        _assert_no_orphan_directories(pk, fault)


def _assert_fault_hook_is_test_only(pk: PkProject) -> None:
    """Outside the tests' environment (LAKERANK_TEST_HOOKS) the fault var is refused: the
    run fails at once with a message naming it, and the table is unchanged."""
    os.environ.pop("LAKERANK_TEST_HOOKS")
    try:
        res = pk.invoke("run", "--select", "logged", vars_={"rows": SECOND, "lakerank_fault": "logged"},
                        expect_success=False)
    finally:
        os.environ["LAKERANK_TEST_HOOKS"] = "1"
    assert [str(r.status) for r in res.result.results] == ["error"]
    assert "needs LAKERANK_TEST_HOOKS=1" in str(res.result.results[0].message)
    assert _table(pk, "logged") == AFTER_FIRST


def _assert_no_orphan_directories(pk: PkProject, model: str) -> None:
    """Every directory of a dead attempt is gone: _v/ holds only directories the table uses."""
    location = next(r["data_type"] for r in pk.rows(f"describe formatted lakerank.{model}")
                    if r["col_name"] == "Location").replace("file:", "")
    used = set()
    for part in pk.rows(f"show partitions lakerank.{model}"):
        spec = part["partition"].replace("=", " = ")
        info = pk.rows(f"describe formatted lakerank.{model} partition ({spec})")
        loc = next(r["data_type"] for r in info if r["col_name"] == "Location").replace("file:", "")
        used.add(os.path.relpath(os.path.dirname(loc), os.path.join(location, "_v")))
    assert set(os.listdir(os.path.join(location, "_v"))) == used, model


# Issue F.4 for each merge engine: a pk_table's dbt process and JVM killed (SIGKILL, the
# whole process group) after each step of a commit, in real processes; the rerun with the
# same input ends where an uninterrupted project fed the same inputs ends.
ENGINE_OPTIONS = {
    "e_dedup": "{'merge-engine': 'deduplicate', 'changelog-producer': 'lookup', 'bucket': '4'}",
    "e_partial": "{'merge-engine': 'partial-update', 'changelog-producer': 'lookup', 'bucket': '2'}",
    "e_agg": "{'merge-engine': 'aggregation', 'fields.v.aggregate-function': 'sum',"
             " 'changelog-producer': 'lookup', 'bucket': '4'}",
    "e_first": "{'merge-engine': 'first-row', 'changelog-producer': 'lookup', 'bucket': '2'}",
}
ENGINE_MODEL = """\
{{{{ config(materialized='pk_table', primary_key=['k'], options={options}) }}}}
select k, v from values {{{{ var('rows') }}}} as t(k, v, ord)
"""
THIRD = "(2, 2, 1), (6, 60, 2), (7, 7, 3)"
# (model, step): every engine killed, every step hit, in one process each
ENGINE_KILLS = [("e_dedup", "staged"), ("e_partial", "logged"), ("e_agg", "planned"),
                ("e_first", "swapped"), ("e_dedup", "recorded")]


def _engine_state(pk: PkProject) -> dict:
    """Each engine table's rows, its audit log by commit, and its snapshot ids (one query each,
    compiled together)."""
    def union(select: str) -> str:
        return " union all ".join(f"select '{m}' as m, * from ({select.format(m=m)})" for m in ENGINE_OPTIONS)

    rows, log, snaps = pk.queries(
        union("select k, v from {{{{ ref('{m}') }}}}"),
        union("select _commit_id, rowkind, k, v from {{{{ lakerank_lib.audit_log(ref('{m}')) }}}}"),
        union("select snapshot_id from {{{{ lakerank_lib.snapshots(ref('{m}')) }}}}"))
    return {m: {"rows": sorted((r["k"], r["v"]) for r in rows if r["m"] == m),
                "log": sorted((r["_commit_id"], r["rowkind"], r["k"], r["v"]) for r in log if r["m"] == m),
                "snapshots": sorted(r["snapshot_id"] for r in snaps if r["m"] == m)}
            for m in ENGINE_OPTIONS}


@pytest.mark.skipif(DBT is None, reason="dbt CLI not on PATH")
def test_killed_commits_of_every_merge_engine_end_as_uninterrupted(runner, tmp_path):
    from dbt.adapters.lakerank.session import stop_embedded_session

    models = {m: ENGINE_MODEL.format(options=o) for m, o in ENGINE_OPTIONS.items()}
    inputs = [FIRST, SECOND, THIRD]
    reference = PkProject(runner, tmp_path / "reference", models)
    for rows in inputs:
        reference.invoke("run", vars_={"rows": rows})
        # A commit killed after its record is durable: the retry with the same input is a
        # commit of its own (applying it again), in the killed project as here.
        recorded = [m for m, step in ENGINE_KILLS if step == "recorded"]
        if rows == SECOND and recorded:
            reference.invoke("run", "--select", *recorded, vars_={"rows": rows})
    expected = _engine_state(reference)
    stop_embedded_session()  # the killed processes open their own home's metastore

    pk = PkProject(runner, tmp_path / "killed", models)
    killed_runs = 0
    killed, rc, out = dbt_subprocess(pk.home, "run", project=pk.project, vars={"rows": FIRST})
    assert rc == 0, out[-3000:]
    for model, step in ENGINE_KILLS:
        killed, rc, out = dbt_subprocess(pk.home, "run", "--select", model, project=pk.project,
                                         vars={"rows": SECOND}, fault=f"kill:{step}")
        assert killed, f"{model} never reached {step} (rc {rc}):\n{out[-3000:]}"
        killed_runs += 1
    # The retry and the next input in this process (the last kill is behind it).
    pk.invoke("run", vars_={"rows": SECOND})
    pk.invoke("run", vars_={"rows": THIRD})
    assert killed_runs == len(ENGINE_KILLS)
    assert _engine_state(pk) == expected
    for m in ENGINE_OPTIONS:
        _assert_no_orphan_directories(pk, m)
