#!/usr/bin/env python3
"""Crash soak (issue F.4): kill -9 scheduled builds at random moments, rerun, check exactness.

One home, one generated CDC stream (late, duplicate, stale, updated, moved and deleted
events: tests/support/cdc.py). Each cycle lands a batch, then runs `dbt build` in its own
process group and SIGKILLs the group (dbt and its JVM) at a uniformly random moment of the
build, `--kills-per-cycle` times in a row (so a kill also lands in the recovery of the killed
build before it), then runs `dbt build` to the end. After every completed build a separate
process opens the home and checks, against the oracle computed from the landed files:
ranks, the zipper, the changelog replay and the ingest's counts (tests/support/checks.py);
that no pk_table stage directory (`<table>/_v/*`) is left that no partition points to; and
that no `__stage` table is left. Each kill is reported with the model that was running.

    python3 scripts/soak.py --kills 30                 # the long soak (manual; ~1 h here)
    python3 scripts/soak.py --kills 6 --work /tmp/soak  # a short one

Exit status 1 if any completed build failed or any check did not hold.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import pathlib
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests" / "support"
DBT = shutil.which("dbt")
START = re.compile(r"START \S+ (?:\S+ )?model lakerank\.(\w+)")


def dbt_build(home: pathlib.Path, kill_after: float | None) -> tuple[bool, int, str, float]:
    """`dbt build` of the pipeline in its own process group; SIGKILL the group ``kill_after``
    seconds after the start (None: run to the end). Returns (killed, rc, output, seconds)."""
    env = {**os.environ, "LAKERANK_HOME": str(home), "DBT_TARGET_PATH": "target/soak"}
    env.pop("LAKERANK_JVM_FLAGS", None)  # a scheduled build's JVM
    cmd = [DBT, "build", "--project-dir", str(ROOT), "--profiles-dir", str(ROOT / "profiles")]
    started = time.time()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    killed = threading.Event()
    if kill_after is not None:
        def kill():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                killed.set()
        timer = threading.Timer(kill_after, kill)
        timer.start()
    try:
        out = proc.stdout.read()
        proc.wait()
    except BaseException:  # e.g. Ctrl-C: the build runs in its own session, do not leave it
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    if kill_after is not None:
        timer.cancel()
    return killed.is_set(), proc.returncode, out, time.time() - started


def running_model(output: str) -> str:
    """The last model a killed build had started ('(start-up)' if none)."""
    found = START.findall(output)
    return found[-1] if found else "(start-up)"


def verify(home: pathlib.Path, rank_function: str) -> list[str]:
    """Checks in this process (it opens the home's metastore): returns the problems found."""
    sys.path.insert(0, str(TESTS))
    from dbt.cli.main import dbtRunner

    import cdc
    from checks import assert_all_exact
    from crash import assert_no_leftovers
    from lakerank_project import Lakerank

    os.environ["DBT_TARGET_PATH"] = "target/soak-verify"
    lr = Lakerank(dbtRunner(), home)
    oracle = cdc.Oracle()
    oracle.consume_dir(lr.landing)
    lr.dbt("run", "--select", "int_project_rank_version_history")
    problems = []
    try:
        assert_all_exact(lr, oracle, rank_function)
    except AssertionError as exc:
        problems.append(f"not exact: {str(exc)[:2000]}")
    try:
        assert_no_leftovers(lr.spark())
    except AssertionError as exc:
        problems.append(f"left behind: {exc}")
    return problems


def verify_in_subprocess(home: pathlib.Path, rank_function: str) -> list[str]:
    env = {**os.environ, "LAKERANK_HOME": str(home)}
    env.pop("LAKERANK_JVM_FLAGS", None)
    proc = subprocess.run([sys.executable, __file__, "--verify", str(home), "--rank-function", rank_function],
                          cwd=ROOT, env=env, capture_output=True, text=True)
    marker = [line for line in proc.stdout.splitlines() if line.startswith("PROBLEMS ")]
    if proc.returncode != 0 or not marker:
        return [f"verification crashed (rc {proc.returncode}): {(proc.stdout + proc.stderr)[-2000:]}"]
    return json.loads(marker[-1][len("PROBLEMS "):])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kills", type=int, default=30, help="stop after this many builds were killed")
    p.add_argument("--kills-per-cycle", type=int, default=2)
    p.add_argument("--events", type=int, default=40, help="events per landed batch")
    p.add_argument("--projects", type=int, default=6)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rank-function", default="dense_rank")
    p.add_argument("--work", default=None, help="where the home goes (default: a temp dir)")
    p.add_argument("--verify", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.verify:
        problems = verify(pathlib.Path(args.verify), args.rank_function)
        print("PROBLEMS " + json.dumps(problems), flush=True)
        return 0
    if DBT is None:
        print("dbt CLI not on PATH", file=sys.stderr)
        return 1

    sys.path.insert(0, str(TESTS))
    import cdc

    work = pathlib.Path(args.work or tempfile.mkdtemp(prefix="lakerank-soak-"))
    home = work / "home"
    shutil.rmtree(home, ignore_errors=True)
    rng = random.Random(args.seed)
    cycles = -(-args.kills // args.kills_per_cycle) + 1
    batches = cdc.generate_batches(seed=args.seed, n_batches=cycles + 1, events_per_batch=args.events,
                                   n_projects=args.projects)
    landing = home / "landing" / "contracts"
    kills: list[tuple[int, float, str]] = []
    failures: list[str] = []
    estimate = None
    for cycle, lines in enumerate(batches):
        cdc.write_batch(landing, cycle, lines)
        if estimate is not None and len(kills) < args.kills:
            for _ in range(args.kills_per_cycle):
                delay = rng.uniform(2.0, estimate)
                killed, rc, out, _secs = dbt_build(home, delay)
                if killed:
                    kills.append((cycle, round(delay, 1), running_model(out)))
                    print(f"cycle {cycle}: killed at {delay:.1f}s during {kills[-1][2]}", flush=True)
                elif rc != 0:
                    failures.append(f"cycle {cycle}: an unkilled build failed:\n{out[-3000:]}")
        _killed, rc, out, secs = dbt_build(home, None)
        estimate = secs
        if rc != 0:
            failures.append(f"cycle {cycle}: the rerun failed:\n{out[-3000:]}")
            break
        problems = verify_in_subprocess(home, args.rank_function)
        print(f"cycle {cycle}: rerun {secs:.0f}s, checks: {'exact' if not problems else problems}", flush=True)
        failures += [f"cycle {cycle}: {p}" for p in problems]
        if failures or len(kills) >= args.kills:
            break
    by_model = collections.Counter(model for _c, _d, model in kills)
    print(f"\n{len(kills)} kills survived; by running model: {dict(by_model)}")
    print(f"{len(failures)} failures" + ("".join("\n- " + f for f in failures) if failures else ""))
    return 1 if failures or len(kills) < args.kills else 0


if __name__ == "__main__":
    sys.exit(main())
