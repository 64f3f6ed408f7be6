"""The `cluster` target for real (issue E.4 b): a standalone master and one worker started
from the pyspark wheel's own `spark-class`, on 127.0.0.1 only, and the pipeline built through
them (driver in the dbt process, every task on the worker's executor, the ingest's streaming query
included)
on a generated stream with late, duplicate, updated, moved and deleted events; every build is
checked exact against the oracle. Stopped at the end.

Two builds: the first creates every table on the cluster, the second commits a batch that
holds every case of the generator (cdc.REQUIRED_CASES, from batch 1 on) incrementally. Longer
histories (compaction, issue F.1's later moves) are test_pipeline_exact's, on the embedded
target: what they exercise is the pipeline's SQL, not where its tasks run."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

import pytest
from test_rank_regressions import scenario_batch

import cdc
from checks import assert_all_exact
from dbt.adapters.lakerank.session import stop_embedded_session


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spark_class(*args: str, log, env) -> subprocess.Popen:
    import pyspark

    cmd = [os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-class"), *args]
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _wait_for(path, text: str, proc: subprocess.Popen, timeout_s: float = 120) -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"{proc.args[1]} exited: {path.read_text()[-2000:]}")
        if text in path.read_text(errors="replace"):
            return
        time.sleep(0.5)
    raise AssertionError(f"no '{text}' in {path} after {timeout_s} s: {path.read_text()[-2000:]}")


@pytest.fixture
def standalone_cluster(tmp_path):
    """``spark://127.0.0.1:<port>`` of a master with one 2-core worker."""
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
           "SPARK_WORKER_DIR": str(tmp_path / "work")}
    procs = []
    with open(tmp_path / "master.log", "wb") as mlog, open(tmp_path / "worker.log", "wb") as wlog:
        procs.append(_spark_class("org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                  "--port", str(port), "--webui-port", str(_free_port()), log=mlog, env=env))
        try:
            _wait_for(tmp_path / "master.log", "I have been elected leader", procs[0])
            procs.append(_spark_class("org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                                      "--cores", "2", "--memory", "2g", "--webui-port", str(_free_port()),
                                      url, log=wlog, env=env))
            _wait_for(tmp_path / "worker.log", "Successfully registered with master", procs[1])
            yield url
        finally:
            for proc in reversed(procs):
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=60)


def test_pipeline_on_a_standalone_cluster_is_exact(lakerank, standalone_cluster, monkeypatch):
    monkeypatch.setenv("LAKERANK_TARGET", "cluster")
    monkeypatch.setenv("LAKERANK_SPARK_MASTER", standalone_cluster)
    monkeypatch.setenv("PYSPARK_PYTHON", sys.executable)
    batches = cdc.generate_batches(seed=31, n_batches=2, events_per_batch=60, n_projects=6)
    oracle = cdc.Oracle()
    try:
        for i, generated in enumerate(batches):
            lines = [*generated, *scenario_batch(i)]  # beside the stream, issue F.1's moves
            path = lakerank.land(lines)
            oracle.consume(os.path.basename(path), lines)
            lakerank.dbt("build")
            assert_all_exact(lakerank, oracle, "dense_rank")
        master = lakerank.spark().sparkContext.master
        assert master == standalone_cluster, master
    finally:
        stop_embedded_session()  # before the cluster it runs on is stopped
