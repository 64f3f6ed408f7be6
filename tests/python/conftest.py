"""Shared fixtures: real dbt invocations (dbtRunner, in-process) on a real embedded
SparkSession, one LAKERANK_HOME per test under pytest's tmp_path. One JVM serves the
whole session; switching homes restarts the SparkSession on the new home's metastore."""

from __future__ import annotations

import os
import pathlib
import sys

import pandas as pd
import pytest

# The test JVMs keep the adapter's C1-only JIT (no LAKERANK_JVM_FLAGS override). C2 looked
# faster alone on the box (vectors probe 374 -> 334 s), but its compiler threads took a third
# of the JVM's CPU (61 of 193 CPU-s on the 11-plan probe), which the CI's two workers do not
# have to spare: two workers on a mixed subset, C1-only 404 s against C2 457 s
# (docs/benchmarks.md, eleventh session).
# One shuffle partition per core for the tests' tiny data (the profile's default is 4):
# Paimon vectors subset 172 -> 158 s side by side.
os.environ.setdefault("LAKERANK_SHUFFLE_PARTITIONS", "2")
# The library's fault injection (var lakerank_fault, lakerank_lib/macros/testing/faults.sql)
# is refused outside tests.
os.environ["LAKERANK_TEST_HOOKS"] = "1"

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
for p in (str(HERE), str(ROOT)):
    if p not in sys.path:
        sys.path.insert(0, p)

import cdc  # noqa: E402

SCHEMA = "lakerank"
# `dbt build/run/test` of the pipeline tests leave out the library examples (tag `example`).
PIPELINE_COMMANDS = ("build", "run", "test")
PIPELINE_ONLY = ["--exclude", "tag:example"]


class Lakerank:
    """A lakerank project run against one LAKERANK_HOME."""

    def __init__(self, runner, home: pathlib.Path):
        self.runner = runner
        self.home = home
        self.landed = 0

    @property
    def landing(self) -> pathlib.Path:
        return self.home / "landing" / "contracts"

    def land(self, lines, stream: str = "contracts") -> str:
        path = cdc.write_batch(self.home / "landing" / stream, self.landed, lines)
        self.landed += 1
        return path

    def dbt(self, *args, vars: dict | None = None, expect_success: bool = True):
        os.environ["LAKERANK_HOME"] = str(self.home)
        cli = [*args, "--project-dir", str(ROOT), "--profiles-dir", str(ROOT / "profiles")]
        if args and args[0] in PIPELINE_COMMANDS and not {"--select", "-s"} & set(args):
            cli += PIPELINE_ONLY  # the examples have their own test (test_examples.py)
        if vars:
            import json

            cli += ["--vars", json.dumps(vars)]
        result = self.runner.invoke(cli)
        if expect_success and not result.success:
            failed = [
                f"{r.node.name}: {r.message}" for r in (result.result or []) if r.status in ("error", "fail")
            ]
            raise AssertionError(f"dbt {' '.join(args)} failed: {failed or result.exception}")
        return result

    def spark(self):
        from dbt.adapters.lakerank.connections import current_thread_session

        return current_thread_session()

    def table(self, name: str, where: str = "") -> pd.DataFrame:
        """A table as pandas, timestamps rendered as business-time strings."""
        spark = self.spark()
        df = spark.table(f"{SCHEMA}.{name}")
        cols = []
        for field in df.schema.fields:
            if field.dataType.typeName() == "timestamp_ntz":  # zone-free (date_format is not)
                cols.append(f"cast({field.name} as string) as {field.name}")
            elif field.dataType.typeName() == "timestamp":
                cols.append(f"date_format({field.name}, 'yyyy-MM-dd HH:mm:ss') as {field.name}")
            elif field.dataType.typeName() == "decimal":
                cols.append(f"cast({field.name} as string) as {field.name}")
            else:
                cols.append(field.name)
        q = f"select {', '.join(cols)} from {SCHEMA}.{name} {('where ' + where) if where else ''}"
        return spark.sql(q).toPandas()


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


# scripts/test.sh runs pytest on two xdist workers with `--dist loadgroup`. A file's tests
# share module fixtures and homes, so each file is one group (one worker), except the files
# below, whose tests are independent and long: each test is its own group, so the two
# workers share them. Groups are handed out longest first (measured CI durations), so no
# worker is left with a long file at the end.
SPLIT_FILES = {"test_pipeline_exact.py"}
LONGEST_FIRST = ["test_paimon_vectors.py", "test_reliability.py", "test_pipeline_exact.py",
                 "test_temporal_macros.py", "test_contract_ingest_unit.py", "test_pk_table_crash.py",
                 "test_examples.py", "test_pk_table_properties.py", "test_rank_regressions.py"]


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which turns the marks into groups
def pytest_collection_modifyitems(config, items):
    for item in items:
        name = item.path.name
        item.add_marker(pytest.mark.xdist_group(item.nodeid if name in SPLIT_FILES else name))
    rank = {name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
