"""Issue G.5: without a usable Java (none at all, or one older than Spark 4 accepts) the
README's commands stop at once with one message that says what was found and what to install,
never PySpark's dead-gateway error or a JVM's stack trace. The machine's Java is left alone:
its absence is simulated in subprocesses, by a PATH whose folders holding `java` are replaced
by copies without it, and an old one by JAVA_HOME pointing at a fake `java` that prints 11."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import pytest

from dbt.adapters.lakerank.java_check import LakerankJavaError, check_java, parse_version
from lakerank_project import ROOT
from no_java import env_without_java

DBT = [sys.executable, "-c", "import sys; from dbt.cli.main import cli; sys.exit(cli())"]
# What a JVM's or PySpark's failure prints; none of it may reach the user.
TRACES = ("Traceback", "JAVA_GATEWAY_EXITED", "Exception in thread", "\tat ", "java.lang.")
FAKE_JAVA_11 = """#!/bin/sh
echo 'openjdk version "11.0.22" 2024-01-16' >&2
echo 'OpenJDK Runtime Environment (build 11.0.22+7-post-Debian-1deb11u1)' >&2
"""
# A Java 17 that passes the check and dies as a JVM does at boot (e.g. no memory for its heap).
FAKE_JAVA_17_DIES = """#!/bin/sh
for a in "$@"; do [ "$a" = "-version" ] && { echo 'openjdk version "17.0.15" 2025-04-15' >&2; exit 0; }; done
echo 'Error occurred during initialization of VM' >&2
echo 'Could not reserve enough space for object heap' >&2
exit 1
"""


@pytest.fixture(scope="module")
def refusals(tmp_path_factory, runner) -> dict:
    """Each command below run once, all at the same time (each is a Python process's start and
    a refusal): name -> (exit code, stdout + stderr, seconds, environment). ``no_java``: no
    JAVA_HOME and a PATH without `java`; ``java_11``: JAVA_HOME on a fake Java 11. Each has its
    own home; the dbt target and logs are the worker's (``runner``), whose saved parse dbt reuses."""
    base = tmp_path_factory.mktemp("java")
    fake = base / "jdk11"
    (fake / "bin").mkdir(parents=True)
    (fake / "bin" / "java").write_text(FAKE_JAVA_11)
    (fake / "bin" / "java").chmod(0o755)
    dies = base / "jdk17_dies"
    (dies / "bin").mkdir(parents=True)
    (dies / "bin" / "java").write_text(FAKE_JAVA_17_DIES)
    (dies / "bin" / "java").chmod(0o755)
    plain = {k: v for k, v in os.environ.items() if k != "PYSPARK_SUBMIT_ARGS"}
    envs = {"no_java": env_without_java(base / "path"), "java_11": {**plain, "JAVA_HOME": str(fake)},
            "java_17_dies": {**plain, "JAVA_HOME": str(dies)}}
    commands = {
        "demo": ("no_java", [sys.executable, str(ROOT / "scripts" / "demo.py")]),
        "jvm_archive": ("no_java", [sys.executable, "-m", "dbt.adapters.lakerank.jvm_archive"]),
        "dbt_run": ("java_11", [*DBT, "run", "--project-dir", str(ROOT)]),
        "dbt_run_jvm_dies": ("java_17_dies", [*DBT, "run", "--project-dir", str(ROOT)]),
        "serve": ("java_11", [sys.executable, "-m", "dbt.adapters.lakerank.serve", "serve", "--background",
                              "--project-dir", str(ROOT)]),
    }
    started, procs = time.time(), {}
    for name, (kind, cmd) in commands.items():
        env = {**envs[kind], "LAKERANK_HOME": str(base / f"home_{name}"), "DBT_PROFILES_DIR": str(ROOT / "profiles")}
        procs[name] = (subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, text=True), env)
    out = {}
    for name, (proc, env) in procs.items():
        text, _ = proc.communicate(timeout=120)
        out[name] = (proc.returncode, text, time.time() - started, env)
    return out


