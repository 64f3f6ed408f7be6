"""The settings a new embedded session starts with (session.session_spark_conf): the embedded
default exactly as before (the home's catalog applied last), and the shared deployment's
(the profile's metastore and warehouse; the home keeps its own files only)."""

from __future__ import annotations

import os

import pytest
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.lakerank.session import HOME_CATALOG_KEYS, S3A_JARS, home_spark_conf, session_spark_conf

SHARED = {
    "spark.hadoop.hive.metastore.uris": "thrift://127.0.0.1:9083",
    "spark.sql.warehouse.dir": "s3a://bucket/warehouse",
    "spark.lakerank.landing": "s3a://bucket/landing",
}


def test_embedded_default_applies_the_home_last(monkeypatch, tmp_path):
    monkeypatch.delenv("LAKERANK_SPARK_CONF", raising=False)
    params = {"spark.master": "local[2]", "spark.sql.warehouse.dir": "/elsewhere"}
    conf = session_spark_conf(str(tmp_path), params)
    assert conf == {**params, **home_spark_conf(str(tmp_path))}
    assert conf["spark.sql.warehouse.dir"] == os.path.join(str(tmp_path), "warehouse")


def test_shared_takes_the_profiles_catalog(monkeypatch, tmp_path):
    monkeypatch.delenv("LAKERANK_SPARK_CONF", raising=False)
    jars = tmp_path / "jars"
    jars.mkdir()
    for name in S3A_JARS:
        (jars / name).write_bytes(b"")
    monkeypatch.setenv("LAKERANK_JARS", str(jars))
    home = str(tmp_path / "home")
    conf = session_spark_conf(home, {**SHARED, "spark.lakerank.home": "/not/this"})
    assert {k: conf[k] for k in SHARED} == SHARED
    assert "spark.hadoop.javax.jdo.option.ConnectionURL" not in conf  # no Derby
    assert not any(k in conf for k in HOME_CATALOG_KEYS if k not in SHARED)
    assert conf["spark.lakerank.home"] == home and conf["spark.local.dir"] == os.path.join(home, "tmp")
    # Hive's per-process resources folder too (its default: a new /tmp/<session id>_resources each run)
    assert conf["spark.hadoop.hive.downloaded.resources.dir"].startswith(os.path.join(home, "tmp"))
    for key in ("spark.driver.extraClassPath", "spark.executor.extraClassPath"):
        assert conf[key].split(os.pathsep) == [str(jars / j) for j in S3A_JARS]


def test_shared_without_jars_or_warehouse_says_what_to_do(monkeypatch, tmp_path):
    monkeypatch.delenv("LAKERANK_SPARK_CONF", raising=False)
    monkeypatch.setenv("LAKERANK_JARS", str(tmp_path / "none"))
    with pytest.raises(DbtRuntimeError, match="scripts/services/jars.sh"):
        session_spark_conf(str(tmp_path), SHARED)
    with pytest.raises(DbtRuntimeError, match="LAKERANK_WAREHOUSE"):
        session_spark_conf(str(tmp_path), {"spark.hadoop.hive.metastore.uris": "thrift://127.0.0.1:9083"})


def test_the_shared_target_without_a_metastore_says_what_to_set(monkeypatch, tmp_path):
    """The shared target renders with its variables unset (other targets' runs read the whole
    profile), and a build on it stops and names the variable, never falls back to the home."""
    monkeypatch.delenv("LAKERANK_SPARK_CONF", raising=False)
    shared_unset = {"spark.lakerank.deployment": "shared", "spark.hadoop.hive.metastore.uris": "",
                    "spark.sql.warehouse.dir": ""}
    with pytest.raises(DbtRuntimeError, match="LAKERANK_METASTORE_URI"):
        session_spark_conf(str(tmp_path), shared_unset)
