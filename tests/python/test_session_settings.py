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


def _show(lakerank, sql: str):
    res = lakerank.dbt("show", "--inline", sql, "--output", "json")
    return res.result.results[0].agate_table.rows[0]


def test_each_invocation_applies_its_profile_and_overrides(lakerank, monkeypatch):
    """One process serves many dbt invocations on one SparkSession: each applies its own
    profile's runtime settings, then LAKERANK_SPARK_CONF's, and they hold for every
    statement of the invocation (dbt-spark re-applied the profile before each statement,
    which silently undid LAKERANK_SPARK_CONF overrides of profile keys)."""
    monkeypatch.setenv("LAKERANK_TIMEZONE", "America/New_York")
    monkeypatch.setenv("LAKERANK_SPARK_CONF", "spark.sql.shuffle.partitions=3")
    assert tuple(_show(lakerank, "select current_timezone() as tz, '${spark.sql.shuffle.partitions}' as sp")) \
        == ("America/New_York", "3")
    monkeypatch.setenv("LAKERANK_TIMEZONE", "UTC")
    monkeypatch.delenv("LAKERANK_SPARK_CONF")
    monkeypatch.setenv("LAKERANK_SHUFFLE_PARTITIONS", "5")
    assert tuple(_show(lakerank, "select current_timezone() as tz, '${spark.sql.shuffle.partitions}' as sp")) \
        == ("UTC", "5")
