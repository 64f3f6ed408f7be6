# Shared by the service scripts of scripts/services/ (docs/services.md), sourced after each sets
# SERVICE (its own name, for messages): messages on stderr, a free port on the loopback, the
# stop by the pid a start recorded in DIR/server.pid, and the start|stop dispatch.

say() { echo "$SERVICE: $*" >&2; }

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# stop_recorded DIR [SIGNAL]: SIGNAL (default TERM) to DIR/server.pid's process, SIGKILL after
# 30 s, then delete DIR.
stop_recorded() {
  local dir="${1:?usage: $SERVICE stop DIR}" signal="${2:-TERM}"
  [ -f "$dir/server.pid" ] || { say "no $dir/server.pid: nothing started there"; exit 1; }
  local pid
  pid="$(cat "$dir/server.pid")"
  if kill -0 "$pid" 2>/dev/null; then
    kill "-$signal" "$pid"
    for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
  fi
  rm -rf "$dir"
}

# dispatch USAGE ARGS...: `start ...` runs the script's start, `stop DIR` its stop.
dispatch() {
  local usage="$1"
  shift
  case "${1:-}" in
    start) shift; start "$@" ;;
    stop) shift; stop "$@" ;;
    *) echo "usage: $0 $usage" >&2; exit 2 ;;
  esac
}

# wait_listening PID PORT SECONDS: 0 once 127.0.0.1:PORT accepts a connection while PID lives,
# 1 if PID exits or SECONDS pass first.
wait_listening() {
  local pid="$1" port="$2" tenths=$(($3 * 10))
  for _ in $(seq "$tenths"); do
    kill -0 "$pid" 2>/dev/null || return 1
    python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close()' "$port" \
      2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
