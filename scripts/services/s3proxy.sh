#!/usr/bin/env bash
# A throwaway S3 server for tests: s3proxy 4.1.0 on disk (docs/services.md, docs/deployment.md).
#
#   eval "$(scripts/services/s3proxy.sh start)"   # prints LAKERANK_S3_ENDPOINT, AWS_ACCESS_KEY_ID,
#                                                 # AWS_SECRET_ACCESS_KEY, AWS_REGION, LAKERANK_S3_BUCKET,
#                                                 # LAKERANK_S3PROXY_DIR, LAKERANK_S3PROXY_PID
#   scripts/services/s3proxy.sh stop "$LAKERANK_S3PROXY_DIR"
#
# start: s3proxy (org.gaul:s3proxy jar-with-dependencies from Maven Central, scripts/services/
# jars.sh) with jclouds' `filesystem` backend: every bucket is a folder under data/ in a new
# temporary folder, every object a file. On 127.0.0.1 at a free port, plain HTTP, AWS v2/v4
# signatures against a key pair made for this start (printed, and kept in s3proxy.properties,
# mode 0600); one bucket, $LAKERANK_S3_BUCKET (default `lakerank`), exists at start. Its log is
# s3proxy.log in the folder. Only the shell-sourceable lines go to stdout.
# stop: stops the server by the pid it recorded (SIGTERM, SIGKILL after 30 s) and deletes the
# folder with every object in it.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

SERVICE=s3proxy.sh
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"


start() {
  command -v java >/dev/null || { say "needs Java 17 (apt-get install openjdk-17-jdk-headless)"; exit 1; }
  local lib jar bucket="${LAKERANK_S3_BUCKET:-lakerank}"
  lib="$("$HERE/jars.sh" | sed -n 's/^LAKERANK_JARS=//p')"
  jar="$lib/s3proxy-4.1.0-jar-with-dependencies.jar"
  local dir
  dir="$(mktemp -d "${TMPDIR:-/tmp}/lakerank-s3proxy.XXXXXX")"
  mkdir -p "$dir/data/$bucket"  # the filesystem backend's bucket is a folder
  local key secret
  key="lakerank$(python3 -c 'import secrets; print(secrets.token_hex(6))')"
  secret="$(python3 -c 'import secrets; print(secrets.token_urlsafe(30))')"
  local port pid tries=0
  while :; do
    port="$(free_port)"
    (
      umask 077
      cat >"$dir/s3proxy.properties" <<PROPS
s3proxy.endpoint=http://127.0.0.1:$port
s3proxy.authorization=aws-v2-or-v4
s3proxy.identity=$key
s3proxy.credential=$secret
jclouds.provider=filesystem
jclouds.filesystem.basedir=$dir/data
jclouds.identity=$key
jclouds.credential=$secret
PROPS
    )
    (cd "$dir" && exec java ${LAKERANK_S3PROXY_JAVA_OPTS:--Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC} \
        -jar "$jar" --properties "$dir/s3proxy.properties" >"$dir/s3proxy.log" 2>&1 </dev/null) &
    pid=$!
    echo "$pid" >"$dir/server.pid"
    wait_listening "$pid" "$port" 60 && break
    kill -KILL "$pid" 2>/dev/null || true
    tries=$((tries + 1))
    if [ "$tries" -ge 3 ]; then
      tail -30 "$dir/s3proxy.log" >&2; rm -rf "$dir"; exit 1
    fi
  done
  echo "LAKERANK_S3_ENDPOINT=http://127.0.0.1:$port"
  echo "AWS_ACCESS_KEY_ID=$key"
  echo "AWS_SECRET_ACCESS_KEY=$secret"
  echo "AWS_REGION=us-east-1"
  echo "LAKERANK_S3_BUCKET=$bucket"
  echo "LAKERANK_S3PROXY_DIR=$dir"
  echo "LAKERANK_S3PROXY_PID=$pid"
}

stop() {
  stop_recorded "${1:-}" TERM
}

dispatch "start | stop DIR" "$@"
