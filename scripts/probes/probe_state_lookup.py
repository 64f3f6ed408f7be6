#!/usr/bin/env python3
"""Probe: what the contract ingest's state read costs a batch, with and without the literal
lookup (python_udfs.ingest.state_lookup), and whether its literals skip row groups.

A state table of N contracts (ids 1..N, one row each, as the ingest's compacted state)
written three times through the ingest's own publish: `old`, in Parquet's default row groups
(what the ingest wrote before the lookup), `new`, with STATE_WRITE_OPTIONS (row groups of
STATE_ROW_GROUP_ROWS rows; --write-option overrides or adds one) and its id record, and
`pages`, `new` in pages of 1,000 rows. The batch's contract ids are those of the bench's
batch generator (the bench's distribution: ~1.5 % of them stored, the rest new). In one warm
SparkSession, each variant of `latest_state(spark, table, 1, contracts)` is written to Spark's
no-op sink, --repeat times after a warm-up round (median), with the records its scans read
and its Spark jobs (Spark's event log over the variant's window, scripts/bench_eventlog.py),
and its rows checked equal to the semi-join's:

- semi-join: `prune=False` (the read before the lookup), on `old` and on `new`;
- ranges: the lookup as built (at most MAX_RANGES ranges; on any state, whatever its span:
  LAKERANK_STATE_LOOKUP_MIN_SPAN=0), on `new`, on `pages` (`new` in pages of 1,000 rows,
  which Parquet's column index skips within a row group) and on `old`;
- 8 ranges: MAX_RANGES = 8 on `new` (fewer, wider disjuncts);
- IN list: the stored ids as one `isin` on `new`, Spark's IN push-down at its default
  threshold (a list longer than it is pushed as its min..max).

    python3 scripts/probes/probe_state_lookup.py --history 1e6 --work /tmp/probe-state
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
sys.path.insert(0, str(ROOT))
import bench_eventlog  # noqa: E402
import bench_streams  # noqa: E402

from python_udfs.ingest import contract_state, state_lookup  # noqa: E402
from python_udfs.ingest.contract_state import STATE_DDL, latest_state  # noqa: E402
from python_udfs.ingest.sorted_output import sorted_files  # noqa: E402
from python_udfs.ingest.tables import ensure_table, publish_partition  # noqa: E402
from python_udfs.jvm import kept  # noqa: E402


def build(spark, table: str, n: int, options) -> None:
    """The state of contracts 1..n as partition 0 of ``table``, through the ingest's publish
    (``options``: the parquet writer's; with them, the id record too)."""
    from pyspark.sql import functions as F

    location = ensure_table(spark, table, STATE_DDL)
    rows = spark.range(1, n + 1).select(
        F.col("id").alias("contract_id"), (F.lit(1_640_908_800_000_000) + F.col("id") * 1000).alias("op_ts_us"),
        F.lit("file:/home/landing/contracts/history_0000.jsonl").alias("file"), F.col("id").alias("line"),
        F.lit(True).alias("live"), (1 + F.col("id") % 50_000).alias("project_id"),
        (F.lit(1_546_300_800_000_000) + (F.rand(1) * 94_608_000).cast("bigint") * 1_000_000).alias("sign_us"),
        (F.rand(2) * 100_000).cast("decimal(18,2)").alias("amount"),
        F.lit(None).cast("string").alias("src"), F.lit(None).cast("string").alias("pos"))
    publish_partition(spark, table, location, 0, sorted_files(rows, ["contract_id"], n), options=options,
                      records={state_lookup.ID_RECORD: state_lookup.id_record(1, n)} if options else None)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--history", default="1e6")
    p.add_argument("--batch-events", type=int, default=10_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--work", required=True)
    p.add_argument("--write-option", action="append", default=[], metavar="KEY=VALUE",
                   help="a parquet write option of the new layout, over STATE_WRITE_OPTIONS "
                        "(e.g. parquet.block.row.count.limit=2000)")
    args = p.parse_args()
    os.environ["LAKERANK_STATE_LOOKUP_MIN_SPAN"] = "0"  # the lookup on any state: what is measured
    state_lookup.STATE_WRITE_OPTIONS.update(kv.split("=", 1) for kv in args.write_option)
    n = int(float(args.history))
    work = pathlib.Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    evlog = work / "eventlog"
    evlog.mkdir(parents=True)

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    builder = (SparkSession.builder.master("local[2]").config("spark.driver.memory", "4g")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
               .config("spark.sql.warehouse.dir", str(work / "warehouse"))
               .config("spark.local.dir", str(work / "tmp")))
    for k, v in (kv.split("=", 1) for kv in bench_eventlog.conf(evlog).split(",")):
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql("create database if not exists probe")
    t = time.time()
    build(spark, "probe.old", n, None)
    build(spark, "probe.new", n, state_lookup.STATE_WRITE_OPTIONS)
    build(spark, "probe.pages", n, {**state_lookup.STATE_WRITE_OPTIONS, "parquet.page.row.count.limit": "1000"})
    print(f"states written in {time.time() - t:.1f} s", flush=True)

    maker = bench_streams.BatchMaker(n, bench_streams.N_PROJECTS, seed=n + 1)
    ids = sorted({json.loads(line)["contract_id"] for line in maker.batch(args.batch_events)})
    contracts = kept(spark.createDataFrame([(i,) for i in ids], "contract_id bigint"))
    contracts.count()
    figures = {"history": n, "write_options": state_lookup.STATE_WRITE_OPTIONS, "batch_ids": len(ids),
               "stored_ids": len([i for i in ids if i <= n]),
               "load_before": os.getloadavg(), "variants": {}}
    isin = lambda ranges: F.col("contract_id").isin([a for a, _b in ranges])  # noqa: E731
    variants = {
        "semi-join, old layout": ("probe.old", False, {}),
        "semi-join, new layout": ("probe.new", False, {}),
        "ranges, new layout": ("probe.new", True, {}),
        "ranges, pages of 1,000 rows": ("probe.pages", True, {}),
        "ranges, old layout": ("probe.old", True, {}),
        "8 ranges, new layout": ("probe.new", True, {"MAX_RANGES": 8}),
        "IN list, new layout": ("probe.new", True, {"MAX_RANGES": 10**9, "in_ranges": isin}),
    }
    want = sorted(tuple(r) for r in latest_state(spark, "probe.old", 1, contracts, prune=False).collect())
    runs: dict = {}
    for r in range(args.repeat + 1):
        for name, (table, prune, patch) in variants.items():
            saved = {k: getattr(state_lookup if k == "MAX_RANGES" else contract_state, k) for k in patch}
            for k, v in patch.items():
                setattr(state_lookup if k == "MAX_RANGES" else contract_state, k, v)
            try:
                t0 = time.time()
                df = latest_state(spark, table, 1, contracts, prune=prune)
                df.write.format("noop").mode("overwrite").save()
                t1 = time.time()
                same = r > 0 or sorted(tuple(x) for x in df.collect()) == want
            finally:
                for k, v in saved.items():
                    setattr(state_lookup if k == "MAX_RANGES" else contract_state, k, v)
            time.sleep(0.3)
            m = bench_eventlog.summarise(evlog, t0, t1)
            if r:
                runs.setdefault(name, []).append({"s": round(t1 - t0, 2), "records": m["records_read"],
                                                  "jobs": m["spark_jobs"]})
                print(f"  {name}: {runs[name][-1]}", flush=True)
            elif not same:
                figures.setdefault("differs", []).append(name)
    spark.stop()
    figures["variants"] = {k: {"median_s": statistics.median(x["s"] for x in v), "runs_s": [x["s"] for x in v],
                               "records_read": v[-1]["records"], "spark_jobs": v[-1]["jobs"]}
                           for k, v in runs.items()}
    figures["rows"] = len(want)
    figures["load_after"] = os.getloadavg()
    print(json.dumps(figures, indent=1))
    shutil.rmtree(work, ignore_errors=True)
    return 1 if figures.get("differs") else 0


if __name__ == "__main__":
    sys.exit(main())
