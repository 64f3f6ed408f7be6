"""Defects found from outside (issue F, points 1-3).

1. Wrong ranks after a contract moves to a later or earlier segment, to another project, or
   after a segment was emptied by deletes: the scenarios below, one batch per build.
   test_pipeline_exact lands them beside its generated streams for every rank function
   (so they cost no extra builds) and checks every build against the oracle.
2. Data tests that fail correct builds: every build there is a `dbt build` with its tests;
   a planted wrong rank must fail the per-slice test (test_pipeline_exact, dense_rank).
3. Business times shifted by the zone of the dbt process: test below."""

from __future__ import annotations

import json
import os
import time

import cdc
from checks import assert_all_exact


def ev(op, project_id, contract_id, sign_time, op_ts, amount=None):
    obj = {"op": op, "project_id": project_id, "contract_id": contract_id, "sign_time": sign_time, "op_ts": op_ts}
    if amount is not None:
        obj["amount"] = amount
    return json.dumps(obj)


# Issue F point 1, verbatim: project 21, a segment emptied by a delete, then a move to a later segment.
MOVE_LATER_AFTER_EMPTIED = [
    [ev("+I", 21, 1052, "2024-02-12 08:30:55", "2024-03-05 10:00:00.000"),
     ev("+I", 21, 1002, "2024-03-01 04:23:46", "2024-03-05 10:00:01.000")],
    [ev("+I", 21, 1148, "2024-02-19 20:23:24", "2024-03-06 10:00:00.000")],
    [ev("-D", 21, 1148, "2024-02-19 20:23:24", "2024-03-07 10:00:00.000")],
    [ev("+U", 21, 1002, "2024-03-02 06:23:46", "2024-03-08 10:00:00.000")],
]

# Neighbours of it, each in its own projects so one stream carries them all.
MOVE_EARLIER_AND_LATER = [  # project 31: moves both ways across a contract of another segment
    [ev("+I", 31, 3101, "2024-02-10 09:00:00", "2024-03-05 10:00:00.000"),
     ev("+I", 31, 3102, "2024-02-20 09:00:00", "2024-03-05 10:00:01.000")],
    [ev("+U", 31, 3102, "2024-02-05 09:00:00", "2024-03-06 10:00:00.000")],
    [ev("+U", 31, 3101, "2024-02-25 09:00:00", "2024-03-07 10:00:00.000")],
    [ev("+I", 31, 3103, "2024-02-25 09:00:00", "2024-03-08 10:00:00.000"),
     ev("+U", 31, 3102, "2024-02-26 00:00:00", "2024-03-08 10:00:01.000")],
]
MOVE_TO_ANOTHER_PROJECT = [  # projects 41 and 42
    [ev("+I", 41, 4101, "2024-02-03 09:00:00", "2024-03-05 10:00:00.000"),
     ev("+I", 41, 4102, "2024-02-08 09:00:00", "2024-03-05 10:00:01.000"),
     ev("+I", 42, 4201, "2024-02-05 09:00:00", "2024-03-05 10:00:02.000")],
    [ev("+U", 42, 4102, "2024-02-04 09:00:00", "2024-03-06 10:00:00.000")],
    [ev("+U", 42, 4101, "2024-02-09 09:00:00", "2024-03-07 10:00:00.000")],
    [ev("-D", 42, 4201, "2024-02-05 09:00:00", "2024-03-08 10:00:00.000"),
     ev("+U", 41, 4101, "2024-02-01 00:00:00", "2024-03-08 10:00:01.000")],
]
MOVE_AFTER_SEGMENT_EMPTIED = [  # project 51: a middle segment emptied by deletes, then moves over it
    [ev("+I", 51, 5101, "2024-02-01 09:00:00", "2024-03-05 10:00:00.000"),
     ev("+I", 51, 5102, "2024-02-05 09:00:00", "2024-03-05 10:00:01.000"),
     ev("+I", 51, 5103, "2024-02-05 09:00:00", "2024-03-05 10:00:02.000"),
     ev("+I", 51, 5104, "2024-02-09 09:00:00", "2024-03-05 10:00:03.000")],
    [ev("-D", 51, 5102, "2024-02-05 09:00:00", "2024-03-06 10:00:00.000"),
     ev("-D", 51, 5103, "2024-02-05 09:00:00", "2024-03-06 10:00:01.000")],
    [ev("+U", 51, 5104, "2024-02-06 09:00:00", "2024-03-07 10:00:00.000")],
    [ev("+I", 51, 5105, "2024-02-05 23:59:59", "2024-03-08 10:00:00.000"),
     ev("+U", 51, 5101, "2024-02-10 00:00:00", "2024-03-08 10:00:01.000")],
]
MIDNIGHT_TIES = [  # project 61: contracts at exactly 00:00:00 moving onto and off a boundary
    [ev("+I", 61, 6101, "2024-02-02 00:00:00", "2024-03-05 10:00:00.000"),
     ev("+I", 61, 6102, "2024-02-01 23:59:59", "2024-03-05 10:00:01.000")],
    [ev("+U", 61, 6102, "2024-02-02 00:00:00", "2024-03-06 10:00:00.000")],
    [ev("+I", 61, 6103, "2024-02-03 00:00:00", "2024-03-07 10:00:00.000"),
     ev("-D", 61, 6101, "2024-02-02 00:00:00", "2024-03-07 10:00:01.000")],
    [ev("+U", 61, 6103, "2024-02-01 00:00:00", "2024-03-08 10:00:00.000")],
]
SCENARIOS = [MOVE_LATER_AFTER_EMPTIED, MOVE_EARLIER_AND_LATER, MOVE_TO_ANOTHER_PROJECT,
             MOVE_AFTER_SEGMENT_EMPTIED, MIDNIGHT_TIES]
