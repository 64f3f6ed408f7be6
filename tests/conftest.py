"""Shared fixtures: real dbt invocations (dbtRunner, in-process) on a real embedded
SparkSession, one LAKERANK_HOME per test under pytest's tmp_path. One JVM serves the
whole session; switching homes restarts the SparkSession on the new home's metastore."""

from __future__ import annotations

import os
import pathlib
import sys

import pytest

# The test JVMs keep the adapter's C1-only JIT (no LAKERANK_JVM_FLAGS override). C2 looked
# faster alone on the box (vectors probe 374 -> 334 s), but its compiler threads took a third
# of the JVM's CPU (61 of 193 CPU-s on the 11-plan probe), which the CI's two workers do not
# have to spare: two workers on a mixed subset, C1-only 404 s against C2 457 s
# (measured 2026-11-24, 7def0fa).
# One shuffle partition per core for the tests' tiny data (the profile's default is 4):
# Paimon vectors subset 172 -> 158 s side by side.
os.environ.setdefault("LAKERANK_SHUFFLE_PARTITIONS", "2")
# The library's fault injection (var lakerank_fault, lakerank_lib/macros/testing/faults.sql)
# is refused outside tests.
os.environ["LAKERANK_TEST_HOOKS"] = "1"
# The build summary (an on-run-end hook, ~0.5 s a build) is checked in test_pipeline_exact,
# which turns it on; every other build of the suite skips it (the CI budget).
os.environ.setdefault("LAKERANK_BUILD_SUMMARY", "off")

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
for p in (str(HERE / "support"), str(ROOT)):
    if p not in sys.path:
        sys.path.insert(0, p)

from lakerank_project import Lakerank  # noqa: E402


@pytest.fixture(scope="session")
def runner():
    from dbt.cli.main import dbtRunner

    # Each xdist worker keeps its own target/ (partial-parse state, manifest) and logs/: two
    # workers sharing one would overwrite each other's saved manifest, and each invocation
    # would re-parse the whole project instead of reusing it. (The environment, not xdist's
    # `worker_id` fixture: the suite also runs with `-p no:xdist`.)
    worker_id = os.environ.get("PYTEST_XDIST_WORKER", "master")
    os.environ["DBT_TARGET_PATH"] = f"target/pytest-{worker_id}"
    os.environ["DBT_LOG_PATH"] = str(ROOT / "logs" / f"pytest-{worker_id}")
    # No test reads manifest.json or run_results.json (results come back in-process), and
    # writing them cost ~0.4 s of every invocation (pk_table commit probe, docs/benchmarks.md).
    # Partial parsing's own state is still saved. Subprocess builds inherit it; DBT_WRITE_JSON=true
    # in the environment keeps the artifacts.
    os.environ.setdefault("DBT_WRITE_JSON", "false")
    return dbtRunner()


@pytest.fixture
def lakerank(runner, tmp_path) -> Lakerank:
    return Lakerank(runner, tmp_path / "home")


def pytest_sessionfinish(session, exitstatus):
    """Never let an empty run pass: no tests collected is a failure."""
    if session.testscollected == 0:
        session.exitstatus = 1


# scripts/test.sh runs pytest on two xdist workers with `--dist loadgroup
# --no-loadscope-reorder`. A file's tests share module fixtures and homes, so each file is one
# group (one worker), except the files below, whose tests are independent and long: each test
# is its own group, so the two workers share them. Groups are handed out in this order,
# longest first (worker-seconds of the CI at 87e041c, 2026-11-27, the vectors and the cluster
# test as cut since), so no worker is left with a long group
# at the end.
SPLIT_FILES = {"test_pipeline_exact.py", "test_connect_target.py"}
# dbt's adapter suite (tests/adapter_suite) is one group: its classes share one home, and a
# worker switching between it and another file's home restarts its SparkSession each time.
ADAPTER_SUITE = "adapter_suite"
LONGEST_FIRST = ["test_crash_soak.py", ADAPTER_SUITE, "test_connect_target.py", "test_pk_table_crash.py",
                 "test_paimon_vectors.py", "test_pipeline_exact.py", "test_examples.py", "test_shared_deployment.py",
                 "test_debezium_replay.py", "test_cluster_target.py", "test_cdc_formats.py",
                 "test_cdc_log_order.py", "test_contract_ingest.py",
                 "test_schema_change.py", "test_temporal_macros.py", "test_thrift_target.py",
                 "test_pk_table_properties.py", "test_rank_regressions.py", "test_serve.py",
                 "test_reliability.py", "test_session_settings.py", "test_java_setup.py"]


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which turns the marks into groups
def pytest_collection_modifyitems(config, items):
    for item in items:
        name = item.path.name
        if item.path.parent.name == ADAPTER_SUITE:
            name = ADAPTER_SUITE
        item.add_marker(pytest.mark.xdist_group(item.nodeid if name in SPLIT_FILES else name))
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(ADAPTER_SUITE if item.path.parent.name == ADAPTER_SUITE
                                         else item.path.name, len(rank)))


UNGROUPED = pytest.StashKey[str]()


@pytest.hookimpl(trylast=True)  # after xdist's hook, which appends "@<group>" to each nodeid
def pytest_collection_finish(session):
    """A worker of ``--dist loadgroup`` must see each test's group in its nodeid: the scheduler
    groups by that suffix alone, and without it hands out single tests, so a file's module
    fixtures (the Paimon vectors' whole run, for one) are set up on every worker. Such a run
    fails every test at its setup, before any fixture runs."""
    if not getattr(session.config.option, "loadgroup", False):
        return
    ungrouped = [item.nodeid for item in session.items if "@" not in item.nodeid]
    if ungrouped:
        session.config.stash[UNGROUPED] = (
            f"--dist loadgroup cannot group tests with this pytest and pytest-xdist ({ungrouped[0]} "
            f"has no '@<group>' suffix): install the versions pyproject.toml pins")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if UNGROUPED in item.config.stash:
        pytest.fail(item.config.stash[UNGROUPED], pytrace=False)
