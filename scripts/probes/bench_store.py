#!/usr/bin/env python3
"""Store benchmark: the writes and reads a lakerank batch makes, on each candidate table format.

One SparkSession (local[2], lakerank's JVM flags), one fact-shaped table per store with
`--rows` rows (the columns of `fct_contract_rank`; 50,000 projects, a fifth of the rows in
100 large projects, sign times over three years, written sorted by project), then
`--batches` commits of a batch-shaped change set each, and the reads a build and its
readers make:

- `parquet_mor`: lakerank's own merge-on-read layout. A commit appends its changed rows
  (rowkind +I/+U/-D) as one `_commit_id` partition of a parquet audit log; the table is a
  view: the parquet base with each key's newest change applied (the SQL of
  `lakerank_lib.merge_on_read_select`). The commit's cost includes reading the prior rows of
  the touched projects through the view (what the row-level diff reads).
- `delta_dv`: a Delta table with deletion vectors and the change data feed on (what the
  changelog model would read); a commit is one `MERGE INTO` keyed by `contract_id`.
- `delta_dv_pruned`: the same, its ON clause narrowed to the touched projects (a literal
  list, so Delta's file statistics may skip files of the base sorted by project).
- `delta_cow`: the same without deletion vectors (copy-on-write: every touched file rewritten).

Each commit's change set: `--inserts` new contracts (most at the present, `--late` share
anywhere in history), `--updates` rows of existing contracts with new rank values (the shift
a historic change causes: a contiguous run of one project's later contracts, as many runs as
`--update-runs`), `--deletes` existing rows. Reads: a full read of every column (`sum(hash(*))`),
and a read of the largest project; both after the last commit.

Delta needs pyspark 4.1 (the connector targets Spark 4.1; on 4.3 it fails with
NoSuchMethodError) and the connector from Maven through `spark.jars.packages`:

    python -m venv /tmp/v41 && /tmp/v41/bin/pip install "pyspark==4.1.4" pandas pyarrow
    /tmp/v41/bin/python scripts/probes/bench_store.py --rows 1e6 --stores parquet_mor delta_dv delta_cow

Prints a markdown table and writes JSON to --out.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import tempfile
import time

DELTA_PACKAGE = "io.delta:delta-spark_4.1_2.13:4.3.1"
COLS = "project_id, contract_id, sign_time, segment_start, mem_rn, base_max_rn, asc_rn, amount"
N_PROJECTS = 50_000
N_LARGE = 100
HISTORY_TIME = "timestamp_ntz'2022-01-01 00:00:00' + make_dt_interval(0, 0, 0, (id * 7919) % (1095 * 86400))"
NOW = "timestamp_ntz'2025-01-01 00:00:00'"


def session(stores: list[str], work: pathlib.Path):
    from pyspark.sql import SparkSession

    b = (SparkSession.builder.master("local[2]").appName("bench_store")
         .config("spark.ui.enabled", "false")
         .config("spark.sql.shuffle.partitions", "4")
         .config("spark.sql.session.timeZone", "UTC")
         .config("spark.sql.warehouse.dir", str(work / "warehouse"))
         .config("spark.driver.memory", "6g")
         .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"))
    if any(s.startswith("delta") for s in stores):
        b = (b.config("spark.jars.packages", DELTA_PACKAGE)
             .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
             .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
            # the log's state in as many partitions as a shuffle (its default, 50, is sized for clusters)
            .config("spark.databricks.delta.snapshotPartitions", "4"))
    return b.getOrCreate()


def history_sql(rows: int) -> str:
    """The fact table's rows: contract i in a large project when i % 5 == 0."""
    return f"""
      with c as (
        select id as contract_id,
               case when id % 5 = 0 then id % {N_LARGE}
                    else {N_LARGE} + id % {N_PROJECTS - N_LARGE} end as project_id,
               {HISTORY_TIME} as sign_time,
               cast((id % 100000) / 100.0 as decimal(18, 2)) as amount
        from range(1, {rows} + 1)
      )
      select project_id, contract_id, sign_time, date_trunc('DAY', sign_time) as segment_start,
             cast(1 as int) as mem_rn, cast(0 as int) as base_max_rn,
             cast(row_number() over (partition by project_id order by sign_time, contract_id) as int) as asc_rn,
             amount
      from c"""


