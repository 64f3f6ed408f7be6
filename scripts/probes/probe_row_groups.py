"""Probe: what a batch's read of a rank table's base costs, and what row-group pruning buys.

A synthetic fact of N rows (50,000 projects, a fifth of the rows in 100 large ones, sign
times over three years, the fact's columns) in two layouts:

- A: four files sorted by (project_id, segment_start), Spark's default row groups (the
  merge-on-read base as lakerank writes it);
- B: sixteen files range-partitioned by project_id, 128 KB row groups (thousands of row
  groups, each a few dozen projects: the finest layout parquet statistics can prune).

Then, in one warm session, best of three: a full scan; the rank rewrite's read (the rows
of ~8,000 touched projects from each project's tail start: a broadcast semi-join with a
range condition); the same through a literal IN list first; and the rows of 150 random
projects (the old changes of a batch) as a literal IN list, with Parquet's IN push-down at
its default threshold and raised to 1,000.

    python3 scripts/probes/probe_row_groups.py --rows 1e7 --work /tmp/probe   # ~2 minutes

Figures: docs/decisions/0002-batch-cost.md, "What a base read costs".
"""

from __future__ import annotations

import argparse
import os
import random
import time


def session():
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").config("spark.driver.memory", "6g")
             .config("spark.sql.shuffle.partitions", "4").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def write_layouts(spark, rows: int, root: str) -> None:
    from pyspark.sql import functions as F

    df = spark.range(rows).select(
        F.col("id").alias("contract_id"),
        F.when(F.rand(1) < 0.2, (F.rand(2) * 100).cast("bigint"))
         .otherwise(100 + (F.rand(3) * 49900).cast("bigint")).alias("project_id"),
        (F.lit(1609459200) + (F.rand(4) * 3 * 365 * 86400).cast("bigint")).cast("timestamp").alias("sign_time"),
        (F.rand(5) * 10000).cast("decimal(18,2)").alias("amount"))
    df = (df.withColumn("segment_start", F.date_trunc("day", "sign_time"))
          .withColumn("mem_rn", F.lit(1).cast("bigint"))
          .withColumn("base_max_rn", F.col("contract_id") % 1000)
          .withColumn("asc_rn", F.col("contract_id") % 997))
    df.repartition(4).sortWithinPartitions("project_id", "segment_start").write.mode("overwrite").parquet(f"{root}/A")
    (df.repartitionByRange(16, "project_id").sortWithinPartitions("project_id", "segment_start")
     .write.option("parquet.block.size", 128 * 1024).mode("overwrite").parquet(f"{root}/B"))


def timed(spark, sql: str, in_threshold: int = 10) -> tuple:
    spark.conf.set("spark.sql.parquet.pushdown.inFilterThreshold", str(in_threshold))
    best, rows = float("inf"), None
    for _ in range(3):
        start = time.time()
        rows = spark.sql(sql).collect()[0][0]
        best = min(best, time.time() - start)
    return best, rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=float, default=1e7)
    parser.add_argument("--work", default="/tmp/lakerank-probe-row-groups")
    args = parser.parse_args()
    spark = session()
    if not os.path.isdir(os.path.join(args.work, "B")):
        write_layouts(spark, int(args.rows), args.work)
    rng = random.Random(7)
    old = sorted(rng.sample(range(100, 50000), 150))
    touched = sorted(set(rng.sample(range(100, 50000), 7900)) | set(range(100)))
    spark.createDataFrame([(p, "2023-12-01") for p in touched], "project_id bigint, f string") \
        .selectExpr("project_id", "cast(f as timestamp) as touched_from").createOrReplaceTempView("touched")
    in_touched, in_old = ",".join(map(str, touched)), ",".join(map(str, old))
    tail = "t.project_id = touched.project_id and t.segment_start >= touched.touched_from"
    reads = {
        "full scan": "select count(*), sum(asc_rn) from {t}",
        "rewrite read (semi-join)": f"select count(*), sum(asc_rn) from {{t}} as t left semi join touched on {tail}",
        "IN list, then semi-join": f"select count(*), sum(asc_rn) from (select * from {{t}} where project_id in "
                                   f"({in_touched})) as t left semi join touched on {tail}",
        "150 projects (IN list)": f"select count(*), sum(asc_rn) from {{t}} where project_id in ({in_old})",
    }
    for layout in ("A", "B"):
        spark.read.parquet(os.path.join(args.work, layout)).createOrReplaceTempView(layout)
        for name, sql in reads.items():
            for threshold in ((10, 1000) if name.startswith("150") else (10,)):
                best, rows = timed(spark, sql.format(t=layout), threshold)
                print(f"{layout}  {name:26s} in-threshold {threshold:5d}  {best:6.2f} s  {rows} rows", flush=True)


if __name__ == "__main__":
    main()
