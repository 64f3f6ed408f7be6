"""The pipeline exact on the shared deployment (docs/deployment.md), run as its own process
by tests/functional/test_shared_deployment.py: its JVM needs S3A's jars on the driver's class
path, which only a new JVM takes.

    python tests/support/shared_scenario.py OUT.json

The environment names the services (LAKERANK_METASTORE_URI, LAKERANK_WAREHOUSE,
LAKERANK_LANDING, LAKERANK_S3_ENDPOINT, AWS_*) and LAKERANK_HOME, this process's own folder.
Each batch of a generated CDC stream (late, duplicate, stale, updated, moved and deleted
events; the moves of issue F.1) is landed on S3 and built (`dbt build --target shared
--selector with_audits`, the audits included), then rebuilt with `--full-refresh` for `rank` and
`row_number`; after each build every table is checked against the independent oracle
(tests/support/cdc_oracle.py), the changelog replays to the fact, and the read layer returns
its marts. The merge-on-read tables are due for compaction at every commit
(compact_commits 1): the second build compacts them on S3 (their base commit moves,
checked). The second batch's first build fails after the fact's commit, before its record,
and the next build finishes it. A reader in another process reads the read layer from
`OUT.json.start` (touched after the first build) to `OUT.json.stop` (after the second);
OUT.json gets each published commit's summary (tests/support/checks.py, `mart_summary`) to
check its samples against, and the read layer's row counts."""

from __future__ import annotations

import json
import os
import pathlib
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for p in (str(HERE), str(ROOT), str(ROOT / "tests" / "functional")):
    if p not in sys.path:
        sys.path.insert(0, p)

os.environ.setdefault("LAKERANK_SHUFFLE_PARTITIONS", "2")
os.environ.setdefault("LAKERANK_BUILD_SUMMARY", "off")
os.environ["LAKERANK_TARGET"] = "shared"

from test_rank_regressions import scenario_batch  # noqa: E402

import cdc  # noqa: E402
from checks import assert_all_exact, assert_read_layer_current, mart_summary  # noqa: E402
from lakerank_project import Lakerank  # noqa: E402

PUBLISHED = ("fct_contract_rank", "dim_project_rank_version", "fct_contract_rank_changelog")
MERGE_ON_READ = ("int_contract_block_rank", "int_project_block_offset", "int_project_block_version",
                 "int_project_rank_accumulation")


def base_commits(lakerank) -> dict:
    """Each merge-on-read table's base commit (its view's ``lakerank.base_commit``)."""
    spark = lakerank.spark()
    return {name: int(spark.sql(f"show tblproperties lakerank.{name} ('lakerank.base_commit')").first()["value"])
            for name in MERGE_ON_READ}


class SharedLakerank(Lakerank):
    """A lakerank project whose landing zone is LAKERANK_LANDING (s3a://): a batch is written
    locally, then copied to S3 through the session's own Hadoop file system (S3A)."""

    def __init__(self, runner, home: pathlib.Path):
        super().__init__(runner, home)
        self.scratch = pathlib.Path(tempfile.mkdtemp(prefix="land-", dir=home.parent))  # the test's tmp_path

    def land(self, lines, stream: str = "contracts") -> str:
        local = cdc.write_batch(self.scratch / stream, self.landed, lines)
        self.landed += 1
        spark = self.spark()
        jvm = spark._jvm
        target = jvm.org.apache.hadoop.fs.Path(f"{os.environ['LAKERANK_LANDING'].rstrip('/')}/{stream}/"
                                              f"{os.path.basename(local)}")
        fs = target.getFileSystem(spark._jsc.hadoopConfiguration())
        fs.copyFromLocalFile(True, True, jvm.org.apache.hadoop.fs.Path(local), target)
        return str(target.toString())


