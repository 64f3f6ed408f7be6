#!/usr/bin/env bash
# Per-build wall time of the pipeline in a given checkout, to tell a slower box from slower code:
# the demo's four contract batches landed one at a time, a pipeline-only
# `dbt run` after each, then two runs with nothing to do (`--exclude tag:example` keeps the
# examples out whatever the checkout's default). Compare two commits back to back:
#   git worktree add /tmp/old <rev> && bash scripts/probes/bench_runs.sh /tmp/old && bash scripts/probes/bench_runs.sh .
set -euo pipefail
tree=$(cd "${1:-.}" && pwd)
export PYTHONPATH="$tree/adapter:$tree" LAKERANK_HOME="/tmp/lakerank_bench_runs_$(basename "$tree")"
export LAKERANK_BUILD_SUMMARY=off
rm -rf "$LAKERANK_HOME" && mkdir -p "$LAKERANK_HOME/landing/contracts"
cd "$tree"
run() { /usr/bin/time -f "$(basename "$tree") $1: %e s" dbt run -q --project-dir . --profiles-dir profiles \
          --exclude tag:example 2>&1 | grep -E "^$(basename "$tree") |rror" || true; }
for b in 00 01 02 03; do
  cp "seeds/demo/batch_$b.jsonl" "$LAKERANK_HOME/landing/contracts/"
  run "batch $b"
done
run "nothing to do"
run "nothing to do"