# test_pipeline_exact lands these beside its generated streams (ids shifted clear of them).
PROJECT_OFFSET = 1_000
CONTRACT_OFFSET = 10_000_000


def shifted(line: str, project_offset: int = PROJECT_OFFSET, contract_offset: int = CONTRACT_OFFSET) -> str:
    """An event line with its ids moved by the offsets (a delete may carry no project)."""
    obj = json.loads(line)
    obj["contract_id"] += contract_offset
    if "project_id" in obj:
        obj["project_id"] += project_offset
    return json.dumps(obj)


def scenario_batch(i: int) -> list[str]:
    """Batch i of every scenario, ids shifted by PROJECT_OFFSET / CONTRACT_OFFSET."""
    return [shifted(line) for scenario in SCENARIOS for line in scenario[i]]


def plant_wrong_rank(lakerank) -> int:
    """Add 1 to one contract's `block_rn` in the rank rewrite's new rows of the ranks in
    blocks (the rows the per-block check reads before the rank tables commit them): the
    contract with the smallest id there, which it returns."""
    spark = lakerank.spark()
    rewrite = "lakerank.int_contract_rank_rewrite"
    contract_id = spark.sql(f"select min(contract_id) from {rewrite} where part = 'blk'").first()[0]
    assert contract_id is not None, "the last rewrite ranked no block"
    cols = [c for c in spark.table(rewrite).columns if c != "part"]
    planted = [f"block_rn + if(contract_id = {contract_id}, 1, 0) as block_rn" if c == "block_rn" else c
               for c in cols]
    rows = spark.sql(f"select {', '.join(planted)} from {rewrite} where part = 'blk'").localCheckpoint()
    rows.count()
    rows.createOrReplaceTempView("planted_blk_rows")
    spark.sql(f"insert overwrite table {rewrite} partition (part = 'blk') select * from planted_blk_rows").collect()
    return contract_id


# Issue F point 3: business times are wall-clock values and read back exactly as landed,
# whatever the zone of the machine, of the dbt process or of the business itself.
BUSINESS_TIMES = [
    ev("+I", 71, 7101, "2024-03-10 02:30:00", "2024-03-10 02:30:00.250"),  # no such time in New York
    ev("+I", 71, 7102, "2024-11-03 01:30:00", "2024-11-03 01:30:00.000"),  # twice in New York
    ev("+I", 71, 7103, "2024-03-10 00:00:00", "2024-03-10 00:00:00.000"),
    ev("+I", 71, 7104, "2024-03-10 23:59:59", "2024-03-11 00:00:00.000"),
    ev("+I", 72, 7201, "2024-07-01 20:03:39", "2024-07-01 20:03:39.000"),
    ev("+I", 72, 7202, "2024-07-01 00:30:00", "2024-07-01 20:03:40.000"),  # summer time, just after 00:00
]


def _set_tz(tz: str) -> None:
    os.environ["TZ"] = tz
    time.tzset()


def test_business_times_read_back_as_landed(lakerank, monkeypatch):
    monkeypatch.setenv("LAKERANK_TIMEZONE", "America/New_York")  # a zone with daylight saving
    old_tz = os.environ.get("TZ")
    try:
        _set_tz("America/New_York")
        oracle = cdc.Oracle()
        path = lakerank.land(BUSINESS_TIMES)
        oracle.consume(os.path.basename(path), BUSINESS_TIMES)
        lakerank.dbt("build")
        assert_all_exact(lakerank, oracle, "dense_rank")
        landed = {json.loads(line)["contract_id"]: json.loads(line)["sign_time"] for line in BUSINESS_TIMES}
        for tz in ("UTC", "America/New_York", "Asia/Shanghai"):
            _set_tz(tz)
            shown = lakerank.dbt(
                "show", "--limit", "100", "--inline",
                "select contract_id, sign_time, segment_start from lakerank.fct_contract_rank",
            ).result.results[0].agate_table
            got = {int(r["contract_id"]): (str(r["sign_time"]), str(r["segment_start"])) for r in shown.rows}
            want = {c: (t, t[:10] + " 00:00:00") for c, t in landed.items()}
            assert got == want, f"dbt show under TZ={tz}: {got} != {want}"
            versions = lakerank.dbt(
                "show", "--limit", "100", "--inline",
                "select ver_start from lakerank.dim_project_rank_version",
            ).result.results[0].agate_table
            assert sorted(str(r["ver_start"]) for r in versions.rows) == sorted(landed.values())
    finally:
        if old_tz is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = old_tz
        time.tzset()
