#!/usr/bin/env python3
"""Shift probe: what a batch's commits of the fact and the zipper write, and what reading the
fact would cost if `base_max_rn` were resolved at read time (figures: docs/decisions/0002-batch-cost.md,
"Writing what changed, not what shifted").

On a home that `scripts/bench.py --keep` left (one SparkSession on it, nothing else running):

1. per commit of `fct_contract_rank` and `dim_project_rank_version`: the after-images in its
   audit log, and how many of them changed only by a shift (their own values equal their
   before image's, only `base_max_rn`/`asc_rn` differ);
2. per base granularity (the day segment, month, quarter, year): how many rows a per-(project,
   period) base table would have, and how many shift-only rows it would absorb (rows in a later
   period of their project than every row the commit changed for its own values);
3. warm read timings, four runs each, of the fact's base (a plain parquet scan), the fact's
   merge-on-read view, and a core table (the fact without the base columns) joined to a
   per-(project, segment) base: all rows and the largest project. The join is first checked
   equal to the view (`except all` both ways). Its two tables are dropped at the end.

    python3 scripts/probes/probe_shift.py <LAKERANK_HOME of a kept bench home>
"""

from __future__ import annotations

import sys
import time

from dbt.adapters.lakerank.session import process_session, start_embedded_session

SETTINGS = {
    "spark.master": "local[2]",
    "spark.driver.memory": "4g",
    "spark.sql.session.timeZone": "Asia/Shanghai",
    "spark.sql.timestampType": "TIMESTAMP_NTZ",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.adaptive.enabled": "true",
    "spark.buffer.pageSize": "2m",
}
OWN_VALUES = {
    "fct_contract_rank": (["contract_id"], ["project_id", "sign_time", "amount", "mem_rn", "segment_start"]),
    "dim_project_rank_version": (["project_id", "ver_start"], ["ver_end", "segment_start"]),
}
PERIODS = ["day", "month", "quarter", "year"]


def upserts_sql(table: str) -> str:
    """Each after-image of the table's incremental commits, with whether it is a shift only."""
    key, own = OWN_VALUES[table]
    on = " and ".join(f"b.{k} = a.{k}" for k in key)
    same = " and ".join(f"b.{c} <=> a.{c}" for c in own)
    return f"""select a.*, (b.rowkind is not null and {same}) as shift_only
               from lakerank.{table}__audit_log as a
               left join lakerank.{table}__audit_log as b on {on} and b._commit_id = a._commit_id and b.rowkind = '-U'
               where a.rowkind in ('+I', '+U') and a._commit_id >= 1"""


def absorbed_sql(period: str) -> str:
    """Per fact commit: after-images, shift-only ones, and those a per-(project, period) base absorbs."""
    return f"""with up as ({upserts_sql("fct_contract_rank")}),
               own as (select _commit_id, project_id, min(date_trunc('{period}', segment_start)) as first_period
                       from up where not shift_only group by _commit_id, project_id)
               select up._commit_id, count(*), sum(cast(shift_only as int)),
                      sum(case when shift_only and date_trunc('{period}', up.segment_start) > own.first_period
                               then 1 else 0 end)
               from up left join own on up._commit_id = own._commit_id and up.project_id = own.project_id
               group by up._commit_id order by 1"""


JOINED = """select f.*, b.base_positions as base_max_rn, f.mem_rn + b.base_positions as asc_rn
            from lakerank.probe_fct_core as f inner join lakerank.probe_segment_base as b
              on f.project_id = b.project_id and f.segment_start = b.segment_start"""


def main(home: str) -> None:
    start_embedded_session(home, SETTINGS)
    spark = process_session()

    def rows(sql: str):
        return spark.sql(sql).collect()

    def timed(label: str, sql: str, runs: int = 4) -> None:
        frame, seconds = spark.sql(sql), []
        for _ in range(runs):
            began = time.time()
            frame.write.format("noop").mode("overwrite").save()
            seconds.append(time.time() - began)
        print(f"{label}: " + " / ".join(f"{s:.2f}" for s in seconds), flush=True)

    for table in OWN_VALUES:
        counts = rows(
            f"select _commit_id, count(*), sum(cast(shift_only as int)) from ({upserts_sql(table)}) "
            "group by _commit_id order by 1"
        )
        print(f"{table}: (commit, after-images, shift only) {[tuple(r) for r in counts]}", flush=True)
    for period in PERIODS:
        size = rows(
            "select count(distinct project_id, date_trunc('" + period + "', segment_start)) "
            "from lakerank.fct_contract_rank"
        )[0][0]
        print(
            f"per (project, {period}) base: {size} rows; (commit, after-images, shift only, absorbed) "
            f"{[tuple(r) for r in rows(absorbed_sql(period))]}",
            flush=True,
        )

    for name in ("probe_segment_base", "probe_fct_core"):
        spark.sql(f"drop table if exists lakerank.{name}")
    spark.sql("""create table lakerank.probe_segment_base using parquet as
                 select project_id, segment_start, max(base_max_rn) as base_positions
                 from lakerank.fct_contract_rank group by project_id, segment_start
                 order by project_id, segment_start""")
    spark.sql("""create table lakerank.probe_fct_core using parquet as
                 select project_id, contract_id, sign_time, amount, mem_rn, segment_start
                 from lakerank.fct_contract_rank order by project_id, segment_start""")
    try:
        view = "select * from lakerank.fct_contract_rank"
        differ = [
            rows(f"select count(*) from (({a}) except all ({b}))")[0][0] for a, b in ((JOINED, view), (view, JOINED))
        ]
        assert differ == [0, 0], f"the join differs from the view: {differ}"
        largest = rows(
            "select project_id from lakerank.probe_fct_core group by project_id order by count(*) desc limit 1"
        )[0][0]
        for label, where in (("all rows", ""), (f"project {largest}", f" where project_id = {largest}")):
            timed(f"{label}, the fact's base (plain scan)", f"select * from lakerank.fct_contract_rank__base{where}")
            timed(f"{label}, the fact's view", f"{view}{where}")
            timed(f"{label}, core join per-segment base", f"select * from ({JOINED}){where}")
    finally:
        for name in ("probe_segment_base", "probe_fct_core"):
            spark.sql(f"drop table if exists lakerank.{name}")


if __name__ == "__main__":
    main(sys.argv[1])
