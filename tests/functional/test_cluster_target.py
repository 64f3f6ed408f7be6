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
import sys

import pytest
from test_rank_regressions import scenario_batch

import cdc
from checks import assert_all_exact
from dbt.adapters.lakerank.session import stop_embedded_session
from standalone import standalone_cluster as cluster


@pytest.fixture
def standalone_cluster(tmp_path):
    """``spark://127.0.0.1:<port>`` of a master with one 2-core worker (tests/support/standalone.py)."""
    with cluster(tmp_path) as url:
        yield url


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