def changes_sql(rows: int, batch: int, a) -> str:
    """One commit's changed rows with their rowkind (+I new, +U shifted ranks, -D deleted)."""
    new_from = rows + 1 + batch * a.inserts
    late = int(a.inserts * a.late)
    per_run = max(1, a.updates // max(1, a.update_runs))
    every = max(1, rows // max(1, a.deletes))
    return f"""
      select '+I' as rowkind, {N_LARGE} + id % {N_PROJECTS - N_LARGE} as project_id, id as contract_id,
             case when id % {a.inserts} < {late}
                  then {HISTORY_TIME}
                  else {NOW} + make_dt_interval({batch}, 0, 0, id % 86400) end as sign_time,
             cast(null as timestamp_ntz) as segment_start, 1 as mem_rn, 0 as base_max_rn, 1 as asc_rn,
             cast(1 as decimal(18, 2)) as amount
      from range({new_from}, {new_from + a.inserts})
      union all
      select '+U', project_id, contract_id, sign_time, segment_start, mem_rn, base_max_rn, asc_rn + 1, amount
      from (select *, row_number() over (partition by project_id order by asc_rn desc) as k
            from bench_base where project_id < {a.update_runs} + {batch})
      where k <= {per_run} and project_id >= {batch}
      union all
      select '-D', project_id, contract_id, sign_time, segment_start, mem_rn, base_max_rn, asc_rn, amount
      from bench_base where contract_id % {every} = {batch + 7} % {every} and contract_id <= {rows}"""


class Store:
    """A table format: create the table, commit a change set, and the SQL a reader queries."""

    def __init__(self, spark, name: str):
        self.spark, self.name = spark, name

    def sql(self, q: str):
        return self.spark.sql(q)

    def create(self) -> None:
        raise NotImplementedError

    def commit(self, batch: int) -> None:
        raise NotImplementedError

    def relation(self) -> str:
        raise NotImplementedError


class ParquetMor(Store):
    def create(self) -> None:
        self.sql("drop view if exists mor_fct")
        self.sql("drop table if exists mor_base")
        self.sql("drop table if exists mor_audit")
        self.sql("create table mor_base using parquet as select * from bench_base order by project_id, contract_id")
        self.sql(f"""create table mor_audit using parquet partitioned by (_commit_id)
                     as select '+I' as rowkind, {COLS}, 0 as _commit_id from bench_base where false""")
        self.sql(f"""create or replace view mor_fct as
          with changes as (select * from mor_audit),
          newest as (select *, row_number() over (partition by contract_id
                       order by _commit_id desc, case when rowkind in ('+I', '+U') then 0 else 1 end) as pick
                     from changes)
          select {', '.join('base.' + c.strip() for c in COLS.split(','))} from mor_base as base
          left anti join changes on base.contract_id = changes.contract_id
          union all
          select {COLS} from newest where pick = 1 and rowkind in ('+I', '+U')""")

    def commit(self, batch: int) -> None:
        # The row-level diff reads the touched projects' prior rows through the view.
        self.sql("""select count(*), sum(asc_rn) from mor_fct
                     where project_id in (select distinct project_id from bench_changes)""").collect()
        self.sql(f"""insert into mor_audit partition (_commit_id = {batch + 1})
                     select rowkind, {COLS} from bench_changes""")

    def relation(self) -> str:
        return "mor_fct"


class Delta(Store):
    def __init__(self, spark, name):
        super().__init__(spark, name)
        self.dv = "false" if name == "delta_cow" else "true"
        self.pruned = name.endswith("_pruned")
        self.table = name

    def create(self) -> None:
        self.sql(f"drop table if exists {self.table}")
        self.sql(f"""create table {self.table} using delta
                     tblproperties ('delta.enableDeletionVectors' = '{self.dv}',
                                    'delta.enableChangeDataFeed' = 'true')
                     as select * from bench_base order by project_id, contract_id""")

    def commit(self, batch: int) -> None:
        narrow = ""
        if self.pruned:
            projects = [r[0] for r in self.sql("select distinct project_id from bench_changes").collect()]
            narrow = f" and t.project_id in ({', '.join(str(p) for p in projects) or 'null'})"
        self.sql(f"""merge into {self.table} as t using bench_changes as s
                     on t.contract_id = s.contract_id{narrow}
                     when matched and s.rowkind = '-D' then delete
                     when matched then update set *
                     when not matched and s.rowkind != '-D' then insert *""")

    def relation(self) -> str:
        return self.table


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return round(time.perf_counter() - t, 2)


def run_store(spark, name: str, a) -> dict:
    store = ParquetMor(spark, name) if name == "parquet_mor" else Delta(spark, name)
    out = {"store": name, "create_s": timed(store.create), "commits_s": []}
    for batch in range(a.batches):
        spark.sql(changes_sql(a.rows, batch, a)).createOrReplaceTempView("bench_changes_v")
        spark.sql("cache table bench_changes as select * from bench_changes_v")
        out["changed_rows"] = spark.sql("select count(*) from bench_changes").collect()[0][0]
        out["commits_s"].append(timed(lambda b=batch: store.commit(b)))
        spark.sql("uncache table bench_changes")
        spark.sql("drop view if exists bench_changes")
    rel = store.relation()
    for label, q in (("full_read_s", f"select count(*), sum(hash({COLS})) from {rel}"),
                     ("project_read_s", f"select count(*), sum(hash({COLS})) from {rel} where project_id = 0")):
        spark.sql(q).collect()  # once to warm the JIT on this query shape
        out[label] = timed(lambda q=q: spark.sql(q).collect())
    out["rows_after"] = spark.sql(f"select count(*) from {rel}").collect()[0][0]
    plain = f"select count(*), sum(hash({COLS})) from bench_base_parquet"
    out["plain_scan_s"] = timed(lambda: spark.sql(plain).collect())
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=float, default=1e6)
    p.add_argument("--stores", nargs="+", default=["parquet_mor", "delta_dv", "delta_dv_pruned", "delta_cow"])
    p.add_argument("--batches", type=int, default=3)
    p.add_argument("--inserts", type=int, default=9_500)
    p.add_argument("--late", type=float, default=0.02)
    p.add_argument("--updates", type=int, default=20_000, help="rows whose ranks shift per commit")
    p.add_argument("--update-runs", type=int, default=20, help="projects those rows are in")
    p.add_argument("--deletes", type=int, default=50)
    p.add_argument("--work", default=None)
    p.add_argument("--out", default="bench-store.json")
    a = p.parse_args()
    a.rows = int(a.rows)
    a.out = str(pathlib.Path(a.out).resolve())
    work = pathlib.Path(a.work or tempfile.mkdtemp(prefix="bench_store_"))
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    os.chdir(work)  # Derby's metastore_db and spark-warehouse land here
    spark = session(a.stores, work)
    import pyspark

    spark.sql(history_sql(a.rows)).write.mode("overwrite").parquet(str(work / "base.parquet"))
    spark.read.parquet(str(work / "base.parquet")).createOrReplaceTempView("bench_base")
    spark.sql("select * from bench_base order by project_id, contract_id").write.mode("overwrite") \
        .saveAsTable("bench_base_parquet")
    results = [run_store(spark, s, a) for s in a.stores]
    changed = results[0]["changed_rows"]
    print(f"\npyspark {pyspark.__version__}, {a.rows:,} rows, {a.batches} commits of ~{changed:,} rows\n")
    print("| store | create s | commits s | full read s | one-project read s | plain parquet scan s |")
    print("|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['store']} | {r['create_s']} | {' / '.join(map(str, r['commits_s']))} | "
              f"{r['full_read_s']} | {r['project_read_s']} | {r['plain_scan_s']} |")
    pathlib.Path(a.out).write_text(json.dumps({"pyspark": pyspark.__version__, "args": vars(a), "results": results},
                                              indent=2, default=str))


if __name__ == "__main__":
    main()
