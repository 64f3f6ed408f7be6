"""dbt's own adapter conformance suite (``dbt-tests-adapter``, pinned in pyproject.toml) on
the lakerank adapter: its fixtures (``project``, ``adapter``, ``run_dbt`` ...) and the one
target every class runs against, the embedded SparkSession over a LAKERANK_HOME this pytest
process keeps for the whole run (a new home per class would restart the session).

The classes run with only the fixture overrides dbt-spark's own suite applies for Spark SQL
(its ``tests/functional/adapter``), never its ``file_format: delta`` ones: lakerank's store
is parquet (docs/decisions/0001-table-format.md), so dbt's strategies and snapshots must
work on it. What is left out, and why, is in docs/dbt_on_lakerank.md."""

from __future__ import annotations

import os

import pytest
from dbt.tests.fixtures.project import *  # noqa: F401,F403  (the suite's fixtures)

# Set by the pipeline tests' dbt runner (tests/conftest.py) for the worker's other files: the
# suite's projects keep dbt's defaults (target/ and logs/ in the project, artifacts written).
_RUNNER_ENV = ("DBT_TARGET_PATH", "DBT_LOG_PATH", "DBT_WRITE_JSON", "LAKERANK_HOME")


@pytest.fixture(scope="class", autouse=True)
def dbt_defaults():
    saved = {name: os.environ.pop(name) for name in _RUNNER_ENV if name in os.environ}
    yield
    os.environ.update(saved)


@pytest.fixture(scope="session")
def lakerank_suite_home(tmp_path_factory):
    return tmp_path_factory.mktemp("adapter-suite-home")


@pytest.fixture(scope="class")
def dbt_profile_target(lakerank_suite_home):
    return {
        "type": "lakerank",
        "method": "session",
        "host": "embedded",
        "lakerank_home": str(lakerank_suite_home),
        "threads": 2,
        "server_side_parameters": {
            "spark.master": "local[2]",
            "spark.ui.enabled": "false",
            "spark.ui.showConsoleProgress": "false",
            "spark.sql.shuffle.partitions": "2",
        },
    }
