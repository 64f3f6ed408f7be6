"""The `connect` target for real (issue E.2-E.4 a): `lakerank serve` on a temporary home, and
the pipeline built with `dbt build --target connect` from this process, whose only Spark is a
Spark Connect client (SQL over Connect; the commits' driver calls and the Python ingest on the
server's driver, in this client's session). A generated stream with late, duplicate,
updated, moved and deleted events; every build is checked exact against the oracle, read back
over Connect.

Consistent reads (issue F.3), in the same test: from the first build on, a second Connect
client in another process reads the read layer (`lakerank_read`) and the marts continuously
while builds run, crash part-way (a fact-table commit left unrecorded, a compaction) and are
run again. It is never blocked and never fails, and only ever sees every mart at one published
commit: each of its samples (published commit, fact table, zipper and changelog summaries, one
query) equals the marts' summaries after the build that published that commit. (One test, one
server: the two were separate tests, ~130 s of the CI's budget apart.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from test_rank_regressions import scenario_batch

import cdc
from checks import READ_LAYER_SUMMARY, assert_all_exact, assert_reads_consistent, mart_summary
from dbt.adapters.lakerank import serve
from dbt.adapters.lakerank.home import read_state
from dbt.adapters.lakerank.remote import close_connect_sessions, connect_session
from lakerank_project import ROOT


@pytest.fixture
def served_home(lakerank, monkeypatch):
    """`lakerank serve` on the test's home; the connect target selected."""
    home = str(lakerank.home)
    args = ["serve", "--home", home, "--port", "0", "--project-dir", str(ROOT)]
    assert serve.main([*args, "--background"]) == 0
    monkeypatch.setenv("LAKERANK_TARGET", "connect")
    state = read_state(home)
    spark, _endpoint = connect_session(home)
    lakerank.spark = lambda: spark  # the checks read the marts over Connect too
    try:
        yield state
    finally:
        close_connect_sessions()
        assert serve.main(["serve", "--home", home, "--stop"]) == 0


def test_connect_target_without_a_server_says_how_to_start_one(lakerank, monkeypatch):
    monkeypatch.setenv("LAKERANK_TARGET", "connect")
    result = lakerank.dbt("run", expect_success=False)
    messages = str(result.exception) + " ".join(str(r.message) for r in (result.result or []))
    assert "lakerank serve --background" in messages, messages


CONSISTENT_READER = textwrap.dedent("""\
    import json, os, sys, time
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
    samples, errors = [], []
    while not os.path.exists(sys.argv[2]):
        try:
            samples.append([int(x) for x in spark.sql(sys.argv[3]).first()])
            spark.sql("select count(*), max(asc_rn) from lakerank.fct_contract_rank").collect()
        except Exception as exc:
            errors.append(str(exc)[:500])
        time.sleep(0.1)
    print(json.dumps({"samples": samples, "errors": errors}))
    """)


def test_pipeline_through_lakerank_serve_is_exact_and_readers_see_one_published_commit(lakerank, served_home,
                                                                                       tmp_path):
    batches = cdc.generate_batches(seed=41, n_batches=3, events_per_batch=60, n_projects=6)
    oracle = cdc.Oracle()
    spark = lakerank.spark()
    # Each batch's first build crashes at the named step (None: no crash); the rerun finishes it.
    # (Kills at every step of every model, without readers: test_crash_soak.py.)
    crashes = [None, {"int_contract_block_rank": "committed"}, {"int_project_block_version": "compacted"}]
    expected, reader, stop = {}, None, tmp_path / "stop-reader"
    for i, (generated, crash) in enumerate(zip(batches, crashes)):
        lines = [*generated, *scenario_batch(i)]  # beside the stream, issue F.1's moves
        path = lakerank.land(lines)
        oracle.consume(os.path.basename(path), lines)
        settings = {"compact_commits": 1 if i == 2 else 10}  # batch 2 compacts every table
        if crash:
            failed = lakerank.dbt("build", vars={**settings, "lakerank_fault": crash}, expect_success=False)
            assert not failed.success
        lakerank.dbt("build", vars=settings)
        assert_all_exact(lakerank, oracle, "dense_rank")
        summary = mart_summary(spark)
        published = spark.sql("select max(commit_id) from lakerank_read.published_commit").first()[0]
        assert published == summary[0], (published, summary)
        expected[summary[0]] = summary
        if reader is None:  # a second client reads while the next builds run (and crash)
            reader = subprocess.Popen([sys.executable, "-c", CONSISTENT_READER, served_home["url"], str(stop),
                                       READ_LAYER_SUMMARY],
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                      env={**os.environ, serve.TOKEN_ENV: served_home["token"]})
    stop.touch()
    out, err = reader.communicate(timeout=120)
    assert reader.returncode == 0, err[-3000:]
    report = json.loads(out.strip().splitlines()[-1])
    # never blocked, never failed: reading the marts themselves too
    assert_reads_consistent(report, expected)
    assert {s[0] for s in report["samples"]} >= set(list(expected)[1:]), (report["samples"], expected)
    shown = lakerank.dbt("show", "--inline", "select count(*) as n from lakerank.fct_contract_rank")
    assert int(shown.result.results[0].agate_table.rows[0]["n"]) == len(lakerank.table("fct_contract_rank"))
    # This process built through the server and holds the home's connect build lock: a
    # second build (another process) refuses at once, a reader (`dbt show`) does not.
    env = {**os.environ, "LAKERANK_HOME": str(lakerank.home), "LAKERANK_TARGET": "connect"}
    where = ["--project-dir", str(ROOT), "--profiles-dir", str(ROOT / "profiles")]
    dbt = [sys.executable, "-m", "dbt.cli.main"]
    second = subprocess.run([*dbt, "run", *where], env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode != 0 and "another build is already running" in second.stdout, second.stdout[-2000:]
    reader = subprocess.run([*dbt, "show", "--inline", "select 1 as one", *where], env=env, capture_output=True,
                            text=True, timeout=300)
    assert reader.returncode == 0, reader.stdout[-2000:]
