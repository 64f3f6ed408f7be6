"""The shared deployment (docs/deployment.md, issue R.1-3) against real services: PostgreSQL 15,
the Hive metastore service on it and s3proxy, each started and stopped by its script
(scripts/services/). The pipeline is built on it exactly, for every rank function (the catalog
in PostgreSQL, the warehouse and the landing zone on S3, the executors on a standalone
cluster) and a plain pyspark reader in another process reads the read layer while the second
batch is built (a failed attempt, then the build that finishes it): every read sees one
published commit whole (issue R.5). Two builders race
on the same catalog and bucket, one killed mid-commit (issue R.4: the lease, the fence, the
scoped sweep). A missing prerequisite fails the test with what to install: it is never
skipped."""

from __future__ import annotations

import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import pytest

from checks import READ_LAYER_SUMMARY, assert_reads_consistent
from standalone import standalone_cluster

ROOT = pathlib.Path(__file__).resolve().parents[2]
SERVICES = ROOT / "scripts" / "services"

# A plain pyspark reader: none of lakerank's code, only the shared settings.
READER = """
import json, os, sys, time
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
start, stop, query = sys.argv[2:5]
while not os.path.exists(start):  # the first build has published
    time.sleep(0.2)
samples, errors = [], []
while not os.path.exists(stop):  # through the second build and its failed attempt
    try:
        samples.append([int(x) for x in spark.sql(query).first()])
    except Exception as exc:
        errors.append(str(exc)[:500])
    time.sleep(0.2)
names = sys.stdin.readline().strip().split(",")  # the builder is done: what to read
counts = {n: spark.table(f"lakerank_read.{n}").count() for n in names}
print(json.dumps({"counts": counts, "samples": samples, "errors": errors}))
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
def stores():
    """PostgreSQL and s3proxy, for this module; stopped by pid."""
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
        yield {**pg, **s3, **dict(line.split("=", 1) for line in jars.stdout.splitlines() if "=" in line)}
    finally:
        stop(started)


def catalog(stores: dict, database: str, prefix: str):
    """A metastore service on the catalog ``database`` of the stores' PostgreSQL, its warehouse
    and landing zone under ``prefix`` of the bucket: its settings, while it runs."""
    bucket = stores["LAKERANK_S3_BUCKET"]
    settings = {**stores, "LAKERANK_METASTORE_DB": database, "LAKERANK_WAREHOUSE": f"s3a://{bucket}/{prefix}warehouse",
                "LAKERANK_LANDING": f"s3a://{bucket}/{prefix}landing"}
    ms = start("metastore.sh", {**os.environ, **settings})
    try:
        yield {**settings, **ms}
    finally:
        stop([("metastore.sh", ms["LAKERANK_METASTORE_DIR"])])


@pytest.fixture(scope="module")
def services(stores):
    """The stores and a metastore service on them, for this module."""
    yield from catalog(stores, "metastore", "")


@pytest.fixture
def race_catalog(stores):
    """A catalog of its own (another metastore service, warehouse and landing zone) on the same
    stores: the race starts from nothing, whatever ran before it in the module."""
    yield from catalog(stores, "race", "race/")


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
        reader = subprocess.Popen([sys.executable, "-c", READER, class_path, f"{out}.start", f"{out}.stop",
                                   READ_LAYER_SUMMARY], env={**env, "PYTHONPATH": ""},
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        # Executors on a standalone cluster (a master and a 2-core worker on this host, S3's
        # credentials in their environment): every task reads and writes S3 from there.
        (tmp_path / "cluster").mkdir()
        with standalone_cluster(tmp_path / "cluster", env=env) as master:
            env = {**env, "LAKERANK_SPARK_MASTER": master, "PYSPARK_PYTHON": sys.executable}
            proc = subprocess.run([sys.executable, str(ROOT / "tests" / "support" / "shared_scenario.py"), str(out)],
                                  env=env, cwd=ROOT, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
        result = json.loads(out.read_text())
        print("shared scenario timings (s):", result["timings"])
        assert result["master"] == master, result["master"]
        # The tables are on S3, the catalog is the service's: the home keeps neither.
        assert result["location"].startswith(f"s3a://{services['LAKERANK_S3_BUCKET']}/warehouse/"), result["location"]
        assert not (home / "warehouse").exists() and not (home / "metastore_db").exists(), sorted(os.listdir(home))

        read, _ = reader.communicate(",".join(result["counts"]) + "\n", timeout=600)
        assert reader.returncode == 0, reader_log.read_text()[-4000:]
        report = json.loads(read.strip().splitlines()[-1])
        assert report["counts"] == result["counts"]
        assert all(result["counts"].values()), result["counts"]
        # While the second batch was built (a failed attempt, then the build that finished
        # it), every read saw one published commit whole, and saw both commits.
        expected = {int(k): v for k, v in result["expected"].items()}
        print("reader samples during the second batch's builds:", len(report["samples"]))
        assert_reads_consistent(report, expected, min_samples=5)
        assert {s[0] for s in report["samples"]} == set(expected), (report["samples"], expected)
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


class Builder:
    """A racing builder (tests/support/race_builder.py): its own process group, LAKERANK_HOME,
    dbt target and log folders; the shared catalog and bucket of ``services``."""

    def __init__(self, name: str, services: dict, tmp_path: pathlib.Path):
        self.results, self.log = tmp_path / f"{name}.jsonl", tmp_path / f"{name}.log"
        self.results.touch()
        env = {**os.environ, **services, "LAKERANK_HOME": str(tmp_path / name), "LAKERANK_LEASE_TTL": "10",
               "DBT_TARGET_PATH": str(tmp_path / f"target-{name}"), "DBT_LOG_PATH": str(tmp_path / f"logs-{name}"),
               "LAKERANK_TEST_HOOKS": "1",
               "PYTHONPATH": os.pathsep.join([str(ROOT / "adapter"), str(ROOT), os.environ.get("PYTHONPATH", "")])}
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "support" / "race_builder.py"),
                                          str(self.results)], env=env, cwd=ROOT, stdin=subprocess.PIPE, stdout=log,
                                         stderr=subprocess.STDOUT, text=True, start_new_session=True)
        self.seen = 0

    def send(self, **command) -> None:
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()

    def result(self, timeout: float = 600) -> dict:
        """The next result line; None when the process died first."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            lines = self.results.read_text().splitlines()
            if len(lines) > self.seen:
                self.seen += 1
                return json.loads(lines[self.seen - 1])
            if self.proc.poll() is not None:
                return None
            time.sleep(0.5)
        raise AssertionError(f"no result in {timeout} s; log:\n{self.text()[-4000:]}")

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_for(self, needle: str, after: int, timeout: float = 300) -> None:
        deadline = time.time() + timeout
        while needle not in self.text()[after:]:
            assert time.time() < deadline and self.proc.poll() is None, self.text()[-4000:]
            time.sleep(0.5)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def ok(builder: Builder, result) -> dict:
    assert result is not None and result["ok"], (result, builder.text()[-6000:])
    return result


