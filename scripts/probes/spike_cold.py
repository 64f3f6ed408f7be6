#!/usr/bin/env python3
"""Spark's floor for one batch, cold (issue 51's cold goal; docs/decisions/0004-one-commit-per-batch.md).

spike_batch_floor.py times a batch's statements in a warm session, after a warm-up round. The
bench's cold goal compares two fresh processes, each above its own start-up floor: here each
lane runs in a fresh Python process with its own JVM, starts a SparkSession, runs `select 1`
(the floor's query, as the bench's `dbt show --inline "select 1"`) and then times its steps:

- `batch`: the offsets alternative's statements, 1b (the ingest, ids as literals), 2 (the
  touched blocks' and projects' rows) and 3 (the results), each written as parquet;
- `driver`: 1b, then 2+3d (spike_driver.py: statement 2's rows collected into the driver,
  the results computed by DuckDB, written back by Spark);
- `rerank`: the columnar re-rank of every event, the yardstick.

The batch and driver lanes run on lakerank's JVM flags (the adapter's `JVM_FLAGS`: C1 only,
huge methods compiled; `--batch-jvm-flags`), the re-rank on the JVM's defaults, as the bench
runs them. Lanes alternate within each repetition. The state is spike_batch_floor.py's (`--keep` there,
or built here). The batch lane's changes applied to the state are checked against DuckDB's
re-rank of every event, and the driver lane's changes against the batch lane's.

    python3 scripts/probes/spike_cold.py --history 1e7 --repeat 2 --work /tmp/spike
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "scripts" / "probes"))
import bench_streams  # noqa: E402
from spike_batch_floor import build_state, spark_session  # noqa: E402
from spike_check import check_offsets, want_ranks  # noqa: E402
from spike_driver import check_driver, driver_results  # noqa: E402
from spike_sql import ingest_sql, naive_rank_sql, offsets_inputs_sql, offsets_results_sql  # noqa: E402

LANES = ("batch", "driver", "rerank")


def run_lane(lane: str, state: pathlib.Path, out: pathlib.Path, n: int) -> dict:
    """One lane in this (fresh) process: the session, `select 1`, then the lane's steps."""
    t0 = time.time()
    spark = spark_session(out.parent, out.parent / f"eventlog_cold_{n}")
    spark.sql("select 1").collect()
    times = {"start_s": round(time.time() - t0, 2)}

    def write(name: str, sql: str, dest: pathlib.Path, partition_by: str | None = None) -> None:
        t = time.time()
        w = spark.sql(sql).write.mode("overwrite")
        (w.partitionBy(partition_by) if partition_by else w).parquet(str(dest))
        times[name] = round(time.time() - t, 2)

    batch_file = out / "batch_0000.jsonl"
    ids = sorted({json.loads(x)["contract_id"] for x in batch_file.read_text().splitlines()
                  if json.loads(x)["contract_id"] <= n})
    spark.conf.set("spark.sql.parquet.pushdown.inFilterThreshold", str(max(10, len(ids))))
    if lane in ("batch", "driver"):
        changes = out / f"changes_{lane}"
        write("1b", ingest_sql(batch_file, state, ids, n), changes)
        if lane == "batch":
            write("2", offsets_inputs_sql(changes, state), out / "offset_inputs", "part")
            write("3", offsets_results_sql(out / "offset_inputs"), out / "offset_changes", "part")
        else:
            t = time.time()
            times["parts"] = driver_results(spark, offsets_inputs_sql(changes, state), out / "offset_changes_d")
            times["2+3d"] = round(time.time() - t, 2)
    else:
        events = f"(select * from parquet.`{state}/events` union all select * from parquet.`{out}/batch_events`)"
        write("rerank", naive_rank_sql(events), out / "rerank")
    times["total_s"] = round(sum(v for k, v in times.items() if k not in ("start_s", "parts")), 2)
    spark.stop()
    return times


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--history", default="1e7")
    p.add_argument("--batch-events", type=int, default=10_000)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--work", required=True)
    p.add_argument("--batch-jvm-flags", default=None,
                   help="the batch and driver lanes' JVM flags (default: the adapter's JVM_FLAGS)")
    p.add_argument("--rerank-jvm-flags", default="", help="the re-rank lane's (default: none, the JVM's own)")
    p.add_argument("--lane", choices=LANES, help=argparse.SUPPRESS)  # a child process's lane
    p.add_argument("--out", default=None, help="JSON results")
    args = p.parse_args()
    n = int(float(args.history))
    work = pathlib.Path(args.work)
    state, out = work / f"state_{n}", work / f"cold_{n}"
    if args.lane:
        print(json.dumps(run_lane(args.lane, state, out, n)))
        return 0
    if not (state / "prev_rank").exists():
        build_state(state, n, bench_streams.N_PROJECTS)
    out.mkdir(parents=True, exist_ok=True)
    batch_file = out / "batch_0000.jsonl"
    batch_file.write_text("\n".join(bench_streams.BatchMaker(n, bench_streams.N_PROJECTS, seed=n + 1)
                                    .batch(args.batch_events)) + "\n")
    import duckdb

    con = duckdb.connect()
    con.execute(f"""copy (
        select op, project_id, contract_id, cast(sign_time as timestamp) as sign_time,
               cast(amount as decimal(18, 2)) as amount, cast(op_ts as timestamp) as op_ts,
               'batch_0000.jsonl' as source_file
        from read_json('{batch_file}', format = 'newline_delimited', columns = {{
            op: 'varchar', project_id: 'bigint', contract_id: 'bigint', sign_time: 'varchar',
            amount: 'varchar', op_ts: 'varchar'}})
        where op in ('+I', '+U', '-D'))
        to '{out}/batch_events' (format parquet, per_thread_output true, overwrite true)""")
    if args.batch_jvm_flags is None:
        sys.path.insert(0, str(ROOT / "adapter"))
        from dbt.adapters.lakerank.session import JVM_FLAGS

        args.batch_jvm_flags = JVM_FLAGS
    runs: dict[str, list[dict]] = {lane: [] for lane in LANES}
    for r in range(args.repeat):
        for lane in LANES:
            flags = args.rerank_jvm_flags if lane == "rerank" else args.batch_jvm_flags
            submit = f'--driver-java-options "{flags}" pyspark-shell' if flags else "pyspark-shell"
            env = dict(os.environ, PYSPARK_SUBMIT_ARGS=submit)
            child = subprocess.run([sys.executable, __file__, "--history", args.history, "--work", str(work),
                                    "--lane", lane], check=True, capture_output=True, text=True, env=env)
            runs[lane].append(json.loads(child.stdout.strip().splitlines()[-1]))
            print(f"round {r} {lane}: {runs[lane][-1]} (load {os.getloadavg()[0]:.2f})", flush=True)
    medians = {lane: statistics.median(x["total_s"] for x in v) for lane, v in runs.items()}
    want_ranks(con, state, out)
    found = check_offsets(con, state, out)
    found["driver_rows_differing"] = check_driver(con, out)
    found["exact"] = found["exact"] and found["driver_rows_differing"] == 0
    figures = {"history": n, "batch_jvm_flags": args.batch_jvm_flags, "rerank_jvm_flags": args.rerank_jvm_flags,
               "runs": runs, "median_s": medians, "check": found,
               "batch_over_rerank": round(medians["batch"] / medians["rerank"], 3),
               "driver_over_rerank": round(medians["driver"] / medians["rerank"], 3)}
    print(json.dumps(figures, indent=1))
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(figures, indent=1))
    return 0 if found["exact"] else 1


if __name__ == "__main__":
    sys.exit(main())
