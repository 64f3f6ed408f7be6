"""The shared deployment (docs/deployment.md, issue R.1-3) against real services: PostgreSQL 15,
the Hive metastore service on it and s3proxy, each started and stopped by its script
(scripts/services/). The pipeline is built on it exactly (the catalog in PostgreSQL, the
warehouse and the landing zone on S3) and a plain pyspark reader in another process reads the
read layer. A missing prerequisite fails the test with what to install: it is never skipped."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
SERVICES = ROOT / "scripts" / "services"

# A plain pyspark reader: none of lakerank's code, only the shared settings.
READER = """
import json, os, sys
from pyspark.sql import SparkSession
spark = (SparkSession.builder.master("local[1]").enableHiveSupport()
         .config("spark.driver.extraClassPath", sys.argv[1])
         .config("spark.hadoop.hive.metastore.uris", os.environ["LAKERANK_METASTORE_URI"])
         .config("spark.sql.warehouse.dir", os.environ["LAKERANK_WAREHOUSE"])
         .config("spark.hadoop.fs.s3a.endpoint", os.environ["LAKERANK_S3_ENDPOINT"])
         .config("spark.hadoop.fs.s3a.endpoint.region", os.environ["AWS_REGION"])
         .config("spark.hadoop.fs.s3a.path.style.access", "true")
         .config("spark.sql.timestampType", "TIMESTAMP_NTZ")
         # Hive 2.3's partition filter grammar takes no name starting with "_" (`_commit_id`,
         # which the read layer's views filter on): Spark prunes on the client instead.
         .config("spark.sql.hive.metastorePartitionPruningFallbackOnException", "true")
         .config("spark.ui.enabled", "false").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
spark.catalog.databaseExists("default")  # started and connected while the builder builds
names = sys.stdin.readline().strip().split(",")  # the builder is done: what to read
print(json.dumps({n: spark.table(f"lakerank_read.{n}").count() for n in names}))
"""


def start(script: str, env: dict) -> dict:
    """``<script> start``'s KEY=VALUE lines; a failure names the script's own message (what
    is missing and how to install it)."""
    proc = subprocess.run(["bash", str(SERVICES / script), "start"], env=env, capture_output=True,
                          text=True, timeout=900)
    if proc.returncode != 0:
        pytest.fail(f"scripts/services/{script} start failed (prerequisites: PostgreSQL 15, Java 17, Maven; "
                    f"docs/services.md):\n{proc.stderr[-3000:]}", pytrace=False)
    return dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)


def stop(started: list) -> None:
    """``<script> stop <folder>`` of each service started, side by side."""
    procs = [subprocess.Popen(["bash", str(SERVICES / script), "stop", folder]) for script, folder in started]
    for proc in procs:
        proc.wait(timeout=120)


@pytest.fixture(scope="module")
def services():
    """PostgreSQL, s3proxy and the metastore service on them, for this module; stopped by pid."""
    env = dict(os.environ)
    started = []
    try:
        jars = subprocess.run(["bash", str(SERVICES / "jars.sh")], capture_output=True, text=True, timeout=1800)
        if jars.returncode != 0:
            pytest.fail(f"scripts/services/jars.sh failed:\n{jars.stderr[-3000:]}", pytrace=False)
        pg = start("postgres.sh", env)
        started.append(("postgres.sh", pg["LAKERANK_PG_DIR"]))
        s3 = start("s3proxy.sh", env)
        started.append(("s3proxy.sh", s3["LAKERANK_S3PROXY_DIR"]))
        settings = {**pg, **s3, "LAKERANK_WAREHOUSE": f"s3a://{s3['LAKERANK_S3_BUCKET']}/warehouse",
                    "LAKERANK_LANDING": f"s3a://{s3['LAKERANK_S3_BUCKET']}/landing"}
        ms = start("metastore.sh", {**env, **settings})
        started.append(("metastore.sh", ms["LAKERANK_METASTORE_DIR"]))
        yield {**settings, **ms, **dict(line.split("=", 1) for line in jars.stdout.splitlines() if "=" in line)}
    finally:
        stop(started)


def test_pipeline_exact_on_shared_catalog_and_s3(services, tmp_path):
    home = tmp_path / "home"
    env = {**os.environ, **services, "LAKERANK_HOME": str(home), "DBT_LOG_PATH": str(tmp_path / "dbt-logs"),
           "PYTHONPATH": os.pathsep.join([str(ROOT / "adapter"), str(ROOT), os.environ.get("PYTHONPATH", "")])}
    out = tmp_path / "result.json"
    # Another process, plain pyspark, reads the read layer through the same catalog once the
    # builder is done; its JVM starts meanwhile.
    from dbt.adapters.lakerank.session import S3A_JARS

    class_path = os.pathsep.join(os.path.join(services["LAKERANK_JARS"], j) for j in S3A_JARS)
    reader_log = tmp_path / "reader.log"
    with open(reader_log, "w") as log:
        reader = subprocess.Popen([sys.executable, "-c", READER, class_path], env={**env, "PYTHONPATH": ""},
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        proc = subprocess.run([sys.executable, str(ROOT / "tests" / "support" / "shared_scenario.py"), str(out)],
                              env=env, cwd=ROOT, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
        result = json.loads(out.read_text())
        print("shared scenario timings (s):", result["timings"])
        # The tables are on S3, the catalog is the service's: the home keeps neither.
        assert result["location"].startswith(f"s3a://{services['LAKERANK_S3_BUCKET']}/warehouse/"), result["location"]
        assert not (home / "warehouse").exists() and not (home / "metastore_db").exists(), sorted(os.listdir(home))

        read, _ = reader.communicate(",".join(result["counts"]) + "\n", timeout=600)
        assert reader.returncode == 0, reader_log.read_text()[-4000:]
        assert json.loads(read.strip().splitlines()[-1]) == result["counts"]
        assert all(result["counts"].values()), result["counts"]
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()

    # The S3 secret appears in no log, output or summary of the build.
    secret = services["AWS_SECRET_ACCESS_KEY"]
    texts = [proc.stdout, proc.stderr, read, reader_log.read_text(errors="replace")]
    for folder in (home, tmp_path / "dbt-logs"):
        texts += [p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file()]
    assert not any(secret in t for t in texts)
