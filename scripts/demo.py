#!/usr/bin/env python3
"""lakerank demo: land the sample CDC batches of seeds/demo/ one at a time and run the
incremental `dbt build` after each, on the embedded Spark target, with the library examples
turned on (`--vars '{lakerank_examples: true}'`) so their tables show too.

    python scripts/demo.py            # LAKERANK_HOME defaults to .lakerank/ in the project
    LAKERANK_HOME=/tmp/lr python scripts/demo.py --fresh
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
DEMO = ROOT / "seeds" / "demo"
# The examples' streams (docs/examples.md): seeds/demo/<stream>/batch_NN.jsonl lands with batch_NN.
EXAMPLE_STREAMS = ("payments", "design_changes", "projects")
# The demo builds the library examples too (off in a plain `dbt build`: dbt_project.yml).
EXAMPLES_ON = {"lakerank_examples": True}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fresh", action="store_true", help="delete LAKERANK_HOME first")
    parser.add_argument("--rank-function", default="dense_rank", choices=["dense_rank", "rank", "row_number"])
    args = parser.parse_args()
    from dbt.adapters.lakerank.java_check import LakerankJavaError, check_java

    try:  # at once, before anything lands: the session's JVM needs Java 17+ (docs/setup.md)
        check_java()
    except LakerankJavaError as exc:
        print(exc.msg, file=sys.stderr)
        return 1

    home = pathlib.Path(os.environ.get("LAKERANK_HOME") or ROOT / ".lakerank").resolve()
    os.environ["LAKERANK_HOME"] = str(home)
    if args.fresh and home.exists():
        shutil.rmtree(home)
    landing = home / "landing" / "contracts"
    landing.mkdir(parents=True, exist_ok=True)

    from dbt.cli.main import dbtRunner

    runner = dbtRunner()
    demo_vars = {"rank_function": args.rank_function, **EXAMPLES_ON}
    base = ["--project-dir", str(ROOT), "--profiles-dir", str(ROOT / "profiles"), "--quiet",
            "--vars", json.dumps(demo_vars)]
    print(f"lakerank demo — LAKERANK_HOME={home}  rank_function={args.rank_function}\n")

    batches = sorted(DEMO.glob("batch_*.jsonl"))
    for i, src in enumerate(batches, 1):
        dst = landing / f"demo_{src.name}"
        if dst.exists():
            print(f"[{i}/{len(batches)}] {src.name} already landed; building anyway")
        else:
            shutil.copy(src, dst.with_suffix(".tmp"))
            os.replace(dst.with_suffix(".tmp"), dst)
        for stream in EXAMPLE_STREAMS:
            extra, extra_dst = DEMO / stream / src.name, home / "landing" / stream / f"demo_{src.name}"
            if extra.exists() and not extra_dst.exists():
                extra_dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(extra, extra_dst.with_suffix(".tmp"))
                os.replace(extra_dst.with_suffix(".tmp"), extra_dst)
        started = time.time()
        result = runner.invoke(["build", *base])
        if not result.success:
            print(f"dbt build failed on {src.name}: {result.exception or 'see logs/dbt.log'}", file=sys.stderr)
            return 1
        report_batch(i, len(batches), src.name, time.time() - started)

    report_final(home)
    return 0


def spark():
    from pyspark.sql import SparkSession

    return SparkSession.builder.getOrCreate()


def report_batch(i: int, n: int, name: str, seconds: float) -> None:
    s = spark()
    head = s.sql("select max(_commit_id) as c from lakerank.stg_contract_ingest_log").first()["c"]
    log = s.sql(f"select * from lakerank.stg_contract_ingest_log where _commit_id = {head}").first()
    changes = s.sql(
        f"select rowkind, count(*) as n from lakerank.fct_contract_rank_changelog "
        f"where _commit_id = {head} group by rowkind order by rowkind"
    ).collect()
    print(f"[{i}/{n}] {name}: dbt build {seconds:.1f}s, commit {head}")
    print(f"      events landed {log['events_landed']}: applied {log['applied']}, no-op {log['noop']}, "
          f"stale/duplicate {log['stale']}, before-image {log['before_image']}, quarantined {log['quarantined']}")
    print("      rank changes: " + (", ".join(f"{r['rowkind']} {r['n']}" for r in changes) or "none"))
    summary = s.sql("select * from lakerank.build_summary order by finished_at desc limit 1").first()
    print(f"      build summary (lakerank.build_summary, docs/operations.md): {summary['status']}, ranks "
          f"+I {summary['ranks_inserted']} +U {summary['ranks_updated']} -D {summary['ranks_deleted']}, "
          f"projects touched {summary['projects_touched']}, seconds by stage {summary['stage_seconds']}")
    s.sql(
        "select project_id, contract_id, date_format(sign_time, 'yyyy-MM-dd HH:mm:ss') as sign_time, "
        "date_format(segment_start, 'yyyy-MM-dd') as segment, mem_rn, base_max_rn, asc_rn "
        "from lakerank.fct_contract_rank order by project_id, asc_rn, contract_id"
    ).show(50, truncate=False)


def report_final(home: pathlib.Path) -> None:
    s = spark()
    print("Zipper dim_project_rank_version (current versions end 9999-12-31 23:59:59):")
    s.sql(
        "select project_id, date_format(ver_start, 'yyyy-MM-dd HH:mm:ss') as ver_start, "
        "date_format(ver_end, 'yyyy-MM-dd HH:mm:ss') as ver_end, base_max_rn "
        "from lakerank.dim_project_rank_version order by project_id, ver_start"
    ).show(50, truncate=False)
    print("Quarantined events:")
    s.sql("select _commit_id, reason, raw_line from lakerank.stg_contract_quarantine order by _commit_id").show(
        20, truncate=False)
    counts = s.sql(
        "select sum(events_landed) landed, sum(applied) applied, sum(noop) noop, sum(stale) stale, "
        "sum(before_image) before_image, sum(quarantined) quarantined from lakerank.stg_contract_ingest_log"
    ).first()
    print(f"All events accounted for: landed {counts['landed']} = applied {counts['applied']} + no-op {counts['noop']}"
          f" + stale {counts['stale']} + before-image {counts['before_image']} + quarantined {counts['quarantined']}")
    print("Examples (docs/examples.md) — wide table dim_project_wide (seed 003):")
    s.sql(
        "select project_id, contract_count, contract_amount, payment_count, paid_amount, designer, design_status "
        "from lakerank.dim_project_wide order by project_id"
    ).show(20, truncate=False)
    print("Contracts with their project as of sign_time and now (seed 002):")
    s.sql(
        "select contract_id, project_id, date_format(sign_time, 'yyyy-MM-dd HH:mm:ss') as sign_time, "
        "city, designer, status, latest_city, latest_designer, latest_status "
        "from lakerank.fct_contract_enriched order by project_id, sign_time, contract_id"
    ).show(50, truncate=False)
    print(f"\nTables: schema `lakerank` in {home}/warehouse (Derby metastore {home}/metastore_db).")
    print("Landing folder:", home / "landing" / "contracts")
    print("Spark's own log:", home / "logs" / "spark.log")
    print("Query them with the same profile, e.g. `dbt show --profiles-dir profiles --inline "
          "\"select * from {{ ref('fct_contract_rank') }}\"`")


if __name__ == "__main__":
    sys.exit(main())
