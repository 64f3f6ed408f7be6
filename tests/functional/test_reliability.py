"""Reliability: a second build on a busy home refuses at once and changes nothing. (Builds
killed with SIGKILL and run again, and two homes building at once: test_crash_soak.py.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import cdc


def test_second_build_on_a_busy_home_refuses_at_once(lakerank):
    lakerank.land(cdc.generate_batches(seed=5, n_batches=1, events_per_batch=10)[0])
    home = lakerank.home
    home.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time; from dbt.adapters.lakerank.home import acquire_build_lock;"
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
