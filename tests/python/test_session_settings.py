"""LAKERANK_SPARK_CONF: Spark settings over the profile's for one run (no Spark needed)."""

from __future__ import annotations

import pytest

from dbt.adapters.lakerank.connections import env_spark_conf


def test_env_spark_conf_parses_pairs(monkeypatch):
    monkeypatch.setenv("LAKERANK_SPARK_CONF",
                       " spark.sql.codegen.cache.maxEntries=100 ,,spark.sql.ui.explainMode=simple")
    assert env_spark_conf() == {"spark.sql.codegen.cache.maxEntries": "100",
                                "spark.sql.ui.explainMode": "simple"}
    monkeypatch.setenv("LAKERANK_SPARK_CONF", "a.b=x=y")  # only the first '=' splits
    assert env_spark_conf() == {"a.b": "x=y"}


def test_env_spark_conf_unset_is_empty(monkeypatch):
    monkeypatch.delenv("LAKERANK_SPARK_CONF", raising=False)
    assert env_spark_conf() == {}


def test_env_spark_conf_refuses_a_bare_key(monkeypatch):
    monkeypatch.setenv("LAKERANK_SPARK_CONF", "spark.ui.enabled")
    with pytest.raises(ValueError, match="expected key=value, got 'spark.ui.enabled'"):
        env_spark_conf()
