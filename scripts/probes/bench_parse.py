#!/usr/bin/env python3
"""What the contract ingest's line parse costs, stage by stage, on real landing files.

Reads the JSON Lines files of a landing folder (e.g. a benchmark home's
``landing/contracts``) with Spark's text source and writes each stage's output to Spark's
``noop`` sink (every column computed, nothing stored), in one warm JVM (local[2], the
adapter's JVM flags), the stages alternating round by round so the box's drift hits all:

- ``read``: the lines alone;
- ``try_parse_json``: + the VARIANT parse of every line;
- ``parse_contract_lines``: the ingest's whole parse and validation (``contract_lines.parse_contract_lines``).

    python3 scripts/probes/bench_parse.py /work/b30/home_1000000/landing/contracts --rounds 3
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("landing", help="a folder of .jsonl files")
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from dbt.adapters.lakerank.session import JVM_FLAGS
    from python_udfs.ingest.contract_lines import parse_contract_lines

    spark = (SparkSession.builder.master("local[2]")
             .config("spark.driver.extraJavaOptions", JVM_FLAGS)
             .config("spark.driver.memory", "4g")
             .config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.session.timeZone", "Asia/Shanghai")
             .config("spark.sql.timestampType", "TIMESTAMP_NTZ")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    lines = spark.read.format("text").load(f"{args.landing}/*.jsonl").select(
        F.col("_metadata.file_path").alias("file"),
        (F.monotonically_increasing_id() + 1).alias("line"),
        F.lit(0).cast("bigint").alias("n_events"),
        F.col("value").alias("text"),
        F.lit(0).cast("bigint").alias("batch_us"),
    )
    n_lines = lines.count()
    stages = {
        "read": lambda: lines,
        "try_parse_json": lambda: lines.select("*", F.expr("try_parse_json(text)").alias("v")),
        "parse_contract_lines": lambda: parse_contract_lines(lines),
    }
    valid = parse_contract_lines(lines).where("kind = 'E'").count()  # also warms the JVM up
    times = {name: [] for name in stages}
    for r in range(args.rounds):
        for name, frame in stages.items():
            t = time.time()
            frame().write.format("noop").mode("overwrite").save()
            times[name].append(time.time() - t)
            print(f"round {r}: {name}: {times[name][-1]:.2f} s", flush=True)
    spark.stop()
    print(f"\n{n_lines:,} lines ({valid:,} valid events) in {args.landing}")
    print("| stage | runs (s) | median s | µs a line |\n|---|---|---|---|")
    for name in stages:
        med = statistics.median(times[name])
        print(f"| {name} | {', '.join(f'{t:.2f}' for t in times[name])} | {med:.2f} | {med / n_lines * 1e6:.1f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
