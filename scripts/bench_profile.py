"""Where one build's seconds go: its dbt nodes (dbt's log) and the Spark SQL executions and
jobs each ran (Spark's event log), as markdown.

    python3 scripts/bench_profile.py <home>/logs/<time>-build <event log dir> [--top 25]

The build's `dbt.log` gives each node's start and end (and the end of the on-run-end hook);
the event log (`LAKERANK_SPARK_CONF` from `scripts/bench_eventlog.py`'s `conf`, which
`scripts/bench.py` sets: `<work>/eventlog_<home>`) gives every SQL execution's start, end and
text and the jobs each ran. A node's "in SQL" seconds are the union of the executions that
ran inside its window (nodes that run side by side share theirs); "outside SQL" is the rest:
dbt, Jinja, the adapter's metastore and file calls, Python. The second table lists the
longest executions with the nodes running at the time.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import pathlib
import re
from typing import Dict, List, Tuple

NODE = re.compile(r"^(\d\d:\d\d:\d\d\.\d+) \[info \] \[[^]]*\]: \d+ of \d+ (START|OK|ERROR)\S* .*?"
                  r"(?:model|hook|test|seed|snapshot) ([\w.]+)")
# dbt logs a hook's START and OK once it has run: its start is its end less its "OK in" seconds.
HOOK = re.compile(r"^(\d\d:\d\d:\d\d\.\d+) \[info \] \[MainThread\]: \d+ of \d+ OK hook: ([\w.\-]+)"
                  r".*\[OK in ([\d.]+)s\]")
ANSI = re.compile(r"\x1b\[[0-9;]*m")
Window = Tuple[float, float]


def _epoch(day: dt.date, clock: str) -> float:
    t = dt.datetime.strptime(clock, "%H:%M:%S.%f").time()
    return dt.datetime.combine(day, t, tzinfo=dt.timezone.utc).timestamp()


def nodes(log: pathlib.Path) -> Dict[str, Window]:
    """Each node's (start, end) in epoch seconds, from a build's dbt.log (UTC clock)."""
    day = dt.datetime.fromtimestamp(log.stat().st_mtime, dt.timezone.utc).date()
    out: Dict[str, List[float]] = {}
    for raw in log.read_text(errors="replace").splitlines():
        line = ANSI.sub("", raw)
        m = NODE.match(line)
        if m:
            clock, what, name = m.groups()
            out.setdefault(name, [0.0, 0.0])[0 if what == "START" else 1] = _epoch(day, clock)
        m = HOOK.match(line)
        if m:
            clock, name, seconds = m.groups()
            out[f"hook {name.split('.', 1)[-1]}"] = [_epoch(day, clock) - float(seconds), _epoch(day, clock)]
    return {k: (v[0], v[1]) for k, v in out.items() if v[0] and v[1]}


def invoked(log: pathlib.Path) -> float:
    """When the build's dbt process logged its first line (epoch seconds)."""
    day = dt.datetime.fromtimestamp(log.stat().st_mtime, dt.timezone.utc).date()
    with log.open(errors="replace") as fh:
        return _epoch(day, ANSI.sub("", fh.readline()).split(" ", 1)[0])


def executions(event_dir: pathlib.Path, lo: float, hi: float) -> List[dict]:
    """The SQL executions that started in [lo, hi]: start, end, text, jobs."""
    found: Dict[Tuple[str, int], dict] = {}
    jobs: Dict[Tuple[str, int], int] = {}
    for path in sorted(p for p in event_dir.rglob("events_*") if p.is_file()):
        if path.stat().st_mtime < lo:
            continue
        for line in path.read_text(errors="replace").splitlines():
            kind = line[:100]
            if not ("SQLExecutionStart" in kind or "SQLExecutionEnd" in kind or "JobStart" in kind):
                continue
            try:
                ev = json.loads(line)
            except json.JSONDecodeError:
                continue
            name = ev["Event"]
            if name.endswith("SQLExecutionStart"):
                t = ev["time"] / 1000
                if lo <= t <= hi:
                    found[(str(path), ev["executionId"])] = {
                        "start": t, "end": t, "text": _text(ev),
                        "root": (str(path), ev.get("rootExecutionId", ev["executionId"]))}
            elif name.endswith("SQLExecutionEnd"):
                e = found.get((str(path), ev["executionId"]))
                if e is not None:
                    e["end"] = ev["time"] / 1000
            elif name == "SparkListenerJobStart":
                exec_id = (ev.get("Properties") or {}).get("spark.sql.execution.id")
                if exec_id is not None:
                    key = (str(path), int(exec_id))
                    jobs[key] = jobs.get(key, 0) + 1
    roots = {}
    for key, e in found.items():  # a nested execution's jobs count for its root
        root = found.get(e["root"], e)
        roots.setdefault(id(root), root)["jobs"] = root.get("jobs", 0) + jobs.get(key, 0)
    return sorted(roots.values(), key=lambda e: e["start"])


