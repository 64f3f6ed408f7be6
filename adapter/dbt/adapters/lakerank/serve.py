"""`lakerank serve`: a long-lived Spark Connect server over one LAKERANK_HOME.

The server is a Python Spark driver (`run_driver`) with the same warehouse, Derby metastore
and Spark settings as the embedded `local` target (the profile's `server_side_parameters` plus
the home's settings). Its JVM runs the wheel's Spark Connect service; beside it, lakerank's
driver endpoint (driver_ops.py) runs the commits' catalog and filesystem calls and the Python
models for `--target connect` clients. It listens on 127.0.0.1 by default, records where in
`$LAKERANK_HOME/serve.json`, logs to `$LAKERANK_HOME/logs/serve.log`, and holds the home's
build lock for its whole life, so an embedded `dbt build` on the same home refuses at once
with a clear message instead of failing inside Derby.

Both of its endpoints take only clients that present its token: a new one for every start
(``secrets.token_urlsafe``), handed to the server process in its environment (never on a
command line), kept in serve.json (mode 0600: its owner only) and read from there by the
connect target. Spark Connect checks it itself (Spark's pre-shared bearer token); the
driver endpoint checks the same token on every call.

    lakerank serve [--home H] [--port P] [--host 127.0.0.1] [--target local] [--background]
    lakerank serve --stop [--home H]
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from typing import Dict, List, Optional

from py4j.protocol import Py4JError

from dbt.adapters.lakerank.driver_ops import serve_driver_ops
from dbt.adapters.lakerank.home import (
    LakerankBusyError,
    acquire_build_lock,
    alive,
    lock_home,
    read_state,
    ready_path,
    resolve_home,
    state_path,
    write_state,
)
from dbt.adapters.lakerank.java_check import LakerankJavaError, check_java
from dbt.adapters.lakerank.session import (
    JVM_FLAGS,
    current_thread_session,
    env_spark_conf,
    is_shared,
    start_embedded_session,
)
from python_udfs.jvm import jvm_class

SERVICE_CLASS = "org.apache.spark.sql.connect.service.SparkConnectService"
DEFAULT_PORT = 15002
READY_TIMEOUT_S = 180
# Spark Connect's pre-shared token: the server reads the environment variable when the
# setting is absent; Connect clients read it from their connection string's ``token=`` or
# from the same variable.
TOKEN_ENV = "SPARK_CONNECT_AUTHENTICATE_TOKEN"
TOKEN_CONF = "spark.connect.authenticate.token"


class ServeError(RuntimeError):
    """A clear, user-facing refusal (printed without a traceback)."""


def profile_spark_conf(project_dir: str, target: str) -> Dict[str, str]:
    """The target's ``server_side_parameters`` from the project's ``profiles/profiles.yml``,
    rendered with ``env_var`` as dbt would."""
    import jinja2
    import yaml

    path = os.path.join(project_dir, "profiles", "profiles.yml")
    if not os.path.exists(path):
        return {}

    def env_var(name, default=None):
        value = os.environ.get(name, default)
        if value is None:
            raise ServeError(f"{path}: env_var('{name}') is not set and has no default")
        return value

    text = jinja2.Environment().from_string(open(path, encoding="utf-8").read()).render(env_var=env_var)
    outputs = (yaml.safe_load(text).get("lakerank") or {}).get("outputs") or {}
    if target not in outputs:
        raise ServeError(f"{path}: profile lakerank has no target {target!r} (targets: {sorted(outputs)})")
    return {str(k): str(v) for k, v in (outputs[target].get("server_side_parameters") or {}).items()}


def server_command(home: str, host: str, port: int, conf: Dict[str, str]) -> List[str]:
    """The server process: a Python driver (:func:`run_driver`) with Spark Connect in its JVM."""
    settings = {**conf, "spark.connect.grpc.binding.address": host, "spark.connect.grpc.binding.port": str(port)}
    return [sys.executable, "-m", "dbt.adapters.lakerank.serve", "_driver", "--home", home, "--host", host,
            "--port", str(port), "--conf", json.dumps(settings)]


def local_host(host: str) -> str:
    """The name a client on this machine gives the server bound to ``host``: ``localhost``
    for a loopback or wildcard bind (Spark Connect clients send a token without TLS to
    ``localhost`` only), else ``host`` itself."""
    if host == "localhost":
        return host
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host
    return "localhost" if address.is_loopback or address.is_unspecified else host


def run_driver(home: str, host: str, port: int, conf: Dict[str, str]) -> None:
    """The server's life: the home's embedded session (build lock, warehouse, metastore), Spark
    Connect started on its SparkContext, and the lakerank driver endpoint beside it
    (driver_ops.py); until SIGTERM. Both take only clients with the token in ``TOKEN_ENV``
    (Spark Connect reads it there itself)."""
    token = os.environ.get(TOKEN_ENV, "")
    if not token:
        raise ServeError(f"lakerank serve: the server process needs its token in {TOKEN_ENV}")
    acquire_build_lock(home, f"lakerank serve on port {port}, pid {os.getpid()}")
    start_embedded_session(home, conf)
    spark = current_thread_session()
    jvm_class(spark, SERVICE_CLASS).start(spark._jsc.sc())
    # The ports actually bound: Spark moves to a later port when the asked one is taken (0
    # asks the system for a free one), and the driver endpoint takes any free port.
    port = getattr(jvm_class(spark, SERVICE_CLASS + "$"), "MODULE$").localPort()
    ops = serve_driver_ops(spark, home, host, 0, token)
    driver_port = ops.server_address[1]
    ready = ready_path(home)
    with open(ready + ".tmp", "w", encoding="utf-8") as fh:
        json.dump({"pid": os.getpid(), "port": port, "driver_port": driver_port}, fh)
    os.replace(ready + ".tmp", ready)

    def stop(_signum, _frame):
        ops.shutdown()
        try:
            spark.stop()
        except (Py4JError, OSError):  # the JVM is gone already (killed with its process group)
            pass
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    print(f"lakerank driver: Spark Connect on {host}:{port}, driver endpoint on {host}:{driver_port}", flush=True)
    while True:
        signal.pause()


def _wait_ready(proc: subprocess.Popen, home: str, host: str, log: str) -> Dict[str, int]:
    """The ports the server process bound, once it says both services listen (its ready
    file) and Spark Connect answers there. A port picked before the server started could be
    taken by then, by anything, and a probe of it would find that other listener."""
    deadline = time.time() + READY_TIMEOUT_S
    while time.time() < deadline:
        if proc.poll() is not None:
            raise ServeError(f"lakerank serve: the server exited with code {proc.returncode}; see {log}"
                             + _last_lines(log))
        try:
            with open(ready_path(home), encoding="utf-8") as fh:
                ready = json.load(fh)
            if ready.get("pid") == proc.pid:
                with socket.create_connection((host, ready["port"]), timeout=1):
                    return ready
        except (OSError, ValueError):
            pass
        time.sleep(0.5)
    proc.terminate()
    raise ServeError(f"lakerank serve: not ready after {READY_TIMEOUT_S} s; see {log}")


def _last_lines(log: str, n: int = 5) -> str:
    try:
        with open(log, encoding="utf-8", errors="replace") as fh:
            lines = [x for x in fh.read().splitlines() if x.strip()]
    except OSError:
        return ""
    return "\n" + "\n".join(lines[-n:]) if lines else ""


def start(home: str, host: str, port: int, target: str, project_dir: str, background: bool) -> Dict:
    running = read_state(home)
    if running is not None:
        raise ServeError(f"lakerank serve: already serving LAKERANK_HOME={home} at {running['url']} "
                         f"(pid {running['pid']}); `lakerank serve --stop` first")
    try:  # no usable Java: say what to install, before a server process dies in its JVM's start
        check_java()
    except LakerankJavaError as exc:
        raise ServeError(exc.msg) from None
    try:  # refuse at once while a build holds the home; the server takes the lock itself
        os.close(lock_home(home, "lakerank serve (starting)",
                           "lakerank serve: LAKERANK_HOME={home} is busy ({holder}); stop that build or server first"))
    except LakerankBusyError as exc:
        raise ServeError(str(exc)) from None
    conf, overrides = profile_spark_conf(project_dir, target), env_spark_conf()
    if is_shared({**conf, **overrides}):
        raise ServeError(f"lakerank serve: target {target!r} is the shared deployment, where builders take turns "
                         "through the catalog's build lease; a server takes no lease and its builds would commit "
                         "beside theirs unfenced. Build with `dbt build --target shared` (docs/deployment.md).")
    if TOKEN_CONF in conf or TOKEN_CONF in overrides:
        raise ServeError(f"lakerank serve: {TOKEN_CONF} is set (target {target!r} or LAKERANK_SPARK_CONF); "
                         "the server makes its own token at every start and keeps it in serve.json. "
                         "Remove the setting.")
    token = secrets.token_urlsafe(32)
    log = os.path.join(home, "logs", "serve.log")
    os.makedirs(os.path.dirname(log), exist_ok=True)
    # A long-lived JVM with the machine to itself: full JIT tiers unless told otherwise.
    flags = os.environ.get("LAKERANK_JVM_FLAGS", JVM_FLAGS.replace("-XX:TieredStopAtLevel=1 ", ""))
    env = {**os.environ, "SPARK_LOCAL_IP": host, "LAKERANK_JVM_FLAGS": flags, "LAKERANK_SPARK_LOG": log,
           TOKEN_ENV: token}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    _discard(ready_path(home))
    with open(log, "ab") as out:
        proc = subprocess.Popen(server_command(home, host, port, conf), stdout=out,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                                env=env, cwd=project_dir)
    ready = _wait_ready(proc, home, host, log)
    port, driver_port = ready["port"], ready["driver_port"]
    client_host = local_host(host)
    state = {"url": f"sc://{client_host}:{port}",
             "driver": f"http://{'127.0.0.1' if client_host == 'localhost' else host}:{driver_port}",
             "host": host, "port": port, "pid": proc.pid, "home": home, "log": log,
             "started": time.strftime("%Y-%m-%d %H:%M:%S"), "token": token}
    write_state(home, state)
    print(f"lakerank serve: Spark Connect at {state['url']} for LAKERANK_HOME={home} (pid {proc.pid}, log {log})",
          flush=True)
    if not background:
        _serve_until_signalled(proc, home)
    return state


def _serve_until_signalled(proc: subprocess.Popen, home: str) -> None:
    def stop(_signum, _frame):
        _stop_process(proc.pid)
        _forget(home, proc.pid)
        sys.exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    proc.wait()
    _forget(home, proc.pid)


def _stop_process(pid: int, timeout_s: float = 30) -> None:
    """Stop the server: SIGTERM to its Python process, which stops Spark (the JVM exits with
    it); then SIGKILL to whatever of its process group is left."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    deadline = time.time() + timeout_s
    while time.time() < deadline and alive(pid):
        time.sleep(0.2)
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _forget(home: str, pid: int) -> None:
    try:
        with open(state_path(home), encoding="utf-8") as fh:
            if json.load(fh).get("pid") != pid:
                return
    except (FileNotFoundError, ValueError):
        return
    os.remove(state_path(home))
    _discard(ready_path(home))