def main(out: str) -> None:
    from dbt.cli.main import dbtRunner

    os.environ.setdefault("DBT_TARGET_PATH", "target/pytest-shared")
    os.environ.setdefault("DBT_WRITE_JSON", "false")
    lakerank = SharedLakerank(dbtRunner(), pathlib.Path(os.environ["LAKERANK_HOME"]))
    timings = {}
    started = time.time()
    lakerank.dbt("show", "--inline", "select 1")  # the session: S3A for landing the first batch
    timings["session"] = round(time.time() - started, 1)
    oracle = cdc.Oracle()
    spark = lakerank.spark()
    bases, expected = [], {}
    batches = cdc.generate_batches(seed=21, n_batches=2, events_per_batch=60, n_projects=6)
    for i, generated in enumerate(batches):
        lines = [*generated, *scenario_batch(i)]
        path = lakerank.land(lines)
        oracle.consume(os.path.basename(path), lines)
        t = time.time()
        # compact_commits 1: the merge-on-read tables fold their changes into their bases
        # at every commit (the compaction's rewrite on S3).
        settings = {"rank_function": "dense_rank", "compact_commits": 1}
        if i:  # the second batch's first build stops after the fact's commit, before its record
            fault = {"int_contract_block_rank": "committed"}
            failed = lakerank.dbt("build", vars={**settings, "lakerank_fault": fault}, expect_success=False)
            assert not failed.success
        lakerank.dbt("build", "--selector", "with_audits", vars=settings)
        timings[f"build{i}"] = round(time.time() - t, 1)
        bases.append(base_commits(lakerank))
        t = time.time()
        assert_all_exact(lakerank, oracle, "dense_rank")
        assert_read_layer_current(lakerank)
        summary = mart_summary(spark)
        published = spark.sql("select max(commit_id) from lakerank_read.published_commit").first()[0]
        assert published == summary[0], (published, summary)
        expected[summary[0]] = summary
        timings[f"check{i}"] = round(time.time() - t, 1)
        # The reader in another process reads from the first build on, through the second
        # build (and its failed first attempt), until before the full refreshes.
        pathlib.Path(f"{out}.{'stop' if i else 'start'}").touch()
    # The second build compacted: every merge-on-read table's base moved to a later commit.
    assert all(bases[1][name] > bases[0][name] for name in MERGE_ON_READ), bases
    # The other rank functions on the same catalog and bucket: a full refresh each, exact.
    # Before the first, the folder s3proxy's `filesystem` backend can leave in a table's
    # folder after a write (an empty `_temporary/0`, listed but not deletable through S3A) is
    # planted in the fact's table's audit log: its drop leaves the folder, and the create must clear it
    # (python_udfs/commit/protocol.py, `_delete`) or Spark refuses it, LOCATION_ALREADY_EXISTS.
    plant_undeletable_folder(lakerank, "int_contract_block_rank__audit_log")
    for function in ("rank", "row_number"):
        t = time.time()
        lakerank.dbt("build", "--full-refresh", "--selector", "with_audits", vars={"rank_function": function})
        timings[f"full_refresh_{function}"] = round(time.time() - t, 1)
        assert_all_exact(lakerank, oracle, function)
        assert_read_layer_current(lakerank)
    counts = {name: spark.table(f"lakerank_read.{name}").count() for name in PUBLISHED}
    result = {"counts": counts, "location": table_location(spark, "stg_contract_changelog"), "timings": timings,
              "master": spark.sparkContext.master, "expected": expected}
    pathlib.Path(out).write_text(json.dumps(result))
    print(json.dumps(result))


def table_location(spark, table: str) -> str:
    rows = spark.sql(f"describe formatted lakerank.{table}").collect()
    return next(r["data_type"] for r in rows if r["col_name"].strip() == "Location")


def plant_undeletable_folder(lakerank, table: str) -> None:
    """An empty folder on s3proxy's disk (LAKERANK_S3PROXY_DIR) under ``table``'s folder."""
    bucket, key = table_location(lakerank.spark(), table).split("://", 1)[1].split("/", 1)
    os.makedirs(os.path.join(os.environ["LAKERANK_S3PROXY_DIR"], "data", bucket, key, "_temporary", "0"),
                exist_ok=True)


if __name__ == "__main__":
    main(sys.argv[1])
