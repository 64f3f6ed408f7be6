"""A Spark standalone master and one worker, started from the pyspark wheel's own `spark-class`
on 127.0.0.1 only, for the tests that run the pipeline's tasks on a cluster
(tests/functional/test_cluster_target.py, test_shared_deployment.py)."""

from __future__ import annotations

import contextlib
import os
import pathlib
import signal
import socket
import subprocess
import sys
import time
from typing import Dict, Iterator, Optional


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _spark_class(*args: str, log, env) -> subprocess.Popen:
    import pyspark

    cmd = [os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-class"), *args]
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)


def _wait_for(path: pathlib.Path, text: str, proc: subprocess.Popen, timeout_s: float = 120) -> None:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"{proc.args[1]} exited: {path.read_text()[-2000:]}")
        if text in path.read_text(errors="replace"):
            return
        time.sleep(0.5)
    raise AssertionError(f"no '{text}' in {path} after {timeout_s} s: {path.read_text()[-2000:]}")


@contextlib.contextmanager
def standalone_cluster(folder: pathlib.Path, env: Optional[Dict[str, str]] = None) -> Iterator[str]:
    """``spark://127.0.0.1:<port>`` of a master with one 2-core worker, logs and work dirs in
    ``folder``; ``env``: the environment of both (the worker's executors inherit it, e.g. the
    S3 credentials). Stopped on exit."""
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    env = {**(env if env is not None else os.environ), "SPARK_LOCAL_IP": "127.0.0.1",
           "PYSPARK_PYTHON": sys.executable, "SPARK_WORKER_DIR": str(folder / "work")}
    procs = []
    with open(folder / "master.log", "wb") as mlog, open(folder / "worker.log", "wb") as wlog:
        procs.append(_spark_class("org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                  "--port", str(port), "--webui-port", str(free_port()), log=mlog, env=env))
        try:
            _wait_for(folder / "master.log", "I have been elected leader", procs[0])
            procs.append(_spark_class("org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                                      "--cores", "2", "--memory", "2g", "--webui-port", str(free_port()),
                                      url, log=wlog, env=env))
            _wait_for(folder / "worker.log", "Successfully registered with master", procs[1])
            yield url
        finally:
            for proc in reversed(procs):
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=60)