def _discard(path: str) -> None:
    if os.path.exists(path):
        os.remove(path)


def stop(home: str) -> bool:
    """Stop the home's server; False when none was running."""
    state = read_state(home)
    if state is None:
        _discard(state_path(home))
        return False
    _stop_process(int(state["pid"]))
    _forget(home, int(state["pid"]))
    _wait_home_free(home)
    return True


def _wait_home_free(home: str, timeout_s: float = 30) -> None:
    """Return once the home's build lock is free: a process whose main thread has exited
    reads as gone (:func:`home.alive`) while its other threads, which share its open files and
    so the lock, are still exiting."""
    deadline = time.time() + timeout_s
    while True:
        try:
            os.close(lock_home(home, "lakerank serve --stop", "{holder}"))
            return
        except LakerankBusyError as exc:
            if time.time() > deadline:
                raise ServeError(f"lakerank serve: stopped, but LAKERANK_HOME={home} is still locked by "
                                 f"{exc.msg.strip()} after {timeout_s:.0f} s") from None
        time.sleep(0.1)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="lakerank")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="a Spark Connect server over LAKERANK_HOME")
    serve.add_argument("--home", default=None, help="default: $LAKERANK_HOME, else <project>/.lakerank")
    serve.add_argument("--project-dir", default=os.getcwd(), help="the project whose profile to use")
    serve.add_argument("--target", default=os.environ.get("LAKERANK_TARGET", "local"))
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=int(os.environ.get("LAKERANK_CONNECT_PORT", DEFAULT_PORT)),
                       help="Spark Connect's port (0: any free one; serve.json says which)")
    serve.add_argument("--background", action="store_true", help="return once the server accepts connections")
    serve.add_argument("--stop", action="store_true", help="stop the home's server")
    driver = sub.add_parser("_driver", help=argparse.SUPPRESS)  # the server process itself
    driver.add_argument("--home", required=True)
    driver.add_argument("--host", required=True)
    driver.add_argument("--port", type=int, required=True)
    driver.add_argument("--conf", required=True)
    args = parser.parse_args(argv)
    if args.command == "_driver":
        run_driver(args.home, args.host, args.port, json.loads(args.conf))
        return 0
    home = os.path.abspath(args.home) if args.home else resolve_home()
    try:
        if args.stop:
            print(f"lakerank serve: {'stopped' if stop(home) else 'no server running'} for LAKERANK_HOME={home}")
            return 0
        start(home, args.host, args.port, args.target, os.path.abspath(args.project_dir), args.background)
        return 0
    except ServeError as exc:
        print(str(exc), file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