def assert_clear_refusal(result, found: str) -> None:
    rc, out, seconds, _env = result
    assert rc != 0, out
    assert "needs Java 17 or newer" in out and found in out, out
    assert "apt-get install openjdk-17-jre-headless" in out and "JAVA_HOME" in out, out
    assert not [t for t in TRACES if t in out], out
    assert seconds < 60, seconds  # at once: no JVM was started and waited for


def test_demo_stops_at_once_without_java(refusals):
    """The README's demo on a machine with no Java: the message, nothing landed, no home made."""
    assert_clear_refusal(refusals["demo"], "there is no `java` on PATH and JAVA_HOME is not set")
    assert not os.path.exists(refusals["demo"][3]["LAKERANK_HOME"])


def test_test_setup_stops_at_once_without_java(refusals):
    """scripts/test.sh's first JVM step (the class-data archive) on a machine with no Java."""
    assert_clear_refusal(refusals["jvm_archive"], "there is no `java` on PATH and JAVA_HOME is not set")


def test_dbt_run_refuses_java_11(refusals):
    """`dbt run` on the embedded target with JAVA_HOME on a Java 11: a dbt error naming what was
    found, before the home's lock or metastore is made."""
    home = refusals["dbt_run"][3]["JAVA_HOME"]
    assert_clear_refusal(refusals["dbt_run"], f"found Java 11.0.22 at {home}/bin/java (from JAVA_HOME={home})")
    assert "Runtime Error" in refusals["dbt_run"][1]
    assert "or unset JAVA_HOME to use the `java` on PATH" in refusals["dbt_run"][1]
    assert not os.path.exists(refusals["dbt_run"][3]["LAKERANK_HOME"])


def test_dbt_run_shows_a_jvm_that_dies_at_start(refusals):
    """The JVM's own output goes to the home's logs/spark.log (the terminal shows lakerank's
    lines, not Spark's start-up warnings); a JVM that exits while starting is a real error:
    its last lines are shown, with where the rest is, not PySpark's dead-gateway error."""
    rc, out, _seconds, env = refusals["dbt_run_jvm_dies"]
    log = os.path.join(env["LAKERANK_HOME"], "logs", "spark.log")
    assert rc != 0, out
    assert "JVM exited while starting" in out and f"(from {log})" in out, out
    assert "Could not reserve enough space for object heap" in out, out
    assert "JAVA_GATEWAY_EXITED" not in out and "Traceback" not in out, out
    assert "Could not reserve enough space for object heap" in open(log).read()


def test_serve_refuses_java_11(refusals):
    """`lakerank serve` says the same before it starts a server process."""
    assert_clear_refusal(refusals["serve"], "found Java 11.0.22")
    assert not os.path.exists(refusals["serve"][3]["LAKERANK_HOME"])


def test_check_java_in_process(monkeypatch, tmp_path):
    """What the adapter calls before it starts a session: the machine's Java passes; no Java on
    PATH, or a JAVA_HOME without bin/java, is the dbt error (DbtRuntimeError)."""
    from dbt_common.exceptions import DbtRuntimeError

    assert os.path.basename(check_java()) == "java"  # this machine's (CI installs 17)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", env_without_java(tmp_path / "path")["PATH"])
    with pytest.raises(DbtRuntimeError, match="there is no `java` on PATH and JAVA_HOME is not set"):
        check_java()
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "empty"))
    with pytest.raises(LakerankJavaError, match=re.escape(f"JAVA_HOME={tmp_path / 'empty'} has no bin/java")):
        check_java()


@pytest.mark.parametrize("text, want", [
    ('JAVA_VERSION="17.0.15"\nIMPLEMENTOR="Debian"', (17, "17.0.15")),
    ('openjdk version "21.0.8" 2025-07-15 LTS', (21, "21.0.8")),
    ('openjdk version "11.0.22" 2024-01-16', (11, "11.0.22")),
    ('java version "1.8.0_392"', (8, "1.8.0_392")),
    ('openjdk version "25-ea" 2025-09-16', (25, "25-ea")),
    ("no version here", None),
])
def test_parse_version(text, want):
    assert parse_version(text) == want
