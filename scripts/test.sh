#!/usr/bin/env bash
# lakerank's test command (README, CI): ruff and sqlfluff lint, then pytest (tests/unit, tests/functional, tests/adapter_suite).
# pytest's exit code 5 ("no tests collected") is a failure here, never a silent pass.
set -uo pipefail
cd "$(dirname "$0")/.."
# This checkout's own code first, whichever checkout the editable install points at (a clone
# testing beside another one must not import the other's adapter or python_udfs; Spark's
# Python workers and the crash tests' dbt processes inherit it).
export PYTHONPATH="$PWD/adapter:$PWD${PYTHONPATH:+:$PYTHONPATH}"
# The JVM's class-data-sharing archive (adapter/dbt/adapters/lakerank/jvm_archive.py): built
# once per machine (~30 s), it halves every cold dbt process's JVM start-up, and the crash
# tests start dozens of them. It builds while the lint runs (each uses about one core).
archive_log="$(mktemp)"
python3 -m dbt.adapters.lakerank.jvm_archive >"$archive_log" 2>&1 &
archive=$!
if ! bash scripts/lint.sh; then
  kill "$archive" 2>/dev/null
  exit 1
fi
if ! wait "$archive"; then
  cat "$archive_log" >&2  # e.g. no usable Java: what to install
  exit 1
fi
rm -f "$archive_log"
# Two workers, one test group each at a time (a group is a file, whose tests share fixtures
# and homes, or one long independent test: tests/conftest.py): each worker has its own
# JVM and homes; most of a dbt build is latency, so two overlap well on 2 cores. Groups are
# handed out in the collection's order, longest first (tests/conftest.py); xdist's default
# reorders them by their number of tests, which left the crash soak (one test, the longest)
# for the end: 1,273 s of wall for 2,136 worker-seconds.
python3 -m pytest -n "${LAKERANK_TEST_WORKERS:-2}" --dist loadgroup --no-loadscope-reorder "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests: failing" >&2
  exit 1
fi
exit "$rc"
