"""The `thrift` target for real (issue E.4 c): the pyspark wheel's own Spark Thrift Server
(HiveThriftServer2) on 127.0.0.1, reached through dbt-spark's thrift method (PyHive). What runs
there: SQL `table` and `view` models and the library's read macros (here a zipper built over
inline change rows, checked row by row). What cannot: Python models (the ingests run in the
driver lakerank controls) and the incremental materializations (they write directories and
re-point partitions through that driver); both stop at once with a message that says so."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time

import pytest

from lakerank_project import ROOT
from pk_project import PkProject

ZIPPER_MODEL = """\
{{ config(materialized='table') }}
with changes as (
    select * from values
        ('+I', 1, timestamp'2024-01-01 00:00:00', 'a', 1),
        ('+U', 1, timestamp'2024-02-01 00:00:00', 'b', 2),
        ('+I', 2, timestamp'2024-01-15 00:00:00', 'x', 3)
        as t(rowkind, k, vt, v, _commit_id)
)
select * from ({{ lakerank_lib.zipper(source='changes', key='k', version_time='vt', columns=['v']) }})
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def thrift_server(tmp_path):
    """The port of a Spark Thrift Server over a fresh warehouse and Derby metastore."""
    import pyspark

    home, port = tmp_path / "server_home", _free_port()
    home.mkdir()
    cmd = [os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-submit"),
           "--class", "org.apache.spark.sql.hive.thriftserver.HiveThriftServer2",
           "--driver-java-options", f"-Dderby.system.home={home}",
           "--conf", f"spark.sql.warehouse.dir={home / 'warehouse'}",
           "--conf", "spark.hadoop.javax.jdo.option.ConnectionURL="
                     f"jdbc:derby:;databaseName={home / 'metastore_db'};create=true",
           "--conf", "spark.sql.timestampType=TIMESTAMP_NTZ", "--conf", "spark.ui.enabled=false",
           "--hiveconf", f"hive.server2.thrift.port={port}", "--hiveconf", "hive.server2.thrift.bind.host=127.0.0.1",
           "spark-internal"]
    with open(tmp_path / "thrift.log", "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=home, start_new_session=True,
                                env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"})
    try:
        deadline = time.time() + 180
        while True:
            assert proc.poll() is None, (tmp_path / "thrift.log").read_text()[-3000:]
            assert time.time() < deadline, "the thrift server did not listen in 180 s"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.5)
        yield port
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)


def test_thrift_target_runs_sql_models_and_refuses_the_rest_clearly(runner, tmp_path, thrift_server, monkeypatch):
    monkeypatch.setenv("LAKERANK_TARGET", "thrift")
    monkeypatch.setenv("LAKERANK_THRIFT_PORT", str(thrift_server))
    pk = PkProject(runner, tmp_path, {"dim_zipped": ZIPPER_MODEL})
    pk.invoke("run", "--select", "dim_zipped")
    res = pk.invoke("show", "--inline", "select k, cast(ver_start as string) as s, cast(ver_end as string) as e, v "
                    "from {{ ref('dim_zipped') }} order by k, s", "--output", "json", "--limit", "10")
    rows = [tuple(r) for r in res.result.results[0].agate_table.rows]
    assert rows == [(1, "2024-01-01 00:00:00", "2024-02-01 00:00:00", "a"),
                    (1, "2024-02-01 00:00:00", "9999-12-31 23:59:59", "b"),
                    (2, "2024-01-15 00:00:00", "9999-12-31 23:59:59", "x")]

    # The pipeline's Python ingest and its incremental models stop with the reason, not a trace.
    os.environ["LAKERANK_HOME"] = str(tmp_path / "unused_home")
    expected = {"stg_contract_changelog": "cannot run on a target with method 'thrift'",
                "int_project_rank_accumulation": "merge_on_read needs a Spark driver lakerank controls",
                "dim_project": "pk_table needs a Spark driver lakerank controls"}  # an example pk_table
    for model, message in expected.items():
        res = runner.invoke(["run", "--project-dir", str(ROOT), "--profiles-dir", str(ROOT / "profiles"),
                             "--select", model, "--vars", "{lakerank_examples: true}"])
        [result] = [r for r in res.result.results if r.node.resource_type == "model"]  # not the on-run-end hook
        assert str(result.status) == "error" and message in str(result.message), (model, result.message)
    assert not (tmp_path / "unused_home" / "metastore_db").exists(), "a thrift run started an embedded session"
