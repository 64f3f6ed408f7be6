#!/usr/bin/env bash
# ruff over the Python (pyproject.toml [tool.ruff]), then sqlfluff over the project's models
# (dbt templater, sparksql dialect) on a throwaway LAKERANK_HOME.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m ruff check .
home="$(mktemp -d)"
trap 'rm -rf "$home"' EXIT
LAKERANK_HOME="$home" python3 -m sqlfluff lint models "$@"
# Compiling needs no Spark on a home that was never built (issue G.3): a JVM started by the
# templater would have created the home's metastore.
if [ -d "$home/metastore_db" ]; then
  echo "lint: the dbt templater started a Spark session (compile-time introspection on an empty home)" >&2
  exit 1
fi
