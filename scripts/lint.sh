#!/usr/bin/env bash
# sqlfluff over the project's models (dbt templater, sparksql dialect) on a throwaway LAKERANK_HOME.
set -euo pipefail
cd "$(dirname "$0")/.."
home="$(mktemp -d)"
trap 'rm -rf "$home"' EXIT
LAKERANK_HOME="$home" python3 -m sqlfluff lint models "$@"
