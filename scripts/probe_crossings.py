#!/usr/bin/env python3
"""Count the Jinja-to-Python crossings (``adapter.lakerank_*`` calls) each model of a build
makes: the pipeline on a temporary home, a first build and then an incremental one, one
thread, in this process (dbtRunner).

    python3 scripts/probe_crossings.py                # the pipeline, two builds
    python3 scripts/probe_crossings.py --examples     # with the library examples (pk_tables)

Prints, for the incremental build, each model's crossings by method. docs/design.md
("One commit surface") has the budget.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import pathlib
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests" / "support"), str(ROOT), str(ROOT / "adapter")]


def counting(counts: collections.Counter, current: list) -> None:
    """Count every ``adapter.lakerank_*`` attribute a template takes from dbt's adapter
    wrapper (the Jinja side's only way in; the adapter's calls among its own methods do
    not count), for the node that is running (``current[0]``)."""
    from dbt.context.providers import RuntimeDatabaseWrapper

    original = RuntimeDatabaseWrapper.__getattr__

    def getattr_counting(self, name):
        if name.startswith("lakerank_"):
            counts[(current[0], name)] += 1
        return original(self, name)

    RuntimeDatabaseWrapper.__getattr__ = getattr_counting


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", action="store_true", help="build the library examples too")
    args = parser.parse_args()

    from dbt.cli.main import dbtRunner

    import cdc

    counts: collections.Counter = collections.Counter()
    current = ["(start)"]
    counting(counts, current)

    def on_event(event) -> None:
        if event.info.name == "NodeStart":
            current[0] = event.data.node_info.node_name
        elif event.info.name == "NodeFinished":
            current[0] = "(between)"

    home = pathlib.Path(tempfile.mkdtemp(prefix="lakerank-crossings-"))
    os.environ["LAKERANK_HOME"] = str(home)
    os.environ.setdefault("DBT_TARGET_PATH", "target/probe-crossings")
    os.environ.setdefault("LAKERANK_BUILD_SUMMARY", "off")
    runner = dbtRunner(callbacks=[on_event])
    base = ["--project-dir", str(ROOT), "--profiles-dir", str(ROOT / "profiles"), "--threads", "1"]
    if args.examples:
        base += ["--vars", json.dumps({"lakerank_examples": True})]
    batches = cdc.generate_batches(seed=5, n_batches=2, events_per_batch=60, n_projects=6)
    for i, lines in enumerate(batches):
        cdc.write_batch(home / "landing" / "contracts", i, lines)
        counts.clear()
        result = runner.invoke(["build", *base])
        if not result.success:
            print(f"build {i} failed: {result.exception}", file=sys.stderr)
            return 1
    by_node: dict = collections.defaultdict(collections.Counter)
    for (node, method), n in counts.items():
        by_node[node][method] += n
    print("crossings of the incremental build, by model:")
    for node, methods in sorted(by_node.items(), key=lambda kv: -sum(kv[1].values())):
        detail = ", ".join(f"{m.removeprefix('lakerank_')} {n}" for m, n in methods.most_common())
        print(f"  {sum(methods.values()):3d}  {node}: {detail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
