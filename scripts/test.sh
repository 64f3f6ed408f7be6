#!/usr/bin/env bash
# lakerank's test command (README, CI): sqlfluff lint, then pytest driving real dbt builds.
# pytest's exit code 5 ("no tests collected") is a failure here, never a silent pass.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/lint.sh || exit 1
# Two workers, one test file each at a time (tests of a file share fixtures and homes): each
# worker has its own JVM and homes; most of a dbt build is latency, so two overlap well on 2 cores.
python3 -m pytest -n "${LAKERANK_TEST_WORKERS:-2}" --dist loadfile "$@"
rc=$?
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests: failing" >&2
  exit 1
fi
exit "$rc"
