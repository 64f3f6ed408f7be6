#!/usr/bin/env python3
"""Spark's own floor for one batch (issue 51, step 5; docs/decisions/0004-one-commit-per-batch.md).

The rank core of one micro-batch as the fewest Spark statements we know, each reading its
inputs once, run in one warm SparkSession outside dbt, on the state lakerank keeps, written
as parquet; beside it, in the same session, the columnar re-rank of every event (the
yardstick of scripts/bench.py) and that re-rank plus its changelog.

State (built once, with DuckDB, from the bench's history distribution: 50,000 projects, a
fifth of the contracts in 100 large ones, sign times over three years; every contract one
`+I`): the ingest's per-contract state, the fact (`fct`: ranks, `mem_rn`, `base_max_rn`,
sorted by project and segment), the zipper (`dim`: one version per project and distinct sign
time), the accumulation (`acc`), and the yardstick's columnar event table; each a compacted
parquet base (the best case for lakerank: no merge-on-read changes to apply). The batch is the
bench's (`BatchMaker`: 2 % late, 1 % updates with moves, 0.5 % deletes, 1 % duplicates).

Statements of the batch (dense_rank, day segments; each writes one parquet directory):
  1. ingest: the batch's lines, each contract's last event, joined with the stored state;
     writes each effective contract's before and after image (the changelog and state delta);
  2. inputs: the touched projects (`touched_from`: the earliest segment a before or after
     image touches) and their rows of fct (from `touched_from`), dim (the version in force at
     `touched_from` and after) and acc, staged once;
  3. results: the touched tails re-ranked, their zipper versions and accumulation rows, and
     each table's changes against its old rows (-U/+U, +I, -D), written as one parquet
     partitioned by table: what the three audit partitions hold.
  1b. the ingest again, with the state read under a literal list of the batch's ids that can be
     stored (up to the highest stored id; the others are new), from a copy of the state in row
     groups of 10,000 rows, so that Parquet's statistics skip the rest (checked equal to 1).
The alternative interface (--offsets): ranks resolved at read time from per-(project, month)
offsets. The state keeps each contract's rank inside its (project, month) block and one row
per block with the positions its project uses before it; a batch stages the touched blocks'
rows and its projects' offsets (2), then rewrites the touched blocks' local ranks and the
projects' changed offsets (3), and a reader computes asc_rn = local rank + offset; step 4
derives from them the per-contract changelog `fct_contract_rank_changelog` keeps (a pair for
every contract whose asc_rn moved), for the design that keeps that interface.
With --blocks (spike_sql_blocks.py): the same steps on local ranks clustered by block and read
under literal predicates of the touched blocks (2p, 4p), and the results computed in one pass
(3p) and planned whole (3q), each checked equal to its unpruned step.

Each step is timed warm (--repeat runs, median), with its Spark jobs and bytes read (Spark's
event log over the step's window, scripts/bench_eventlog.py). The spike's output is checked
against DuckDB: the old fact with the fct changes applied equals the re-rank of every event.

    python3 scripts/probes/spike_batch_floor.py --history 1e6 --work /tmp/spike
    python3 scripts/probes/spike_batch_floor.py --history 1e7 --work /tmp/spike --offsets
    python3 scripts/probes/spike_batch_floor.py --history 1e7 --work /tmp/spike --blocks
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import bench_eventlog  # noqa: E402
import bench_streams  # noqa: E402  (the bench's batch generator and constants)
from spike_check import check  # noqa: E402
from spike_driver import check_driver, driver_results  # noqa: E402
from spike_sql import (  # noqa: E402
    changelog_sql,
    ingest_sql,
    inputs_sql,
    naive_rank_sql,
    offsets_changelog_sql,
    offsets_inputs_sql,
    offsets_results_sql,
    results_sql,
)
from spike_sql_blocks import (  # noqa: E402
    block_literals,
    build_blocks_state,
    check_blocks,
    loc_tails_rel,
    offsets_inputs_pruned_sql,
    offsets_results_fused_sql,
)

# 3q: the fused results planned whole (no adaptive stages, each a Spark job; no broadcasts, each a job)
ONE_PLAN = {"spark.sql.adaptive.enabled": "false", "spark.sql.autoBroadcastJoinThreshold": "-1"}

OPEN_END = "timestamp_ntz'9999-12-31 00:00:00'"


def spark_session(work: pathlib.Path, evlog: pathlib.Path):
    """The spike's SparkSession (local[2], the JVM's defaults), its event log in `evlog`."""
    from pyspark.sql import SparkSession

    conf = dict(kv.split("=", 1) for kv in bench_eventlog.conf(evlog).split(","))
    builder = (SparkSession.builder.master("local[2]").config("spark.driver.memory", "4g")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
               .config("spark.sql.adaptive.enabled", "true").config("spark.sql.timestampType", "TIMESTAMP_NTZ")
               .config("spark.sql.session.timeZone", "UTC").config("spark.buffer.pageSize", "2m")
               .config("spark.local.dir", str(work / "tmp")))
    for k, v in conf.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


# ---------------------------------------------------------------------------------------
# State, built once with DuckDB
# ---------------------------------------------------------------------------------------

def build_state(state: pathlib.Path, n: int, projects: int) -> None:
    import duckdb

    state.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    con.execute("set threads = 2")
    con.execute(f"select setseed({(n % 1000) / 1000})")
    large = min(bench_streams.N_LARGE, projects)
    span_s = bench_streams.HISTORY_DAYS * 86400
    con.execute(f"""
        create table events as
        select
            '+I' as op,
            case when random() < 0.2 then 1 + cast(floor(random() * {large}) as bigint)
                 else {large} + 1 + cast(floor(random() * {max(1, projects - large)}) as bigint)
            end as project_id,
            i as contract_id,
            cast(timestamp '{bench_streams.HISTORY_START:%Y-%m-%d %H:%M:%S}'
                 + to_seconds(cast(floor(random() * {span_s}) as bigint)) as timestamp) as sign_time,
            cast(round(random() * 100000, 2) as decimal(18, 2)) as amount,
            cast(timestamp '2021-12-31 00:00:00' + to_microseconds(i * 1000) as timestamp) as op_ts,
            'history_0000.jsonl' as source_file
        from range(1, {n + 1}) as t(i)
    """)

    def out(name: str, sql: str) -> None:
        con.execute(f"copy ({sql}) to '{state / name}' (format parquet, row_group_size 1000000)")

    out("events", "select * from events")  # the yardstick's columnar table
    out("state", "select contract_id, op_ts, true as live, project_id, sign_time, amount "
                 "from events order by contract_id")
    # the same, in row groups of 10,000 rows, for the ingest that looks ids up by literal
    con.execute(f"copy (select * from read_parquet('{state / 'state'}')) to '{state / 'state_fine'}' "
                "(format parquet, row_group_size 10000)")
    con.execute("""
        create table fct as
        select project_id, contract_id, sign_time, amount, date_trunc('day', sign_time) as segment_start,
               cast(dense_rank() over (partition by project_id, date_trunc('day', sign_time) order by sign_time)
                    as bigint) as mem_rn,
               cast(dense_rank() over (partition by project_id order by sign_time) as bigint) as asc_rn
        from events
    """)
    out("fct", "select project_id, contract_id, sign_time, amount, segment_start, mem_rn, "
               "asc_rn - mem_rn as base_max_rn, asc_rn from fct order by project_id, segment_start")
    out("dim", """
        select project_id, sign_time as ver_start,
               lead(sign_time) over (partition by project_id order by sign_time) as ver_end,
               max(asc_rn) as base_max_rn, max(segment_start) as segment_start
        from fct group by project_id, sign_time order by project_id, ver_start""")
    out("acc", "select project_id, max(asc_rn) as max_rn, max(sign_time) as max_event_time "
               "from fct group by project_id order by project_id")
    # The alternative: local ranks per (project, month) block and per-block offsets.
    out("loc", """
        select project_id, contract_id, sign_time, amount, date_trunc('month', sign_time) as block,
               cast(dense_rank() over (partition by project_id, date_trunc('month', sign_time)
                    order by sign_time) as bigint) as local_rn
        from events order by project_id, block""")
    out("off", """
        select project_id, block, positions,
               coalesce(sum(positions) over (partition by project_id order by block
                        rows between unbounded preceding and 1 preceding), 0) as block_offset
        from (select project_id, date_trunc('month', sign_time) as block, count(distinct sign_time) as positions
              from events group by all)
        order by project_id, block""")
    build_blocks_state(con, state)  # the local ranks clustered by block (--blocks)
    out("prev_rank", "select project_id, contract_id, sign_time, amount, asc_rn from fct")  # the last ranks


# ---------------------------------------------------------------------------------------

def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--history", default="1e7")
    p.add_argument("--batch-events", type=int, default=10_000)
    p.add_argument("--projects", type=int, default=bench_streams.N_PROJECTS)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--work", required=True)
    p.add_argument("--offsets", action="store_true", help="also the offsets alternative")
    p.add_argument("--blocks", action="store_true",
                   help="also the offsets alternative's steps on local ranks clustered by block (2p, 3p, 3q, 4p; "
                        "implies --offsets)")
    p.add_argument("--driver", action="store_true",
                   help="also the results computed in the driver (spike_driver.py; implies --offsets)")
    p.add_argument("--no-yardstick", action="store_true")
    p.add_argument("--keep", action="store_true", help="keep the state (and reuse a kept one)")
    p.add_argument("--out", default=None, help="JSON results")
    args = p.parse_args()
    args.offsets = args.offsets or args.blocks or args.driver
    n = int(float(args.history))
    work = pathlib.Path(args.work)
    state, out, evlog = work / f"state_{n}", work / f"out_{n}", work / f"eventlog_{n}"
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(evlog, ignore_errors=True)
    out.mkdir(parents=True)
    figures: dict = {"history": n, "batch_events": args.batch_events, "load_before": os.getloadavg()}
    if not (args.keep and (state / "prev_rank").exists()):
        shutil.rmtree(state, ignore_errors=True)
        t = time.time()
        build_state(state, n, args.projects)
        figures["state_build_s"] = round(time.time() - t, 1)
        print(f"state built with DuckDB in {figures['state_build_s']} s", flush=True)
    maker = bench_streams.BatchMaker(n, args.projects, seed=n + 1)
    batch_file = out / "batch_0000.jsonl"
    batch_file.write_text("\n".join(maker.batch(args.batch_events)) + "\n")

    spark = spark_session(work, evlog)

    steps: dict[str, list[dict]] = {}

    def step(name: str, sql, dest: pathlib.Path, partition_by: str | None = None, conf: dict | None = None,
             run=None) -> None:
        for k, v in (conf or {}).items():  # the step's own settings, unset after it
            spark.conf.set(k, v)
        t0 = time.time()  # sql: a statement, or a function that makes it (its work timed too)
        parts = run(dest) if run else None  # run: the whole step, writing dest itself (--driver)
        if not run:
            w = spark.sql(sql if isinstance(sql, str) else sql()).write.mode("overwrite")
            (w.partitionBy(partition_by) if partition_by else w).parquet(str(dest))
        t1 = time.time()
        for k in conf or {}:
            spark.conf.unset(k)
        time.sleep(0.3)
        m = bench_eventlog.summarise(evlog, t0, t1)
        rows = spark.read.parquet(str(dest)).count()
        steps.setdefault(name, []).append({"seconds": round(t1 - t0, 2), "spark_jobs": m["spark_jobs"],
                                           "mb_read": round(m["bytes_read"] / 1e6, 1),
                                           "records_read": m["records_read"], "rows": rows,
                                           "load": round(os.getloadavg()[0], 2), **(parts or {})})
        print(f"  {name}: {steps[name][-1]}", flush=True)

    # The yardstick's events: the history's plus the batch's, as the incremental model holds them.
    batch_events_sql = f"""
        select e.op, e.project_id, e.contract_id, to_timestamp(e.sign_time, 'yyyy-MM-dd HH:mm:ss') as sign_time,
               e.amount, to_timestamp(e.op_ts, 'yyyy-MM-dd HH:mm:ss.SSS') as op_ts, 'batch_0000.jsonl' as source_file
        from (select from_json(value, 'op string, project_id bigint, contract_id bigint, sign_time string,
                                       amount decimal(18, 2), op_ts string') as e from text.`{batch_file}`)
        where e.op in ('+I', '+U', '-D')"""
    spark.sql(batch_events_sql).write.mode("overwrite").parquet(str(out / "batch_events"))
    events = f"(select * from parquet.`{state}/events` union all select * from parquet.`{out}/batch_events`)"
    # 1b's literal list: the batch's ids up to the highest stored one (the driver has the lines)
    known_ids = sorted({json.loads(line)["contract_id"] for line in batch_file.read_text().splitlines()
                        if json.loads(line)["contract_id"] <= n})
    spark.conf.set("spark.sql.parquet.pushdown.inFilterThreshold", str(max(10, len(known_ids))))

    lit: dict = {}  # --blocks: the touched blocks as literals, made by 2p from step 1's output

    def pruned_inputs() -> str:
        # (Spark pushes an IN list longer than inFilterThreshold, set for 1b above, as its range: a
        # chain of thousands of equalities overflows the stack of Parquet's filter)
        lit.update(block_literals(spark, out / "changes"))
        return offsets_inputs_pruned_sql(out / "changes", state, lit)

    for r in range(args.repeat + 1):  # a first round warms the JVM up, not counted
        print(f"round {r}{' (warm-up, not counted)' if r == 0 else ''}", flush=True)
        step("1 ingest", ingest_sql(batch_file, state), out / "changes")
        step("1b ingest, ids as literals", ingest_sql(batch_file, state, known_ids, n), out / "changes_b")
        step("2 inputs", inputs_sql(out / "changes", state), out / "inputs", "part")
        step("3 results", results_sql(out / "inputs"), out / "results", "part")
        if args.offsets:
            step("offsets: 2 inputs", offsets_inputs_sql(out / "changes", state), out / "offset_inputs", "part")
            step("offsets: 3 results", offsets_results_sql(out / "offset_inputs"), out / "offset_changes", "part")
            step("offsets: 4 changelog, stored per contract", offsets_changelog_sql(out / "offset_changes", state),
                 out / "offset_changelog")
            if args.driver:
                step("offsets: 2+3d, results in the driver", None, out / "offset_changes_d",
                     run=lambda d: driver_results(spark, offsets_inputs_sql(out / "changes", state), d))
            if args.blocks:
                step("offsets: 2p inputs, pruned", pruned_inputs, out / "offset_inputs_p", "part")
                step("offsets: 3p results, fused", offsets_results_fused_sql(out / "offset_inputs_p"),
                     out / "offset_changes_p", "part")
                step("offsets: 3q results, fused, one plan", offsets_results_fused_sql(out / "offset_inputs_p"),
                     out / "offset_changes_q", "part", ONE_PLAN)
                step("offsets: 4p changelog, pruned", offsets_changelog_sql(
                     out / "offset_changes_p", state, loc_tails_rel(state, lit)), out / "offset_changelog_p")
            step("offsets: read view", f"""
                select l.project_id, l.contract_id, l.sign_time, l.local_rn + o.block_offset as asc_rn
                from parquet.`{state}/loc` as l inner join parquet.`{state}/off` as o
                    on l.project_id = o.project_id and l.block = o.block""", out / "view_read")
            step("plain fct read", f"select project_id, contract_id, sign_time, asc_rn from parquet.`{state}/fct`",
                 out / "fct_read")
        if not args.no_yardstick:
            step("yardstick: columnar re-rank", naive_rank_sql(events), out / "rerank")
            step("yardstick: changelog of it", changelog_sql(f"parquet.`{out}/rerank`", f"parquet.`{state}/prev_rank`"),
                 out / "rerank_changelog")
        if r == 0:
            steps.clear()
    spark.stop()

    figures["steps"] = {k: {"median_s": statistics.median(x["seconds"] for x in v), "runs_s": [x["seconds"] for x in v],
                            "spark_jobs": v[-1]["spark_jobs"], "mb_read": v[-1]["mb_read"],
                            "records_read": v[-1]["records_read"], "rows": v[-1]["rows"],
                            "load": [x["load"] for x in v]} for k, v in steps.items()}
    figures["check"] = check(state, out, args.offsets)
    if args.driver:
        import duckdb
        figures["check"]["driver_rows_differing"] = d = check_driver(duckdb.connect(), out)
        figures["check"]["exact"] = figures["check"]["exact"] and d == 0
    if args.blocks:
        import duckdb
        figures["check"]["blocks"] = blocks = check_blocks(duckdb.connect(), state, out)
        figures["check"]["exact"] = figures["check"]["exact"] and not any(blocks.values())
    figures["load_after"] = os.getloadavg()
    print(json.dumps(figures, indent=1))
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(figures, indent=1))
    if not args.keep:
        shutil.rmtree(state, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(work / "tmp", ignore_errors=True)
    return 0 if figures["check"]["exact"] else 1


if __name__ == "__main__":
    sys.exit(main())