WAITED = "waiting for the shared catalog's build lease, held by writer"
TOOK_OVER = "took over the shared catalog's build lease from writer"
LOST = "this build lost the shared catalog's build lease"


def stopped(pid: int) -> bool:
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().rsplit(")", 1)[1].split()[0] == "T"


def test_several_writers_race_and_one_is_killed_mid_commit(race_catalog, tmp_path):
    """Two builders, separate homes, one catalog and bucket, race three rounds of landed events:
    1. both build at once: one waits for the lease, then finds nothing new;
    2. A pauses (SIGSTOP) after staging a commit; its lease runs out, B takes it over, sweeps
       A's stage and commits; A, continued, is refused (its lease was lost) and commits nothing;
    3. A is killed (SIGKILL) between a commit's audit partition and its record while B waits: B
       takes the lease over and finishes the commit.
    Then every table is exact against the oracle (each landed event applied once: the ingest
    log reconciles), no partition's directory was deleted, a record expecting a stale commit
    id is refused by the metastore, and a writer whose lease was taken over leaves the new
    holder's stage when it sweeps and refuses to recover."""
    started, timings = time.time(), {}
    a, b = Builder("a", race_catalog, tmp_path), Builder("b", race_catalog, tmp_path)
    try:
        ok(a, a.result()), ok(b, b.result())
        timings["ready"] = round(time.time() - started, 1)
        a.send(cmd="land", batch=0)
        ok(a, a.result())
        a.send(cmd="build"), b.send(cmd="build")
        timings["race"] = [ok(a, a.result())["seconds"], ok(b, b.result())["seconds"]]
        assert WAITED in a.text() + b.text(), "one builder waits for the other"

        a.send(cmd="land", batch=1)
        ok(a, a.result())
        a.send(cmd="build", fault={"int_contract_block_rank": "stop:written"})
        deadline = time.time() + 300
        while not stopped(a.proc.pid):
            assert time.time() < deadline and a.proc.poll() is None, a.text()[-4000:]
            time.sleep(0.5)
        mark = len(b.text())
        b.send(cmd="build")
        timings["paused"] = ok(b, b.result())["seconds"]
        assert TOOK_OVER in b.text()[mark:], b.text()[-4000:]
        os.kill(a.proc.pid, signal.SIGCONT)
        lost = a.result()
        assert lost is not None and not lost["ok"], lost
        assert any(f.startswith("int_contract_block_rank: ") and LOST in f for f in lost["failed"]), lost

        a.send(cmd="land", batch=2)
        ok(a, a.result())
        mark = len(a.text())
        a.send(cmd="build", fault={"int_contract_block_rank": "kill:committed"})
        a.wait_for("START", mark)  # it holds the lease
        b.send(cmd="build")
        assert a.result() is None and a.proc.wait(timeout=60) == -signal.SIGKILL, a.text()[-4000:]
        mark = len(b.text())
        timings["killed"] = ok(b, b.result())["seconds"]
        assert WAITED in b.text() and TOOK_OVER in b.text()[mark:], b.text()[-4000:]

        b.send(cmd="check", batches=3)
        checked = ok(b, b.result())
        assert "has been modified" in checked["fenced"] and "lakerank.commit_id" in checked["fenced"], checked
        assert f"{LOST} (taken over by writer w0d15ea5e" in checked["lost"], checked
    finally:
        a.stop()
        b.stop()
    timings["total"] = round(time.time() - started, 1)
    print("several writers timings (s):", timings)
    secret = race_catalog["AWS_SECRET_ACCESS_KEY"]
    assert not any(secret in p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file()
                   and p.suffix in (".log", ".jsonl", ".json"))
