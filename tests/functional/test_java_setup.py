"""Issue G.5: without a usable Java (none at all, or one older than Spark 4 accepts) the
README's commands stop at once with one message that says what was found and what to install,
never PySpark's dead-gateway error or a JVM's stack trace. The machine's Java is left alone:
its absence is simulated in subprocesses, by a PATH whose folders holding `java` are replaced
by copies without it, and an old one by JAVA_HOME pointing at a fake `java` that prints 11."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from dbt.adapters.lakerank.java_check import parse_version
from lakerank_project import ROOT
from no_java import env_without_java

DBT = [sys.executable, "-c", "import sys; from dbt.cli.main import cli; sys.exit(cli())"]
# What a JVM's or PySpark's failure prints; none of it may reach the user.
TRACES = ("Traceback", "JAVA_GATEWAY_EXITED", "Exception in thread", "\tat ", "java.lang.")
FAKE_JAVA_11 = """#!/bin/sh
echo 'openjdk version "11.0.22" 2024-01-16' >&2
echo 'OpenJDK Runtime Environment (build 11.0.22+7-post-Debian-1deb11u1)' >&2
"""


@pytest.fixture(scope="module")
def env_of(tmp_path_factory, runner):
    """The environment of a subprocess without Java (``no_java``) or with JAVA_HOME on a fake
    Java 11 (``java_11``), its home in a temporary folder; its dbt target and logs are the
    worker's (``runner``), whose saved parse it reuses."""
    base = tmp_path_factory.mktemp("java")
    no_java_path = env_without_java(base / "path")["PATH"]
    fake = base / "jdk11"
    (fake / "bin").mkdir(parents=True)
    (fake / "bin" / "java").write_text(FAKE_JAVA_11)
    (fake / "bin" / "java").chmod(0o755)

    def make(kind: str) -> dict:
        env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "PYSPARK_SUBMIT_ARGS")}
        if kind == "no_java":
            env["PATH"] = no_java_path
        else:
            env["JAVA_HOME"] = str(fake)
        env.update(LAKERANK_HOME=str(base / f"home_{kind}"), DBT_PROFILES_DIR=str(ROOT / "profiles"))
        return env

    return make


def run(cmd, env) -> tuple[int, str, float]:
    started = time.time()
    proc = subprocess.run(cmd, env=env, cwd=ROOT, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    return proc.returncode, proc.stdout + proc.stderr, time.time() - started


def assert_clear_refusal(rc: int, out: str, seconds: float, found: str) -> None:
    assert rc != 0, out
    assert "needs Java 17 or newer" in out and found in out, out
    assert "apt-get install openjdk-17-jre-headless" in out and "JAVA_HOME" in out, out
    assert not [t for t in TRACES if t in out], out
    assert seconds < 30, seconds  # at once: no JVM was started and waited for


def test_demo_and_test_setup_stop_at_once_without_java(env_of):
    """The README's demo, and scripts/test.sh's first JVM step (the class-data archive), on a
    machine with no Java: the message, nothing landed, no home made."""
    env = env_of("no_java")
    rc, out, seconds = run([sys.executable, str(ROOT / "scripts" / "demo.py")], env)
    assert_clear_refusal(rc, out, seconds, "there is no `java` on PATH and JAVA_HOME is not set")
    assert not os.path.exists(env["LAKERANK_HOME"])
    rc, out, seconds = run([sys.executable, "-m", "dbt.adapters.lakerank.jvm_archive"], env)
    assert_clear_refusal(rc, out, seconds, "there is no `java` on PATH")


def test_dbt_refuses_without_java_and_with_java_11(env_of):
    """`dbt run` on the embedded target: a dbt error naming what was found, before the home's
    lock or metastore is made; `lakerank serve` says the same before it starts a server."""
    env = env_of("no_java")
    rc, out, seconds = run([*DBT, "run", "--project-dir", str(ROOT)], env)
    assert_clear_refusal(rc, out, seconds, "there is no `java` on PATH and JAVA_HOME is not set")
    assert "Runtime Error" in out and not os.path.exists(env["LAKERANK_HOME"])

    env = env_of("java_11")
    rc, out, seconds = run([*DBT, "run", "--project-dir", str(ROOT)], env)
    found = f"found Java 11.0.22 at {env['JAVA_HOME']}/bin/java (from JAVA_HOME={env['JAVA_HOME']})"
    assert_clear_refusal(rc, out, seconds, found)
    assert "or unset JAVA_HOME to use the `java` on PATH" in out
    assert not os.path.exists(env["LAKERANK_HOME"])
    rc, out, seconds = run([sys.executable, "-m", "dbt.adapters.lakerank.serve", "serve", "--background",
                            "--project-dir", str(ROOT)], env)
    assert_clear_refusal(rc, out, seconds, "found Java 11.0.22")


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
