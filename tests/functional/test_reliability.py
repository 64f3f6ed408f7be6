"""Reliability: a build killed with SIGKILL (dbt and its JVM) at several points and run
again ends exactly as an uninterrupted build; a build on another home running at the same time
is not disturbed; a second build on a busy home refuses at once."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

import cdc
from checks import assert_all_exact
from lakerank_project import PIPELINE_ONLY, ROOT, Lakerank

DBT = shutil.which("dbt")


def dbt_subprocess(home, kill_after_marker: str | None = None, delay: float = 0.0, timeout: float = 600):
    """Run `dbt run` in its own process group; optionally SIGKILL the
    group `delay` seconds after a line containing `kill_after_marker` appears. Returns
    (killed, returncode, output)."""
    env = {**os.environ, "LAKERANK_HOME": str(home)}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    env.pop("LAKERANK_JVM_FLAGS", None)  # a scheduled build's JVM, as in production
    # Its own dbt target folder: the first run overlaps an in-process build of another home,
    # and two dbt processes must not write one manifest / partial-parse file.
    env["DBT_TARGET_PATH"] = os.environ.get("DBT_TARGET_PATH", "target") + "-subprocess"
    proc = subprocess.Popen(
        [DBT, "run", "--project-dir", str(ROOT), "--profiles-dir", str(ROOT / "profiles"), *PIPELINE_ONLY],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    killed = threading.Event()

    def kill_later():
        time.sleep(delay)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            killed.set()

    deadline = time.time() + timeout
    for line in proc.stdout:
        lines.append(line)
        if kill_after_marker and kill_after_marker in line and not killed.is_set():
            threading.Thread(target=kill_later, daemon=True).start()
            kill_after_marker = None
        if time.time() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            raise AssertionError("dbt subprocess timed out:\n" + "".join(lines[-40:]))
    proc.wait()
    return killed.is_set(), proc.returncode, "".join(lines)


@pytest.mark.skipif(DBT is None, reason="dbt CLI not on PATH")
def test_sigkill_at_any_stage_then_rerun_is_exact(lakerank, runner, tmp_path):
    rank_function = "dense_rank"
    rng = random.Random(7)
    batches = cdc.generate_batches(seed=21, n_batches=3, events_per_batch=50, n_projects=5)
    oracle = cdc.Oracle()
    home = lakerank.home

    first = lakerank.land(batches[0])
    oracle.consume(os.path.basename(first), batches[0])
    # Issue F.6: while the first build runs in its own process on this home, this process
    # builds another home with another stream; both end exact (two homes never interfere:
    # each has its own metastore, warehouse, checkpoints and lock).
    other = Lakerank(runner, tmp_path / "other_home")
    other_lines = cdc.generate_batches(seed=22, n_batches=1, events_per_batch=50, n_projects=5)[0]
    other_oracle = cdc.Oracle()
    other_oracle.consume(os.path.basename(other.land(other_lines)), other_lines)
    first_run = {}
    worker = threading.Thread(target=lambda: first_run.update(result=dbt_subprocess(home)))
    worker.start()
    try:
        other.dbt("build")
        other.dbt("run", "--select", "int_project_rank_version_history")
        assert_all_exact(other, other_oracle, rank_function)
    finally:
        worker.join()
    killed, rc, out = first_run["result"]
    assert rc == 0, out[-3000:]

    # Batch 1 lands: the run is killed during the ingest, its rerun during the accumulation.
    # Batch 2 lands beside the unfinished work: the next run (recovering the accumulation's
    # commit, with two files' changes pending downstream) is killed while the fact table
    # diffs/swaps; a `dbt build` then completes it, and its data tests check the recovered
    # tables. The killed runs are `dbt run`s: the kill points are models either way, and
    # without the data tests in between the kill in the fact table comes ~40 s sooner.
    plan = [
        (batches[1], [("stg_contract_changelog", 2.0), ("int_project_rank_accumulation", 1.0)]),
        (batches[2], [("START sql merge_on_read model lakerank.fct_contract_rank", 1.5)]),
    ]
    for lines, kills in plan:
        path = lakerank.land(lines)
        oracle.consume(os.path.basename(path), lines)
        for marker, delay in kills:
            killed, rc, out = dbt_subprocess(home, marker, delay + rng.random())
            assert killed or rc == 0, out[-3000:]
    # The run after the last kill is a `dbt build` in this process (its warm JVM opens the
    # home after the killed one): recovery is the home's, whichever process runs it, and
    # a cold process here would only repeat the start-up the killed runs already paid.
    lakerank.dbt("build")
    assert_all_exact(lakerank, oracle, rank_function)


def test_second_build_on_a_busy_home_refuses_at_once(lakerank):
    lakerank.land(cdc.generate_batches(seed=5, n_batches=1, events_per_batch=10)[0])
    home = lakerank.home
    home.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from dbt.adapters.lakerank.connections import acquire_build_lock;"
         "acquire_build_lock(sys.argv[1]); print('locked', flush=True); time.sleep(120)", str(home)],
        stdout=subprocess.PIPE, text=True, start_new_session=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        before = sorted(p.relative_to(home).as_posix() for p in home.rglob("*") if p.name != "build.lock")
        started = time.time()
        result = lakerank.dbt("build", expect_success=False)
        elapsed = time.time() - started
        assert not result.success
        message = str(result.exception) + " ".join(str(r.message) for r in (result.result or []))
        assert "another build is already running" in message, message
        assert elapsed < 30, f"refusal took {elapsed:.1f}s"
        after = sorted(p.relative_to(home).as_posix() for p in home.rglob("*") if p.name != "build.lock")
        assert after == before, "a refused build changed the home"
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait()
    # The lock is released with its holder: a build of the first model (it takes the lock
    # like any build) runs now.
    lakerank.dbt("run", "--select", "stg_contract_changelog")
