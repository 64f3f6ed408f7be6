#!/usr/bin/env bash
# A throwaway PostgreSQL 15 cluster for tests and recordings (docs/services.md).
#
#   eval "$(scripts/services/postgres.sh start)"   # prints PGHOST, PGPORT, PGUSER, PGDATABASE,
#                                                  # LAKERANK_PG_DIR, LAKERANK_PG_PID
#   scripts/services/postgres.sh stop "$LAKERANK_PG_DIR"
#
# start: a new cluster in a temporary folder (or the folder given, which must not exist),
# on 127.0.0.1 at a free port, trust authentication on the loopback only, wal_level=logical
# (logical decoding: Debezium's pgoutput), superuser `lakerank`. Debian's server
# (/usr/lib/postgresql/15/bin); installed with apt-get when missing. initdb refuses root: as
# root the server runs as the `postgres` OS user. Only the shell-sourceable lines go to stdout.
# stop: stops the server by the pid it recorded (a fast shutdown: SIGINT, then SIGKILL after
# 30 s) and deletes the folder.
set -euo pipefail

PG_BIN="${LAKERANK_PG_BIN:-/usr/lib/postgresql/15/bin}"
SUPERUSER=lakerank

SERVICE=postgres.sh
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ensure_installed() {
  [ -x "$PG_BIN/initdb" ] && return
  say "installing postgresql-15 (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq postgresql-15 >&2
  [ -x "$PG_BIN/initdb" ] || { say "no $PG_BIN/initdb after installing postgresql-15"; exit 1; }
}


# Runs a command as the server's OS user: the current one, or `postgres` when root.
as_owner() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u "${LAKERANK_PG_OS_USER:-postgres}" -- "$@"
  else
    "$@"
  fi
}

start() {
  ensure_installed
  local dir="${1:-}"
  if [ -z "$dir" ]; then
    dir="$(mktemp -d "${TMPDIR:-/tmp}/lakerank-pg.XXXXXX")"
  else
    [ -e "$dir" ] && { say "$dir exists"; exit 1; }
    mkdir -p "$dir"
  fi
  dir="$(cd "$dir" && pwd)"
  if [ "$(id -u)" -eq 0 ]; then
    local owner="${LAKERANK_PG_OS_USER:-postgres}"
    id "$owner" >/dev/null 2>&1 || useradd --system --no-create-home "$owner"
    chown "$owner" "$dir"
  fi
  as_owner "$PG_BIN/initdb" -D "$dir/data" -U "$SUPERUSER" --auth=trust -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; exit 1; }
  local port tries=0
  while :; do
    port="$(free_port)"
    if as_owner "$PG_BIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start -o \
        "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir -c wal_level=logical \
         -c max_replication_slots=8 -c max_wal_senders=8 -c fsync=off -c synchronous_commit=off \
         -c full_page_writes=off" >&2; then
      break
    fi
    tries=$((tries + 1))
    [ "$tries" -lt 3 ] || { tail -20 "$dir/server.log" >&2; exit 1; }  # the port was taken meanwhile
  done
  local pid
  pid="$(head -1 "$dir/data/postmaster.pid")"
  echo "$pid" >"$dir/server.pid"
  echo "PGHOST=127.0.0.1"
  echo "PGPORT=$port"
  echo "PGUSER=$SUPERUSER"
  echo "PGDATABASE=postgres"
  echo "LAKERANK_PG_DIR=$dir"
  echo "LAKERANK_PG_PID=$pid"
}

stop() {
  stop_recorded "${1:-}" INT  # PostgreSQL's fast shutdown
}

dispatch "start [DIR] | stop DIR" "$@"
