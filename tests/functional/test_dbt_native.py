"""Issue G.3 on one built home (the pipeline and the examples, run once on the demo's first
batch of every stream): `dbt source freshness` reads the ingests' logs as sources, `dbt docs
generate` catalogs every model and every declared source with exactly its documented columns,
and `dbt ls` on that built home starts no JVM (it runs with no Java on the machine)."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys

import pytest

from lakerank_project import ROOT, Lakerank
from no_java import env_without_java

DEMO = ROOT / "seeds" / "demo"
STREAMS = ("contracts", "payments", "design_changes", "projects")
PIPELINE_SOURCE = "source.lakerank.lakerank_ingest.stg_contract_ingest_log"
EXAMPLE_SOURCES = {f"source.lakerank.lakerank_examples_ingest.{m}__ingest_log"
                   for m in ("stg_payments", "stg_design_changes", "stg_project_changes")}


@pytest.fixture(scope="module")
def built(runner, tmp_path_factory) -> Lakerank:
    lakerank = Lakerank(runner, tmp_path_factory.mktemp("dbt_native") / "home")
    for stream in STREAMS:
        src = DEMO / "batch_00.jsonl" if stream == "contracts" else DEMO / stream / "batch_00.jsonl"
        (lakerank.home / "landing" / stream).mkdir(parents=True)
        shutil.copy(src, lakerank.home / "landing" / stream / "demo_batch_00.jsonl")
    lakerank.dbt("run", "--select", "lakerank")  # every model, the examples too; no data tests
    return lakerank


def freshness(lakerank: Lakerank, *args: str, expect_success: bool = True) -> dict:
    result = lakerank.dbt("source", "freshness", *args, expect_success=expect_success)
    return {r.node.unique_id: r for r in result.result.results}


def test_source_freshness_reads_the_ingest_logs(built):
    """Every ingest log is a source with a loaded_at_field: fresh right after the build, its
    age the seconds since that build (the business wall clock of `_committed_at`, eight hours
    ahead of UTC here, read as the instant it is); `--exclude tag:example` leaves the pipeline's."""
    started = dt.datetime.now(dt.timezone.utc)
    results = freshness(built)
    assert set(results) == {PIPELINE_SOURCE, *EXAMPLE_SOURCES}
    for name, r in results.items():
        assert str(r.status) == "pass", (name, r.status, r.message)
        assert 0 <= r.age < 900, (name, r.age, r.max_loaded_at, r.snapshotted_at)
        assert r.max_loaded_at <= started + dt.timedelta(seconds=1) <= r.snapshotted_at + dt.timedelta(seconds=1)
    assert set(freshness(built, "--exclude", "tag:example")) == {PIPELINE_SOURCE}


def test_docs_catalog_has_every_model_and_source(built):
    """`dbt docs generate` writes target/catalog.json with every model's relation and every
    declared source table, each with exactly the columns its YAML documents."""
    manifest = built.dbt("parse").result
    models = {uid: node for uid, node in manifest.nodes.items() if node.resource_type == "model"}
    catalog_path = ROOT / os.environ["DBT_TARGET_PATH"] / "catalog.json"
    if catalog_path.exists():
        catalog_path.unlink()
    built.dbt("docs", "generate")
    catalog = json.loads(catalog_path.read_text())
    assert not catalog.get("errors"), catalog["errors"]
    assert set(catalog["nodes"]) == set(models) and len(models) >= 19
    assert set(catalog["sources"]) == set(manifest.sources)
    assert {PIPELINE_SOURCE, *EXAMPLE_SOURCES} <= set(catalog["sources"])
    for uid, entry in [*catalog["nodes"].items(), *catalog["sources"].items()]:
        node = models.get(uid) or manifest.sources[uid]
        meta = entry["metadata"]
        assert (meta["schema"], meta["name"]) == (node.schema, node.identifier if uid in manifest.sources
                                                  else node.alias), uid
        assert {c.lower() for c in entry["columns"]} == {c.lower() for c in node.columns}, uid


def test_ls_on_a_built_home_needs_no_java(built, tmp_path):
    """`dbt ls` of a built home in a process with no Java: it never starts a JVM (a start
    would refuse, java_check.py), and lists the models and the sources."""
    env = env_without_java(tmp_path, LAKERANK_HOME=str(built.home), DBT_PROFILES_DIR=str(ROOT / "profiles"))
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from dbt.cli.main import cli; sys.exit(cli())",
         "ls", "--project-dir", str(ROOT), "--resource-type", "model", "--resource-type", "source",
         "--output", "name", "--quiet"],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    listed = set(proc.stdout.split())
    assert {"fct_contract_rank", "lakerank_ingest.stg_contract_ingest_log",
            "lakerank_examples_ingest.stg_payments__ingest_log"} <= listed, listed


def test_a_stale_ingest_log_fails_freshness(built):
    """A log whose last commit is four days old (rewritten here) is past `error_after`."""
    spark = built.spark()
    old = spark.sql("select files, events_landed, applied, quarantined, _committed_at - interval 4 days "
                    "as _committed_at, _commit_id from lakerank.stg_payments__ingest_log")
    spark.createDataFrame(old.collect(), old.schema).createOrReplaceTempView("old_log")  # read before the overwrite
    spark.sql("insert overwrite table lakerank.stg_payments__ingest_log partition (_commit_id) "
              "select * from old_log").collect()
    results = freshness(built, "--select", "source:lakerank_examples_ingest.stg_payments__ingest_log",
                        expect_success=False)
    [r] = results.values()
    assert str(r.status) == "error" and 4 * 86400 - 900 < r.age < 4 * 86400 + 900, (r.status, r.age)
