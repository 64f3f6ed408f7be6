"""A pk_table commit stopped after any of its steps leaves the previous commit readable,
and the rerun applies the input exactly once (checked on a `sum` aggregation, where applying
twice would show), with one audit-log commit, one snapshot and time travel intact."""

from __future__ import annotations

import os

import pytest
from pk_project import PkProject

MODEL = """\
{{ config(materialized='pk_table', primary_key=['k'], order_by=['ord'],
          options={'merge-engine': 'aggregation', 'fields.v.aggregate-function': 'sum',
                   'changelog-producer': 'lookup', 'bucket': '4'}) }}
select k, v, ord from values {{ var('rows') }} as t(k, v, ord)
"""
FIRST = "(1, 10, 1), (2, 20, 2), (3, 30, 3), (4, 40, 4), (5, 50, 5)"
SECOND = "(1, 1, 1), (3, 3, 2), (6, 6, 3)"
AFTER_FIRST = {1: 10, 2: 20, 3: 30, 4: 40, 5: 50}
AFTER_SECOND = {1: 11, 2: 20, 3: 33, 4: 40, 5: 50, 6: 6}


@pytest.mark.parametrize("fault", ["logged", "planned", "swapped", "recorded"])  # "staged" is a prefix of "logged"
def test_stopped_commit_is_applied_once_on_rerun(runner, tmp_path, fault):
    pk = PkProject(runner, tmp_path, {"agg": MODEL})
    pk.invoke("run", vars_={"rows": FIRST})

    res = pk.invoke("run", vars_={"rows": SECOND, "lakerank_fault": fault}, expect_success=False)
    assert not res.success
    table = {r["k"]: r["v"] for r in pk.rows("select k, v from lakerank.agg")}
    # Before the record the table may show directories of the dead commit only once swapped.
    assert table in (AFTER_FIRST, AFTER_SECOND)
    if fault != "swapped":
        assert table == (AFTER_SECOND if fault == "recorded" else AFTER_FIRST)

    pk.invoke("run", vars_={"rows": SECOND if fault != "recorded" else "(7, 7, 1)"})
    expected = dict(AFTER_SECOND)
    if fault == "recorded":
        expected[7] = 7
    assert {r["k"]: r["v"] for r in pk.rows("select k, v from lakerank.agg")} == expected

    snaps = pk.query("select snapshot_id from {{ lakerank.snapshots(ref('agg')) }} order by 1")
    assert [r["snapshot_id"] for r in snaps] == ([1, 2, 3] if fault == "recorded" else [1, 2])
    log = pk.query("select rowkind, k, v, _commit_id from {{ lakerank.audit_log(ref('agg')) }}")
    second = sorted((r["rowkind"], r["k"], r["v"]) for r in log if r["_commit_id"] == 2)
    assert second == sorted([("-U", 1, 10), ("+U", 1, 11), ("-U", 3, 30), ("+U", 3, 33), ("+I", 6, 6)])
    as_of_1 = pk.query("select k, v from {{ lakerank.as_of(ref('agg'), 1) }}")
    assert {r["k"]: r["v"] for r in as_of_1} == AFTER_FIRST
    # every directory of a dead attempt is gone: _v/ holds only directories the table uses
    location = next(r["data_type"] for r in pk.rows("describe formatted lakerank.agg")
                    if r["col_name"] == "Location").replace("file:", "")
    used = set()
    for part in pk.rows("show partitions lakerank.agg"):
        spec = part["partition"].replace("=", " = ")
        info = pk.rows(f"describe formatted lakerank.agg partition ({spec})")
        loc = next(r["data_type"] for r in info if r["col_name"] == "Location").replace("file:", "")
        used.add(os.path.relpath(os.path.dirname(loc), os.path.join(location, "_v")))
    assert set(os.listdir(os.path.join(location, "_v"))) == used
