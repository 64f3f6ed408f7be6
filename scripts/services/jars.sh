#!/usr/bin/env bash
# The jars the shared deployment and its test services need, from Maven Central, into a cache
# folder (never into the repository): docs/deployment.md.
#
#   scripts/services/jars.sh            # fetches what is missing; prints LAKERANK_JARS=<folder>
#   scripts/services/jars.sh --check    # fetches nothing; exit 1 naming what is missing
#
# The folder is $LAKERANK_JARS, else ${XDG_CACHE_HOME:-~/.cache}/lakerank/jars. Maven
# (`mvn`; installed with apt-get when missing, as root) does the fetching with its own `dependency:copy`, so a
# proxy or mirror in ~/.m2/settings.xml applies. Versions:
# - hadoop-aws 3.5.0: pyspark 4.3.0's Hadoop (its jars/hadoop-client-api-3.5.0.jar); S3A
#   must match the Hadoop it runs in. The AWS SDK v2 bundle 2.35.4 and analyticsaccelerator-s3
#   1.3.1 are the versions hadoop-project 3.5.0 pins.
# - the PostgreSQL JDBC driver 42.7.14: the metastore service's connection to its database.
# - s3proxy 4.1.0 (jar-with-dependencies, Java 17): the test S3 server.
set -euo pipefail

ARTIFACTS=(
  org.apache.hadoop:hadoop-aws:3.5.0
  software.amazon.awssdk:bundle:2.35.4
  software.amazon.s3.analyticsaccelerator:analyticsaccelerator-s3:1.3.1
  org.postgresql:postgresql:42.7.14
  org.gaul:s3proxy:4.1.0:jar:jar-with-dependencies
)

say() { echo "jars.sh: $*" >&2; }

dir="${LAKERANK_JARS:-${XDG_CACHE_HOME:-$HOME/.cache}/lakerank/jars}"

# The file name Maven's dependency:copy gives an artifact g:a:v[:type[:classifier]].
file_of() {
  local IFS=:
  # shellcheck disable=SC2086
  set -- $1
  if [ -n "${5:-}" ]; then echo "$2-$3-$5.${4:-jar}"; else echo "$2-$3.${4:-jar}"; fi
}

missing=()
for a in "${ARTIFACTS[@]}"; do
  [ -s "$dir/$(file_of "$a")" ] || missing+=("$a")
done

if [ "${1:-}" = "--check" ]; then
  if [ "${#missing[@]}" -gt 0 ]; then
    say "missing in $dir: ${missing[*]} (run scripts/services/jars.sh)"
    exit 1
  fi
  echo "LAKERANK_JARS=$dir"
  exit 0
fi

if [ "${#missing[@]}" -gt 0 ]; then
  if ! command -v mvn >/dev/null; then
    # As postgres.sh does for its server: installed with apt-get where that can be done.
    if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
      say "installing maven (apt-get)"
      export DEBIAN_FRONTEND=noninteractive
      apt-get update -qq >&2
      apt-get install -y -qq maven >&2
    fi
    command -v mvn >/dev/null || { say "needs Maven: apt-get install maven"; exit 1; }
  fi
  mkdir -p "$dir"
  for a in "${missing[@]}"; do
    say "fetching $a"
    # Into a temporary name first: an interrupted fetch leaves no half jar behind.
    tmp="$(mktemp -d "$dir/.fetch.XXXXXX")"
    if ! mvn -q -B dependency:copy -Dartifact="$a" -DoutputDirectory="$tmp" >&2; then
      rm -rf "$tmp"; say "could not fetch $a from Maven"; exit 1
    fi
    mv "$tmp/$(file_of "$a")" "$dir/"
    rm -rf "$tmp"
  done
fi
echo "LAKERANK_JARS=$dir"