def _text(ev: dict) -> str:
    """An execution's statement: its SQL text (a Connect plan's `query:`), else its description."""
    text = ev.get("description") or ""
    if text.startswith("Spark Connect"):
        m = re.search(r'query: "((?:[^"\\]|\\.)*)"', ev.get("details") or "")
        text = m.group(1).encode().decode("unicode_escape") if m else "(a Connect plan)"
    return " ".join(re.sub(r"^\s*/\*.*?\*/", "", text, flags=re.S).split())  # without dbt's comment


def _short(name: str) -> str:
    return name if name.startswith("hook ") else name.split(".")[-1]


def _union(windows: List[Window]) -> float:
    total, end = 0.0, float("-inf")
    for a, b in sorted(windows):
        if b > end:
            total += b - max(a, end)
            end = b
    return total


def profile(log_dir: pathlib.Path, event_dir: pathlib.Path, top: int) -> str:
    spans = nodes(log_dir / "dbt.log")
    if not spans:
        raise SystemExit(f"no node in {log_dir / 'dbt.log'}")
    lo = invoked(log_dir / "dbt.log")
    hi = max(b for _, b in spans.values())
    execs = executions(event_dir, lo, hi)
    origin = min(a for a, _ in spans.values())
    rows = ["| node | starts at s | seconds | SQL executions | Spark jobs | in SQL s | outside SQL s |",
            "|---|---|---|---|---|---|---|"]
    for name, (a, b) in sorted(spans.items(), key=lambda kv: kv[1][0]):
        inside = [e for e in execs if a <= e["start"] <= b]
        in_sql = _union([(e["start"], min(e["end"], b)) for e in inside])
        rows.append(f"| {_short(name)} | {a - origin:.2f} | {b - a:.2f} | {len(inside)} | "
                    f"{sum(e['jobs'] for e in inside)} | {in_sql:.2f} | {b - a - in_sql:.2f} |")
    before = [e for e in execs if e["start"] < origin]
    rows += ["", f"Before the first node ({origin - lo:.2f} s after dbt's first log line): "
             f"{len(before)} SQL executions, {_union([(e['start'], e['end']) for e in before]):.2f} s in SQL.", "",
             "| starts at s | seconds | jobs | nodes running | statement |", "|---|---|---|---|---|"]
    for e in sorted(execs, key=lambda e: e["end"] - e["start"], reverse=True)[:top]:
        running = [_short(n) for n, (a, b) in spans.items() if a <= e["start"] <= b]
        rows.append(f"| {e['start'] - origin:.2f} | {e['end'] - e['start']:.2f} | {e['jobs']} | "
                    f"{', '.join(running) or '-'} | {e['text'][:110].replace('|', '/')} |")
    return "\n".join(rows)


def print_batch(log_dir: pathlib.Path, event_dir: pathlib.Path, top: int = 8) -> None:
    """:func:`profile` of a batch's build, printed (scripts/bench.py); one that cannot be read
    is noted and the run goes on: a profile is a reading aid."""
    try:
        print(profile(log_dir, event_dir, top), flush=True)
    except (OSError, ValueError, SystemExit) as e:
        print(f"   (no profile: {e})", flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("build_log_dir", type=pathlib.Path, help="<home>/logs/<time>-build")
    p.add_argument("event_dir", type=pathlib.Path, help="Spark's event log folder of the run")
    p.add_argument("--top", type=int, default=25, help="longest SQL executions to list")
    a = p.parse_args()
    print(profile(a.build_log_dir, a.event_dir, a.top))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
