"""Measure what a small pk_table commit rewrites in a large table.

Builds a throwaway dbt project that installs lakerank as a package, loads ROWS keys into a
pk_table with `bucket` = BUCKETS (commit 1), then commits KEYS updated keys (commit 2) and
prints, from `lakerank_lib.snapshots`, the bytes each commit wrote next to the table's size.

    python3 scripts/probes/bench_pk_rewrite.py [--rows 1000000] [--buckets 64] [--keys 10]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import tempfile
import textwrap
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]

MODEL = """\
{{ config(materialized='pk_table', primary_key=['k'],
          options={'merge-engine': 'deduplicate', 'changelog-producer': 'lookup',
                   'bucket': var('buckets')}) }}
select id as k, id % 97 as v, concat('payload-', id, '-{{ var("tag") }}') as note
from range({{ var('first') }}, {{ var('last') }}, {{ var('step') }})
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--buckets", type=int, default=64)
    ap.add_argument("--keys", type=int, default=10)
    args = ap.parse_args()

    work = pathlib.Path(tempfile.mkdtemp(prefix="lakerank_bench_"))
    project = work / "project"
    (project / "models").mkdir(parents=True)
    (project / "dbt_project.yml").write_text(textwrap.dedent("""\
        name: bench
        version: "0.1.0"
        config-version: 2
        profile: lakerank
        """))
    (project / "packages.yml").write_text(f"packages:\n  - local: {ROOT / 'lakerank_lib'}\n")
    (project / "models" / "bench_pk.sql").write_text(MODEL)
    os.environ["LAKERANK_HOME"] = str(work / "home")

    from dbt.cli.main import dbtRunner

    runner = dbtRunner()

    def dbt(*cli, **vars_):
        start = time.time()
        res = runner.invoke([*cli, "--project-dir", str(project), "--profiles-dir", str(ROOT / "profiles"),
                             "--vars", json.dumps({"buckets": args.buckets, **vars_})])
        if not res.success:
            raise SystemExit(f"dbt {cli} failed: {res.exception or res.result}")
        return time.time() - start

    dbt("deps")
    t_load = dbt("run", first=0, last=args.rows, step=1, tag="a")
    step = max(1, args.rows // args.keys)
    t_small = dbt("run", first=0, last=step * args.keys, step=step, tag="b")

    from dbt.adapters.lakerank.session import current_thread_session

    spark = current_thread_session()
    snaps = spark.sql(
        "select snapshot_id, input_record_count, touched_key_count, rewritten_partitions, rewritten_bytes "
        "from lakerank.bench_pk__snapshots order by snapshot_id").collect()
    jvm = spark._jvm
    loc = spark.sql("describe formatted lakerank.bench_pk").where("col_name = 'Location'").collect()[0][1]
    parts = spark.sql("show partitions lakerank.bench_pk").count()
    total = 0
    for row in spark.sql("select distinct input_file_name() as f from lakerank.bench_pk").collect():
        path = jvm.org.apache.hadoop.fs.Path(row.f)
        total += path.getFileSystem(spark._jsc.hadoopConfiguration()).getFileStatus(path).getLen()
    small = snaps[-1]
    print(json.dumps({
        "rows": args.rows, "buckets": args.buckets, "keys_in_small_commit": args.keys,
        "table_bytes": total, "table_partitions": parts, "location": loc,
        "load": {"rewritten_bytes": snaps[0].rewritten_bytes, "seconds": round(t_load, 1)},
        "small_commit": {"touched_keys": small.touched_key_count, "rewritten_partitions": small.rewritten_partitions,
                         "rewritten_bytes": small.rewritten_bytes, "seconds": round(t_small, 1)},
        "rewritten_fraction": round(small.rewritten_bytes / total, 4),
    }, indent=2))


if __name__ == "__main__":
    main()
