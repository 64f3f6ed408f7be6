#!/usr/bin/env python3
"""lakerank benchmark: incremental `dbt build` per micro-batch against a columnar re-rank.

For each history size it makes a fresh LAKERANK_HOME, lands a history of contracts
(50,000 projects, a fifth of the contracts in 100 large projects, sign times over three
years), loads it with one `dbt build` (wall time, peak RSS of dbt + its JVM), then lands
micro-batches (2 % late by up to 30 days, 1 % updates incl. moves to another project,
0.5 % deletes, 1 % duplicates, the rest new contracts) and times, per batch and side by
side in the same home:

- `dbt build` of the pipeline,
- the yardstick (benchmarks/naive/, what a user without lakerank writes): an incremental model
  appending each run's newly landed files to a parquet table, and a table re-ranking every
  contract from it — the **columnar re-rank**, THE ratio's denominator;
- the same plus the changelog the re-rank implies (a diff against the previous run's ranks);
- the JSON re-parse (labelled): every landed line parsed and ranked on every run;
- the start-up floor: `dbt show --inline "select 1"`, for lakerank's JVM and for the
  yardstick's (`--yardstick-jvm-flags`: by default the JVM's own defaults, what a user's
  PySpark starts; lakerank's processes run with the adapter's LAKERANK_JVM_FLAGS).

For each: wall time, dbt nodes run (and of them those that ran a statement), Spark
statements (dbt's log), Spark jobs and bytes read (Spark's event log over the run's time
window, scripts/bench_eventlog.py). Every `dbt` is a fresh process, as a scheduler would run
it (cold); --warm adds batches through `lakerank serve` (`--target connect`, the yardstick
through the same server). The run ends by checking `fct_contract_rank` and the yardstick's
ranks against DuckDB computing the same ranks from the landed files.

    python3 scripts/bench.py --quick                 # 1e5 history, 2 batches (CI smoke test)
    python3 scripts/bench.py --quick --warm          # then 2 batches through `lakerank serve`
    python3 scripts/bench.py --history 1e6 1e7 3e7   # the full run (hours; manual)
    python3 scripts/bench.py --history 1e6 --deployments embedded shared
                                                     # the shared deployment beside the embedded one

Results: a markdown table on stdout and JSON in --out (default bench-results.json).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import bench_eventlog  # noqa: E402  (Spark jobs and bytes read per run)
import bench_profile  # noqa: E402  (each batch's nodes and statements)
import bench_shared  # noqa: E402  (--deployments shared)
from bench_oracle import check_exact, check_exact_apart  # noqa: E402  (DuckDB over the landed files)
from bench_report import summary  # noqa: E402  (the markdown tables)
from bench_streams import N_PROJECTS, BatchMaker, land_history  # noqa: E402  (the event streams)

NAIVE = ROOT / "benchmarks" / "naive"
PROFILES = ROOT / "profiles"
# The yardstick's lines: (key, label, `dbt run` selection of benchmarks/naive/).
NAIVE_LINES = [
    ("columnar", "columnar re-rank", ["naive_contract_events", "naive_contract_rank"]),
    ("changelog", "re-rank + changelog", ["naive_cl_contract_events", "naive_cl_contract_rank",
                                          "naive_cl_contract_rank_changelog"]),
    ("json", "JSON re-parse (labelled)", ["naive_contract_rank_json"]),
]
RANK_VARS: list[str] = []  # `--vars` of every dbt run: the rank function, when not the default
DEPLOYMENT_ENV: dict = {}  # the shared deployment's environment while a size runs there (--deployments)
YARDSTICK_JVM: dict = {}  # LAKERANK_JVM_FLAGS of the yardstick's processes (--yardstick-jvm-flags)


# ---------------------------------------------------------------------------------------
# Running dbt and measuring it
# ---------------------------------------------------------------------------------------

def _tree_rss_kib(pid: int) -> int:
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as f:
                total += next((int(line.split()[1]) for line in f if line.startswith("VmRSS:")), 0)
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return total


def run_dbt(args: list[str], home: pathlib.Path, project: pathlib.Path = ROOT, jvm: dict | None = None) -> dict:
    """One `dbt` process; wall seconds, peak RSS (MiB) of its process tree, statements, dbt
    nodes run (and of them those that issued a statement), and from Spark's event log the jobs
    and bytes read in its time window."""
    # dbt's log of every run stays beside the home for profiling (<work>/logs/<time>-<command>).
    log_dir = home.parent / "logs" / f"{time.strftime('%H%M%S')}-{args[0]}"
    log_dir.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **DEPLOYMENT_ENV, **(jvm or {}), "LAKERANK_HOME": str(home),
           "LAKERANK_SPARK_CONF": bench_eventlog.conf(eventlog_dir(home))}
    cmd = [sys.executable, "-m", "dbt.cli.main", *args, *RANK_VARS, "--project-dir", str(project),
           "--profiles-dir", str(PROFILES), "--log-path", str(log_dir)]
    results = project / "target" / "run_results.json"
    results.unlink(missing_ok=True)
    started = time.time()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak = [0]

    def sample():
        while proc.poll() is None:
            peak[0] = max(peak[0], _tree_rss_kib(proc.pid))
            time.sleep(0.5)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, _ = proc.communicate()
    ended = time.time()
    seconds = ended - started
    sampler.join()
    log = (log_dir / "dbt.log").read_text(errors="replace") if (log_dir / "dbt.log").exists() else ""
    if proc.returncode != 0:
        sys.stderr.write(out[-5000:])
        raise SystemExit(f"bench: `dbt {' '.join(args)}` failed (exit {proc.returncode})")
    nodes = []
    if results.exists() and args[0] in ("build", "run"):
        nodes = [r["unique_id"] for r in json.loads(results.read_text())["results"]
                 if r["status"] not in ("skipped", "no op")]
    with_statements = set(re.findall(r"On ((?:model|test|snapshot|seed)\.[\w.]+): /\*", log))
    time.sleep(0.3)  # the server's event log is flushed at each job's and SQL execution's end
    spark = bench_eventlog.summarise(eventlog_dir(home), started, ended)
    return {"seconds": round(seconds, 2), "peak_rss_mib": round(peak[0] / 1024),
            "statements": len(re.findall(r"SQL status: OK", log)),
            "nodes": len(nodes), "nodes_with_statements": len([n for n in nodes if n in with_statements]),
            "spark_jobs": spark["spark_jobs"], "bytes_read": spark["bytes_read"],
            "load": os.getloadavg()[0], "log_dir": str(log_dir)}


def eventlog_dir(home: pathlib.Path) -> pathlib.Path:
    """Spark's event logs of a home's runs: beside it, so bytes_written stays the home's."""
    return home.parent / f"eventlog_{home.name}"


