"""Crash-test helpers: dbt in its own process group, killed with SIGKILL (dbt and its JVM) at a
commit step (`lakerank_fault: kill:<step>`) or at a random moment after a log line; and the
home's leftovers after a rerun (no directory a dead attempt wrote, no commit beyond a
watermark)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import threading
import time
from typing import Iterable

from lakerank_project import ROOT
from python_udfs.jvm import jvm_class

DBT = shutil.which("dbt")


def dbt_subprocess(home, *args: str, vars: dict | None = None, fault=None, kill_after_marker: str | None = None,
                   delay: float = 0.0, project=ROOT, timeout: float = 600):
    """Run `dbt <args>` (default `run` of the pipeline) on `home` in its own process group;
    optionally SIGKILL the group `delay` seconds after a line containing `kill_after_marker`.
    `fault` is the `lakerank_fault` value, passed as LAKERANK_FAULT (a var would make each
    run re-parse the project). Returns (killed, returncode, output): killed is true when the
    group died of SIGKILL, by this helper or by a `kill:<step>` fault."""
    env = {**os.environ, "LAKERANK_HOME": str(home), "LAKERANK_TEST_HOOKS": "1",
           "LAKERANK_FAULT": (fault if isinstance(fault, str) else json.dumps(fault)) if fault else ""}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    env.pop("LAKERANK_JVM_FLAGS", None)  # a scheduled build's JVM, as in production
    # Its own dbt target folder: two dbt processes must not write one manifest / partial-parse file.
    env["DBT_TARGET_PATH"] = os.environ.get("DBT_TARGET_PATH", "target/crash") + "-subprocess"
    cli = [DBT, *(args or ("run",)), "--project-dir", str(project),
           "--profiles-dir", str(ROOT / "profiles")]
    if vars:
        cli += ["--vars", json.dumps(vars)]
    proc = subprocess.Popen(cli, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)
    lines: list[str] = []

    def kill_later():
        time.sleep(delay)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)

    deadline = time.time() + timeout
    for line in proc.stdout:
        lines.append(line)
        if kill_after_marker and kill_after_marker in line:
            threading.Thread(target=kill_later, daemon=True).start()
            kill_after_marker = None
        if time.time() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            raise AssertionError("dbt subprocess timed out:\n" + "".join(lines[-40:]))
    proc.wait()
    if proc.returncode == -signal.SIGKILL:  # the JVM went with it (reaped within moments)
        for _ in range(100):
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            raise AssertionError("a killed dbt's process group (its JVM) is still alive after 5 s")
    return proc.returncode == -signal.SIGKILL, proc.returncode, "".join(lines)


def assert_no_leftovers(spark, schemas: Iterable[str] = ("lakerank", "lakerank_read")) -> None:
    """After a completed build: no staging table; every directory under a table's `_v/` is one the table reads
    (its location, a partition's, or for a merge-on-read base the versions a publication may
    read: `lakerank.previous_base` and at most one older), and no table holds a `_commit_id`
    or `snapshot_id` partition beyond its model's watermark (a pk_table's last recorded
    snapshot)."""
    catalog = spark._jsparkSession.sharedState().externalCatalog()
    hadoop_path = jvm_class(spark, "org.apache.hadoop.fs.Path")
    conf = spark._jsc.hadoopConfiguration()
    for schema in schemas:
        if not catalog.databaseExists(schema):
            continue
        for name in list(_seq(catalog.listTables(schema))):
            assert "__stage" not in name, f"{schema}.{name}: a staging table left behind"
            table = catalog.getTable(schema, name)
            if table.tableType().name() == "VIEW":
                continue
            location = str(hadoop_path(table.location()).toString())
            none = jvm_class(spark, "scala.Option").empty()
            partitioned = table.partitionColumnNames().nonEmpty()
            parts = {f"{k}={p.spec().apply(k)}": str(hadoop_path(p.location()).toString())
                     for p in (_seq(catalog.listPartitions(schema, name, none)) if partitioned else ())
                     for k in _seq(p.spec().keys())}
            used = [location, *parts.values()]
            props = _props(table)
            versions = hadoop_path(location.rstrip("/") + "/_v")
            if name.endswith("__base"):
                versions = hadoop_path(location).getParent()
                used.append(props.get("lakerank.previous_base", ""))
            fs = versions.getFileSystem(conf)
            if fs.exists(versions):
                unused = [str(s.getPath()) for s in fs.listStatus(versions) if s.isDirectory()
                          and not any(_under(u, str(s.getPath())) for u in used if u)]
                allowed = 1 if name.endswith("__base") else 0  # the base before previous_base
                assert len(unused) <= allowed, f"{schema}.{name}: directories no one reads: {unused}"
            unused = _unused_partition_dirs(fs, hadoop_path(location), [u for u in used[1:] if u])
            assert not unused, f"{schema}.{name}: partition directories no one reads: {unused}"
            watermark = _watermark(catalog, schema, name.split("__")[0])  # its model's
            commits = [int(spec.split("=")[1]) for spec in parts if spec.split("=")[0] in ("_commit_id", "snapshot_id")]
            if watermark is not None and commits:
                assert max(commits) <= watermark, f"{schema}.{name}: commit {max(commits)} beyond {watermark}"


def _unused_partition_dirs(fs, root, used) -> list:
    """Hive-style directories (`col=value`) under `root` that no partition location is or lies
    in, and, where the partitions point one level deeper (`_commit_id=N/<attempt>`, the
    ingests' layout before they staged under `_v/`), the attempts beside the one in use."""
    out = []
    if not fs.exists(root):
        return out
    for child in fs.listStatus(root):
        path = str(child.getPath())
        if not child.isDirectory() or "=" not in child.getPath().getName():
            continue
        inside = [u for u in used if _under(u, path)]
        if not inside:
            out.append(path)
            continue
        deeper = [u for u in inside if not _under(path, u)]
        if deeper:
            out += [str(g.getPath()) for g in fs.listStatus(child.getPath()) if g.isDirectory()
                    and not any(_under(u, str(g.getPath())) for u in deeper)]
    return out


def _seq(scala_seq):
    it = scala_seq.iterator()
    while it.hasNext():
        yield it.next()


def _props(table) -> dict:
    props = table.properties()
    return {k: props.get(k).get() for k in _seq(props.keys())}


def _watermark(catalog, schema: str, name: str):
    if not catalog.tableExists(schema, name):
        return None
    props = _props(catalog.getTable(schema, name))
    value = props.get("lakerank.snapshot_id", props.get("lakerank.commit_id"))  # a pk_table's own numbering
    return int(value) if value is not None else None


def _under(location: str, directory: str) -> bool:
    strip = lambda p: p.replace("file://", "file:").rstrip("/")  # noqa: E731
    loc, d = strip(location), strip(directory)
    return loc == d or loc.startswith(d + "/")
