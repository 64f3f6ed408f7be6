#!/usr/bin/env python3
"""Count the Jinja-to-Python crossings (``adapter.lakerank_*`` calls) each model of a build
makes: the pipeline on a temporary home, a first build and then an incremental one, one
thread, in this process (dbtRunner).

    python3 scripts/probes/probe_crossings.py                # the pipeline, two builds
    python3 scripts/probes/probe_crossings.py --examples     # with the library examples (pk_tables)

Prints, for the incremental build, each model's crossings by method. docs/design.md
("One commit surface") has the budget.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests" / "support"), str(ROOT), str(ROOT / "adapter")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", action="store_true", help="build the library examples too")
    args = parser.parse_args()

    from dbt.cli.main import dbtRunner

    import cdc
    from crossings import by_node, counting_crossings

    home = pathlib.Path(tempfile.mkdtemp(prefix="lakerank-crossings-"))
    os.environ["LAKERANK_HOME"] = str(home)
    os.environ.setdefault("DBT_TARGET_PATH", "target/probe-crossings")
    os.environ.setdefault("LAKERANK_BUILD_SUMMARY", "off")
    runner = dbtRunner()
    base = ["--project-dir", str(ROOT), "--profiles-dir", str(ROOT / "profiles"), "--threads", "1"]
    if args.examples:
        base += ["--vars", json.dumps({"lakerank_examples": True})]
    batches = cdc.generate_batches(seed=5, n_batches=2, events_per_batch=60, n_projects=6)
    for i, lines in enumerate(batches):
        cdc.write_batch(home / "landing" / "contracts", i, lines)
        with counting_crossings() as counts:
            result = runner.invoke(["build", *base])
        if not result.success:
            print(f"build {i} failed: {result.exception}", file=sys.stderr)
            return 1
    print("crossings of the incremental build, by model:")
    for node, methods in sorted(by_node(counts).items(), key=lambda kv: -sum(kv[1].values())):
        detail = ", ".join(f"{m.removeprefix('lakerank_')} {n}" for m, n in methods.most_common())
        print(f"  {sum(methods.values()):3d}  {node}: {detail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
