"""Issue G.3 on one built home (the pipeline and the examples, run once on the demo's first
batch of every stream): `dbt docs generate` catalogs every model and every declared source with
exactly its documented columns, `dbt source freshness` reads the ingests' logs as sources, and
`dbt ls` on that built home starts no Spark session."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil

import pytest

from lakerank_project import ROOT, Lakerank

DEMO = ROOT / "seeds" / "demo"
STREAMS = ("contracts", "payments", "design_changes", "projects")
PIPELINE_SOURCE = "source.lakerank.lakerank_ingest.stg_contract_ingest_log"
EXAMPLE_SOURCES = {f"source.lakerank.lakerank_examples_ingest.{m}__ingest_log"
                   for m in ("stg_payments", "stg_design_changes", "stg_project_changes")}
STALE_SOURCE = "source.lakerank.lakerank_examples_ingest.stg_payments__ingest_log"


@pytest.fixture(scope="module")
def built(runner, tmp_path_factory) -> Lakerank:
    lakerank = Lakerank(runner, tmp_path_factory.mktemp("dbt_native") / "home")
    for stream in STREAMS:
        src = DEMO / "batch_00.jsonl" if stream == "contracts" else DEMO / stream / "batch_00.jsonl"
        (lakerank.home / "landing" / stream).mkdir(parents=True)
        shutil.copy(src, lakerank.home / "landing" / stream / "demo_batch_00.jsonl")
    # every model, the examples too; no data tests; the four landing ingests side by side
    lakerank.dbt("run", "--select", "lakerank", "--threads", "6")
    return lakerank


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


def test_source_freshness_reads_the_ingest_logs(built):
    """Every ingest log is a source with a loaded_at_field: fresh right after the build, its
    age the seconds since that build (the business wall clock of `_committed_at`, eight hours
    ahead of UTC here, read as the instant it is); a log whose last commit is four days old
    (rewritten here) is past `error_after`."""
    spark = built.spark()
    old = spark.sql("select files, events_landed, applied, quarantined, _committed_at - interval 4 days "
                    "as _committed_at, _commit_id from lakerank.stg_payments__ingest_log")
    spark.createDataFrame(old.collect(), old.schema).createOrReplaceTempView("old_log")  # read before the overwrite
    spark.sql("insert overwrite table lakerank.stg_payments__ingest_log partition (_commit_id) "
              "select * from old_log").collect()
    # dbt labels the times UTC; PySpark hands instants over as this machine's local time
    started = dt.datetime.now()
    result = built.dbt("source", "freshness", expect_success=False)
    results = {r.node.unique_id: r for r in result.result.results if r.node.resource_type == "source"}  # not the hook
    assert set(results) == {PIPELINE_SOURCE, *EXAMPLE_SOURCES}
    stale = results.pop(STALE_SOURCE)
    assert str(stale.status) == "error" and abs(stale.age - 4 * 86400) < 900, (stale.status, stale.age)
    for name, r in results.items():
        assert str(r.status) == "pass", (name, r.status, r.message)
        assert 0 <= r.age < 900, (name, r.age, r.max_loaded_at, r.snapshotted_at)
        loaded, snapshot = (t.replace(tzinfo=None) for t in (r.max_loaded_at, r.snapshotted_at))
        assert loaded <= started + dt.timedelta(seconds=1) <= snapshot + dt.timedelta(seconds=1), (loaded, snapshot)


def test_ls_on_a_built_home_starts_no_session(built):
    """`dbt ls` of a built home with the process's session stopped: it starts none (no JVM
    work, no metastore), and lists the models and the sources; `--exclude tag:example` leaves
    out the examples' models and sources (as for `dbt source freshness`). Last in the file:
    the session stays stopped."""
    from pyspark.sql import SparkSession

    from dbt.adapters.lakerank.connections import stop_embedded_session

    stop_embedded_session()
    result = built.dbt("ls", "--resource-type", "model", "--resource-type", "source", "--exclude", "tag:example",
                       "--output", "name")
    assert SparkSession._instantiatedSession is None
    listed = set(result.result)
    assert {"fct_contract_rank", "published_commit", "lakerank_ingest.stg_contract_ingest_log"} <= listed, listed
    assert not {x for x in listed if "examples" in x or x in ("stg_payments", "dim_project_wide")}, listed
