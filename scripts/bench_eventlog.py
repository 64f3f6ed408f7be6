"""Spark's event log, summarised over a time window: the Spark jobs and SQL executions that
started in it and the bytes its tasks read (scripts/bench.py).

A `dbt` process (or `lakerank serve`) started with
``LAKERANK_SPARK_CONF`` from `conf` writes one folder of uncompressed JSON-lines files per
Spark application into <dir>; a cold `dbt` process is an application of
its own, a warm server one for all its builds, so a build's figures are the events between its
start and its end (Spark flushes the log at every job and SQL execution end)."""

from __future__ import annotations

import json
import pathlib
import re

SQL_START = "org.apache.spark.sql.execution.ui.SparkListenerSQLExecutionStart"
ACCUM = "org.apache.spark.sql.execution.ui.SparkListenerDriverAccumUpdates"
# A file scan's driver-side metric: the bytes of the files it selected (after partition and
# file pruning). Tasks' "Bytes Read" misses most parquet reads (vectored reads off the task's
# thread), so bytes read is this; records read is the tasks'.
FILES_READ = re.compile(r'"name":"size of files read","accumulatorId":(\d+)')


def conf(log_dir: pathlib.Path) -> str:
    """The LAKERANK_SPARK_CONF value that turns the event log on into log_dir."""
    log_dir.mkdir(parents=True, exist_ok=True)
    return (f"spark.eventLog.enabled=true,spark.eventLog.dir=file:{log_dir},"
            "spark.eventLog.compress=false")


def summarise(log_dir: pathlib.Path, start: float, end: float) -> dict:
    """Jobs and SQL executions started in [start, end] (epoch seconds), the bytes of the files
    their scans selected, and the records read by tasks finished in it."""
    lo, hi = int(start * 1000), int(end * 1000)
    jobs = sqls = tasks = 0
    bytes_read = records_read = 0
    job_ms = 0
    open_jobs: dict[int, int] = {}
    executions: set[tuple[pathlib.Path, int]] = set()
    files_read_ids: set[tuple[pathlib.Path, int]] = set()
    updates: dict[tuple[pathlib.Path, int], tuple[int, int]] = {}
    for path in sorted(p for p in log_dir.rglob("events_*") if p.is_file()):
        try:
            if path.stat().st_mtime < start:
                continue
            lines = path.read_text(errors="replace").splitlines()
        except FileNotFoundError:
            continue
        for line in lines:
            kind = line[:100]  # the event name comes first: skip the JSON parse of other events
            if "SQLExecutionStart" in kind or "AdaptiveExecutionUpdate" in kind:
                files_read_ids.update((path, int(i)) for i in FILES_READ.findall(line))
            if not ("JobStart" in kind or "JobEnd" in kind or "TaskEnd" in kind or "SQLExecutionStart" in kind
                    or "DriverAccumUpdates" in kind):
                continue
            try:
                ev = json.loads(line)
            except json.JSONDecodeError:  # a line being written
                continue
            name = ev.get("Event")
            if name == "SparkListenerJobStart":
                t = ev.get("Submission Time", 0)
                if lo <= t <= hi:
                    jobs += 1
                    open_jobs[ev["Job ID"]] = t
            elif name == "SparkListenerJobEnd":
                t0 = open_jobs.pop(ev.get("Job ID"), None)
                if t0 is not None:
                    job_ms += ev.get("Completion Time", t0) - t0
            elif name == "SparkListenerTaskEnd":
                t = ev.get("Task Info", {}).get("Finish Time", 0)
                if lo <= t <= hi:
                    tasks += 1
                    m = (ev.get("Task Metrics") or {}).get("Input Metrics") or {}
                    records_read += m.get("Records Read", 0)
            elif name == SQL_START:
                if lo <= ev.get("time", 0) <= hi:
                    sqls += 1
                    executions.add((path, ev["executionId"]))
            elif name == ACCUM:
                for acc, value in ev.get("accumUpdates", []):
                    key = (path, acc)
                    updates[key] = (ev["executionId"], max(value, updates.get(key, (0, 0))[1]))
    for key, (execution, value) in updates.items():
        if key in files_read_ids and (key[0], execution) in executions:
            bytes_read += value
    return {"spark_jobs": jobs, "sql_executions": sqls, "tasks": tasks, "bytes_read": bytes_read,
            "records_read": records_read, "job_seconds": round(job_ms / 1000, 2)}
