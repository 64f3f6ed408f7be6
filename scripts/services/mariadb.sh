#!/usr/bin/env bash
# A throwaway MariaDB server with its binlog on, for tests and recordings (docs/services.md).
#
#   eval "$(scripts/services/mariadb.sh start)"   # prints MYSQL_HOST, MYSQL_TCP_PORT, MYSQL_USER,
#                                                 # MYSQL_PWD, LAKERANK_MARIADB_DIR, _SOCKET, _PID
#   scripts/services/mariadb.sh stop "$LAKERANK_MARIADB_DIR"
#
# start: a new data directory in a temporary folder (or the folder given, which must not
# exist), the server on 127.0.0.1 at a free port, user `lakerank` (password `lakerank`, every
# privilege), server_id=1, the binlog on with binlog_format=ROW and
# binlog_row_image=$LAKERANK_MARIADB_ROW_IMAGE (default FULL; Debezium's MySQL connector refuses
# any other). $LAKERANK_MARIADB_VERSION sets the version the server reports (MariaDB's `version`
# option; scripts/record_debezium.py: why). Debian's MariaDB (`apt-get install mariadb-server`
# when missing). As root the server runs as the `mysql` OS user. Only the shell-sourceable lines
# go to stdout. stop: SIGTERM to the recorded pid (SIGKILL after 30 s), then deletes the folder.
set -euo pipefail

SERVICE=mariadb.sh
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

ensure_installed() {
  command -v mariadbd >/dev/null || [ -x /usr/sbin/mariadbd ] && return
  say "installing mariadb-server (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq mariadb-server >&2
}


start() {
  ensure_installed
  local dir="${1:-}"
  if [ -z "$dir" ]; then
    dir="$(mktemp -d "${TMPDIR:-/tmp}/lakerank-mariadb.XXXXXX")"
  else
    [ -e "$dir" ] && { say "$dir exists"; exit 1; }
    mkdir -p "$dir"
  fi
  dir="$(cd "$dir" && pwd)"
  local user
  user="$(id -un)"
  if [ "$(id -u)" -eq 0 ]; then
    user=mysql
    chown "$user" "$dir"
  fi
  local port
  port="$(free_port)"
  {
    echo "[mariadbd]"
    echo "datadir=$dir/data"
    echo "socket=$dir/mariadb.sock"
    echo "pid-file=$dir/mariadbd.pid"
    echo "log-error=$dir/error.log"
    echo "port=$port"
    echo "bind-address=127.0.0.1"
    echo "skip-name-resolve"
    echo "server_id=1"
    echo "log_bin=$dir/data/binlog"
    echo "binlog_format=ROW"
    echo "binlog_row_image=${LAKERANK_MARIADB_ROW_IMAGE:-FULL}"
    [ -n "${LAKERANK_MARIADB_VERSION:-}" ] && echo "version=$LAKERANK_MARIADB_VERSION"
  } >"$dir/my.cnf"
  mariadb-install-db --defaults-file="$dir/my.cnf" --user="$user" --auth-root-authentication-method=normal \
    >"$dir/install.log" 2>&1 || { cat "$dir/install.log" >&2; exit 1; }
  mariadbd --defaults-file="$dir/my.cnf" --user="$user" >/dev/null 2>&1 </dev/null &
  for _ in $(seq 300); do
    [ -S "$dir/mariadb.sock" ] && mariadb --socket="$dir/mariadb.sock" -uroot -e "select 1" >/dev/null 2>&1 && break
    sleep 0.1
  done
  mariadb --socket="$dir/mariadb.sock" -uroot -e \
    "create user lakerank@'%' identified by 'lakerank'; grant all on *.* to lakerank@'%' with grant option;" \
    || { tail -20 "$dir/error.log" >&2; exit 1; }
  local pid
  pid="$(cat "$dir/mariadbd.pid")"
  echo "$pid" >"$dir/server.pid"
  echo "MYSQL_HOST=127.0.0.1"
  echo "MYSQL_TCP_PORT=$port"
  echo "MYSQL_USER=lakerank"
  echo "MYSQL_PWD=lakerank"
  echo "LAKERANK_MARIADB_DIR=$dir"
  echo "LAKERANK_MARIADB_SOCKET=$dir/mariadb.sock"
  echo "LAKERANK_MARIADB_PID=$pid"
}

stop() {
  stop_recorded "${1:-}" TERM
}

dispatch "start [DIR] | stop DIR" "$@"
