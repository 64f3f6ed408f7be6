"""Crash soak (issue F.4): dbt and its JVM killed with SIGKILL (the whole process group) at
every commit step (of every pipeline model under LAKERANK_SOAK=long) and at random moments,
each time run again; after
each batch's completing rerun the ranks, zipper, changelog replay and ingest counts equal the
oracle's, and no directory of a dead attempt or commit beyond a watermark is left.

Kills at a step use the test-only fault `lakerank_fault: {model: kill:<step>}` (the process
SIGKILLs its own group there); random kills SIGKILL the group a random delay after a model's
START line. Every killed run is a whole `dbt run` of the pipeline that first recovers what the
previous kill left. While the first build runs, this process builds another home (issue F.6:
two homes never interfere)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading

import pytest

import cdc
from checks import assert_all_exact
from crash import DBT, dbt_subprocess
from lakerank_project import ROOT, Lakerank
from soak_check import check_home

RANK_FUNCTION = "dense_rank"
# In the order a one-thread build runs them: after the rank rewrite, dbt takes the four (one
# generation of its DAG) by node id.
MERGE_ON_READ = ("int_contract_block_rank", "int_project_block_offset", "int_project_block_version",
                 "int_project_rank_accumulation")
# Batch 1: the steps of an incremental commit, in the order a one-thread build reaches them
# (the ingest, the rank rewrite, then the four rank tables it feeds, then the publication);
# batch 2 compacts every commit (compact_commits 1): the compaction's steps. Then, in each
# batch, kills at random moments. (pk_table's own steps are killed in test_pk_table_crash.py.)
# Per commit, each step is killed once, at one of the four merge-on-read models (they share
# one materialization); the long soak (LAKERANK_SOAK=long, a scheduled job beside the
# per-commit CI: docs/decisions/0003-ci-coverage.md) kills every step of every model and more
# random moments.
LONG = os.environ.get("LAKERANK_SOAK") == "long"
STEP_KILLS = [
    [("stg_contract_changelog", "ingested"),
     ("int_contract_rank_rewrite", "recording"),
     *([(m, s) for m in MERGE_ON_READ for s in ("written", "committed")] if LONG else
       [("int_contract_block_rank", "written"), ("int_project_block_version", "committed")]),
     ("published_commit", "viewed"), ("published_commit", "published")],
    [*[(m, s) for m in MERGE_ON_READ for s in ("compacted", "viewed")]] if LONG else
    [("int_contract_block_rank", "compacted"), ("int_project_rank_accumulation", "viewed")],
]
# (Not the publication, the last and shortest model: a delay after its start often outlasts it.)
RANDOM_MODELS = ["stg_contract_changelog", "int_contract_rank_rewrite", *MERGE_ON_READ]
RANDOM_KILLS = 2 if LONG else 1  # per batch, more if one finishes first
# Per commit: 10 kills here, 5 in test_pk_table_crash.py, 1 of a snapshot in
# tests/adapter_suite/test_rewrites.py; the long soak: 24 here.
MIN_KILLS = 24 if LONG else 10


def soak_check(home, files, settings, tmp_path) -> None:
    """The completing rerun and the checks, in their own process (tests/support/soak_check.py):
    this process's JVM, once it opened the home's metastore, would hold it from the killed
    builds that follow."""
    spec = tmp_path / "soak.json"
    spec.write_text(json.dumps({"home": str(home), "vars": settings, "rank_function": RANK_FUNCTION,
                                "files": files}))
    env = {**os.environ, "LAKERANK_HOME": str(home)}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    proc = subprocess.run([sys.executable, str(ROOT / "tests" / "support" / "soak_check.py"), str(spec)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0 and "SOAK CHECK OK" in proc.stdout, proc.stdout[-1500:] + proc.stderr[-4000:]


@pytest.mark.skipif(DBT is None, reason="dbt CLI not on PATH")
def test_kills_at_every_commit_step_and_at_random_then_rerun_is_exact(runner, tmp_path):
    rng = random.Random(31)
    batches = cdc.generate_batches(seed=41, n_batches=3, events_per_batch=60, n_projects=6)
    lr = Lakerank(runner, tmp_path / "home")
    files = []

    def land(lines):
        files.append([os.path.basename(lr.land(lines)), lines])

    # The first build, uninterrupted, in its own process while this one builds another home.
    land(batches[0])
    other = Lakerank(runner, tmp_path / "other_home")
    other_lines = cdc.generate_batches(seed=42, n_batches=1, events_per_batch=50, n_projects=5)[0]
    other_oracle = cdc.Oracle()
    other_oracle.consume(os.path.basename(other.land(other_lines)), other_lines)
    first = {}
    worker = threading.Thread(target=lambda: first.update(result=dbt_subprocess(lr.home)))
    worker.start()
    try:
        other.dbt("build")
        assert_all_exact(other, other_oracle, RANK_FUNCTION)
    finally:
        worker.join()
    killed, rc, out = first["result"]
    assert rc == 0, out[-3000:]
    from dbt.adapters.lakerank.session import stop_embedded_session

    stop_embedded_session()  # this process's JVM stays off the soaked home

    kills, log = 0, []
    for b, step_kills in enumerate(STEP_KILLS):
        land(batches[b + 1])
        settings = {"compact_commits": 1 if b == 1 else 10}
        for model, step in step_kills:
            # one thread: the zipper and the fact, built side by side, then reach their steps in
            # this list's order (with four, a kill at one may come after the other committed)
            killed, rc, out = dbt_subprocess(lr.home, "run", "--threads", "1", vars=settings,
                                             fault={model: f"kill:{step}"})
            assert killed, f"{model} never reached step {step} (rc {rc}):\n{out[-3000:]}"
            kills += 1
            log.append(f"{model}:{step}")
        wanted = kills + RANDOM_KILLS if b < len(STEP_KILLS) - 1 else MIN_KILLS
        for _ in range(max(RANDOM_KILLS, wanted - kills) + 4):  # a build may finish first
            if kills >= wanted:
                break
            model = rng.choice(RANDOM_MODELS)
            delay = rng.uniform(0.0, 2.5)
            killed, rc, out = dbt_subprocess(lr.home, vars=settings, delay=delay,
                                             kill_after_marker=f"model lakerank.{model} ")
            assert killed or rc == 0, out[-3000:]
            kills += killed
            log.append(f"{model}+{delay:.1f}s{'' if killed else ' (finished first)'}")
        if b < len(STEP_KILLS) - 1:
            soak_check(lr.home, files, settings, tmp_path)
        else:  # no killed build follows: the same check in this process, its JVM already warm
            check_home(lr, files, settings, RANK_FUNCTION)
    print(f"{kills} kills: {', '.join(log)}")
    assert kills >= MIN_KILLS, log