def run_naive(home: pathlib.Path, key: str, extra: list[str]) -> dict:
    """One line of the yardstick: `dbt run` of its selection of benchmarks/naive/."""
    select = next(sel for k, _, sel in NAIVE_LINES if k == key)
    return run_dbt(["run", "--select", *select, *extra], home, project=NAIVE, jvm=YARDSTICK_JVM)


def cold_floors(home: pathlib.Path, extra: list[str]) -> dict:
    """The start-up floor, `dbt show --inline 'select 1'`: lakerank's, then the yardstick's JVM."""
    return {"seconds": run_dbt(["show", "--inline", "select 1", *extra], home)["seconds"],
            "yardstick": run_dbt(["show", "--inline", "select 1", *extra], home, jvm=YARDSTICK_JVM)["seconds"]}


def bytes_written_since(root: pathlib.Path, since: float) -> int:
    total = 0
    for dirpath, _, files in os.walk(root):
        for name in files:
            try:
                st = os.stat(os.path.join(dirpath, name))
            except FileNotFoundError:
                continue
            if st.st_mtime >= since:
                total += st.st_size
    return total


# ---------------------------------------------------------------------------------------

def bench_history(n: int, args) -> dict:
    shared = bool(DEPLOYMENT_ENV)
    home = pathlib.Path(args.work) / f"home_{n}{'_shared' if shared else ''}"
    landing = home / "landing" / "contracts"
    projects = args.projects
    build = ["build", "--quiet"]  # the pipeline: the examples are off by default
    lines = [k for k, _, _ in NAIVE_LINES if k != "json" or not args.no_json]
    maker = BatchMaker(n, projects, seed=n + 1)
    done = 0
    if args.reuse and (home / "metastore_db").is_dir():
        # A home this script built before (--keep): its batches are replayed into the
        # generator so the new ones continue the same stream; one unmeasured build first
        # (the code may have changed since: a first build after an upgrade does more).
        done = len(list(landing.glob("batch_*.jsonl")))
        for _ in range(done):
            maker.batch(args.batch_events)
        print(f"== history {n:,} reused from {home} ({done} batches landed)", flush=True)
        load = {"seconds": None, "peak_rss_mib": None, "statements": None,
                "reused": run_dbt(build, home)}
        naive_load = None
    else:
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(eventlog_dir(home), ignore_errors=True)
        print(f"== history {n:,} contracts ({projects:,} projects) in {home}", flush=True)
        t = time.time()
        land_history(landing, n, projects, seed=n)
        if shared:
            bench_shared.upload(DEPLOYMENT_ENV, sorted(landing.glob("*.jsonl")))
        print(f"   generated (and landed) in {time.time() - t:.0f}s", flush=True)
        load = run_dbt(build, home)
        # The yardstick's first runs: the user's tables as they stand when the batches begin.
        naive_load = {k: run_naive(home, k, ["--quiet"]) for k in lines if k != "json"}
    print(f"   history load: {load}\n   yardstick's first runs: {naive_load}", flush=True)
    floor = cold_floors(home, ["--quiet"])
    empty = run_dbt(build, home)
    print(f"   floors {floor}, build with nothing landed {empty['seconds']}s", flush=True)
    batches = []
    for b in range(done, done + args.batches):
        land_batch(landing, b, maker.batch(args.batch_events))
        since = time.time()
        inc = run_dbt(build, home)
        warehouse = bench_shared.warehouse_on_disk(DEPLOYMENT_ENV) if shared else home / "warehouse"
        inc["bytes_written"] = bytes_written_since(warehouse, since)
        naive = {k: run_naive(home, k, ["--quiet"]) for k in lines}
        # The floor again, next to this batch: one floor sample taken while the box was busy
        # would skew every ratio, so the ratios use the smallest floor of the run.
        again = cold_floors(home, ["--quiet"])
        for k, key in (("samples", "seconds"), ("yardstick_samples", "yardstick")):
            floor[k] = floor.get(k, [floor[key]]) + [again[key]]
        row = {"batch": b, "incremental": inc, "naive": naive, "floor": again}
        print(f"   batch {b}: incremental {inc}, naive {naive}", flush=True)
        bench_profile.print_batch(pathlib.Path(inc["log_dir"]), eventlog_dir(home))
        batches.append(row)
    warm = bench_warm(home, maker, landing, done + args.batches, args, lines) if args.warm and not shared else None
    others = ["naive_contract_rank", "naive_cl_contract_rank"] + ([] if args.no_json else ["naive_contract_rank_json"])
    exact = (check_exact_apart(home, args.rank_function, others, {**os.environ, **DEPLOYMENT_ENV}) if shared
             else check_exact(home, args.rank_function, others))
    print(f"   exactness vs DuckDB: {exact}", flush=True)
    if not args.keep:
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(eventlog_dir(home), ignore_errors=True)
    return {"history": n, "deployment": "shared" if shared else "embedded", "projects": projects,
            "rank_function": args.rank_function, "load": load,
            "naive_load": naive_load, "floor": floor, "empty_build": empty,
            "batches": batches, "warm": warm, "exact": exact}


