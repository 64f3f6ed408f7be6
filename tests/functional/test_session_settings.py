"""LAKERANK_SPARK_CONF: Spark settings over the profile's for one run (no Spark needed)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from dbt.adapters.lakerank.session import env_spark_conf
from lakerank_project import ROOT


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


def test_compile_and_ls_on_a_new_home_start_no_session(lakerank):
    """Issue G.3: `dbt ls` and `dbt compile` on a home that was never built have nothing to
    introspect, so they run in Python alone: the home's embedded session is never started
    (in a fresh process that is the whole JVM; here, a switch of this process's session to
    the new home would create its Derby metastore), and the compiled SQL is written. The
    lint (scripts/lint.sh, sqlfluff's dbt templater) checks the same on its own empty home."""
    for command in ("ls", "compile"):
        lakerank.dbt(command)
        assert not (lakerank.home / "metastore_db").exists(), f"dbt {command} started the home's session"
    target = ROOT / os.environ["DBT_TARGET_PATH"]
    compiled = target / "compiled" / "lakerank" / "models" / "marts" / "fct_contract_rank.sql"
    assert "select" in compiled.read_text().lower()


def test_metastore_reads_before_any_statement_use_this_homes_session(runner, tmp_path):
    """An adapter call that reads the metastore before the invocation ran any statement
    (here `lakerank_get_property` while compiling, with dbt's relation cache not filled)
    reads this invocation's home, even when the process's session was last on another
    home. It read whatever session the process had (or a bare one with no metastore)."""
    from lakerank_project import Lakerank

    one, other = Lakerank(runner, tmp_path / "one"), Lakerank(runner, tmp_path / "other")
    one.dbt("show", "--inline", "select 1")  # starts `one`'s session
    one.spark().sql("create schema if not exists lakerank")
    one.spark().sql("create table lakerank.marked (a int) using parquet tblproperties ('lakerank.mark' = 'one')")
    other.dbt("show", "--inline", "select 1")  # the process's session is now `other`'s
    probe = ("{{ adapter.lakerank_get_property(api.Relation.create(schema='lakerank', identifier='marked'),"
             " 'lakerank.mark', 'absent') }}")
    res = one.dbt("compile", "--no-populate-cache", "--inline", probe)
    assert res.result.results[0].node.compiled_code.strip() == "one"


def test_a_thread_connecting_mid_invocation_keeps_a_models_settings(lakerank):
    """Every thread of an invocation opens its own connection on the one shared
    session. The profile's settings go on once per invocation: a thread that connects
    while another model runs must not put `partitionOverwriteMode` back to the profile's
    `static` under that model's `DYNAMIC` (its insert_overwrite would replace the whole
    table). The next invocation starts from the profile again."""
    import threading

    from dbt_common.invocation import get_invocation_id, reset_invocation_id

    from dbt.adapters.lakerank.session import use_home

    key = "spark.sql.sources.partitionOverwriteMode"
    _show(lakerank, "select 1 as one")  # the session on this home, the profile applied
    spark = lakerank.spark()
    params = {key: "static", "spark.sql.shuffle.partitions": "4"}
    use_home(str(lakerank.home), params)  # this invocation's first connection
    assert spark.conf.get(key) == "static"
    spark.conf.set(key, "DYNAMIC")  # a running model's `set`
    other = threading.Thread(target=use_home, args=(str(lakerank.home), params))
    other.start()
    other.join()
    assert spark.conf.get(key) == "DYNAMIC"
    before = get_invocation_id()
    reset_invocation_id()  # a new invocation of the same process
    assert get_invocation_id() != before
    use_home(str(lakerank.home), params)
    assert spark.conf.get(key) == "static"


def test_sparks_start_up_lines_go_to_the_homes_log(tmp_path):
    """A fresh process's session start: Spark's and the JVM's own lines (the incubator-module
    warning the JVM prints before log4j is up, log4j's start-up warnings) land in the home's
    logs/spark.log, not on the terminal, which shows dbt's output only."""
    home = tmp_path / "home"
    env = {**{k: v for k, v in os.environ.items() if k != "PYSPARK_SUBMIT_ARGS"},
           "LAKERANK_HOME": str(home), "DBT_PROFILES_DIR": str(ROOT / "profiles")}
    cmd = [sys.executable, "-c", "import sys; from dbt.cli.main import cli; sys.exit(cli())",
           "show", "--project-dir", str(ROOT), "--inline", "select 41 + 1 as answer"]
    proc = subprocess.run(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          stdin=subprocess.DEVNULL, timeout=600)
    assert proc.returncode == 0, proc.stdout
    assert "42" in proc.stdout
    for spark_line in ("WARNING: Using incubator modules", " WARN ", "log4j", "setLogLevel"):
        assert spark_line not in proc.stdout, proc.stdout
    log = (home / "logs" / "spark.log").read_text()
    assert "WARNING: Using incubator modules" in log and " WARN " in log, log