def land_batch(landing: pathlib.Path, b: int, lines: list[str]) -> None:
    tmp, dst = landing / f".batch_{b:04d}.tmp", landing / f"batch_{b:04d}.jsonl"
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, dst)
    if DEPLOYMENT_ENV:
        bench_shared.upload(DEPLOYMENT_ENV, [dst])


def bench_warm(home: pathlib.Path, maker: BatchMaker, landing: pathlib.Path, first: int, args,
               lines: list[str]) -> dict:
    """The same home behind `lakerank serve` (issue E.5): more batches, each a fresh
    `dbt build --target connect` process (as cron would run it), beside the naive re-rank and
    the floor through the same server. The server's first build (nothing landed) warms it."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    serve = [sys.executable, "-m", "dbt.adapters.lakerank.serve", "serve", "--home", str(home)]
    started = time.time()
    subprocess.run([*serve, "--project-dir", str(ROOT), "--port", str(port), "--background"],
                   check=True, capture_output=True,
                   env={**os.environ, "LAKERANK_HOME": str(home),
                        "LAKERANK_SPARK_CONF": bench_eventlog.conf(eventlog_dir(home))})
    start_s = round(time.time() - started, 2)
    connect = ["--target", "connect", "--quiet"]
    build = ["build", *connect]
    try:
        first_build = run_dbt(build, home)
        for k in lines:  # the yardstick's first run through the server warms it the same way
            run_naive(home, k, connect)
        floor = run_dbt(["show", "--inline", "select 1", *connect], home)
        floors = [floor["seconds"]]
        rows = []
        for b in range(first, first + args.batches):
            land_batch(landing, b, maker.batch(args.batch_events))
            inc = run_dbt(build, home)
            naive = {k: run_naive(home, k, connect) for k in lines}
            # the warm floor beside each batch too: the ratios use the run's smallest
            floors.append(run_dbt(["show", "--inline", "select 1", *connect], home)["seconds"])
            rows.append({"batch": b, "incremental": inc, "naive": naive})
            print(f"   warm batch {b}: incremental {inc}, naive {naive}", flush=True)
            bench_profile.print_batch(pathlib.Path(inc["log_dir"]), eventlog_dir(home))
        empty = run_dbt(build, home)
        floor_again = run_dbt(["show", "--inline", "select 1", *connect], home)
    finally:
        subprocess.run([*serve, "--stop"], check=False, capture_output=True)
    warm = {"server_start": start_s, "first_build": first_build,
            "floor": min(floors + [floor_again["seconds"]]), "floor_samples": floors + [floor_again["seconds"]],
            "empty_build": empty, "batches": rows}
    print(f"   warm server: start {start_s}s, first build {first_build['seconds']}s, floor {warm['floor']}s,"
          f" build with nothing landed {empty['seconds']}s", flush=True)
    return warm


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--history", nargs="+", default=["1e6", "1e7", "3e7"], help="history sizes (contracts)")
    p.add_argument("--batches", type=int, default=3)
    p.add_argument("--batch-events", type=int, default=10_000)
    p.add_argument("--projects", type=int, default=N_PROJECTS)
    p.add_argument("--quick", action="store_true", help="1e5 history, 2 batches of 2,000 events (CI)")
    p.add_argument("--work", default=None, help="where the homes go (default: a temp dir)")
    p.add_argument("--keep", action="store_true", help="keep the homes")
    p.add_argument("--out", default="bench-results.json")
    p.add_argument("--warm", action="store_true", help="then as many batches through `lakerank serve` (E.5)")
    p.add_argument("--reuse", action="store_true", help="reuse a kept home of --work (skip the history load)")
    p.add_argument("--rank-function", default="dense_rank", choices=["dense_rank", "rank", "row_number"])
    p.add_argument("--no-json", action="store_true", help="leave out the JSON re-parse line")
    p.add_argument("--yardstick-jvm-flags", default="", help="the yardstick's JVM flags (default: the JVM's own)")
    p.add_argument("--deployments", nargs="+", default=["embedded"], choices=["embedded", "shared"],
                   help="each size on these, one after the other (shared: services started for it, cold only)")
    args = p.parse_args()
    if args.quick:
        args.history, args.batches, args.batch_events = ["1e5"], 2, 2_000
    args.work = args.work or tempfile.mkdtemp(prefix="lakerank-bench-")
    YARDSTICK_JVM["LAKERANK_JVM_FLAGS"] = args.yardstick_jvm_flags
    if args.rank_function != "dense_rank":
        RANK_VARS.extend(["--vars", json.dumps({"rank_function": args.rank_function})])
    results = []
    for n in (int(float(h)) for h in args.history):
        for deployment in args.deployments:
            if deployment == "embedded":
                results.append(bench_history(n, args))
                continue
            with bench_shared.shared_deployment(f"bench{n}") as env:
                DEPLOYMENT_ENV.update(env)
                try:
                    results.append(bench_history(n, args))
                finally:
                    DEPLOYMENT_ENV.clear()
    pathlib.Path(args.out).write_text(json.dumps(results, indent=2))
    print(summary(results, args.batch_events, {k: label for k, label, _ in NAIVE_LINES}))
    if not all(r["exact"]["exact"] for r in results):
        print("bench: a rank table differs from DuckDB", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
