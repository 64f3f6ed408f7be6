"""The server's end of the `connect` target's driver-side calls: a small JSON endpoint
(127.0.0.1 only) beside Spark Connect in `lakerank serve`'s driver, which runs the adapter's
driver-side methods (the storage and commit mixins), the same code the embedded target runs,
on the server's session *of the calling Connect client* (looked up by the client's user and
session id), so the temporary views a model's SQL created over Connect are the ones the
call sees. The client's end is :mod:`remote`.

Every call carries the server's token (``Authorization: Bearer``, as Spark Connect's own
calls do); a call without it, or with another, is refused before anything runs.
"""

from __future__ import annotations

import hmac
import json
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Optional

from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.lakerank.commits import CommitMixin
from dbt.adapters.lakerank.pk_tables import PkTableMixin
from dbt.adapters.lakerank.python_job import run_model
from dbt.adapters.lakerank.remote import RemoteDriver, decode, encode
from dbt.adapters.lakerank.storage import StorageMixin
from python_udfs.jvm import jvm_class


def client_session(spark, user_id: str, session_id: str):
    """The server's (classic) SparkSession behind one Connect client's session."""
    from pyspark.sql import SparkSession

    holder = jvm_class(spark, "org.apache.spark.sql.connect.service.SparkConnectService").getOrCreateIsolatedSession(
        user_id, session_id, jvm_class(spark, "scala.Option").empty())
    jsession = holder.session()
    jvm_class(spark, "org.apache.spark.sql.SparkSession").setActiveSession(jsession)
    jvm_class(spark, "org.apache.hadoop.hive.ql.metadata.Hive").closeCurrent()
    return SparkSession(spark.sparkContext, jsparkSession=jsession)


REFUSED = ("lakerank serve: the driver endpoint refused the call: it takes only clients with the server's "
           "token (in its LAKERANK_HOME's serve.json, which only the server's owner can read)")


def serve_driver_ops(spark, home: str, host: str, port: int, token: str) -> ThreadingHTTPServer:
    """Start the driver endpoint on ``host:port`` (a daemon thread) and return its server;
    it answers only calls that carry ``token``."""
    expected = f"Bearer {token}".encode()
    class DriverOps(StorageMixin, CommitMixin, PkTableMixin):
        """The adapter's driver-side methods on one client's session."""

        def __init__(self, session) -> None:
            self.session = session

        def _remote_driver(self) -> Optional[RemoteDriver]:
            return None

        def _session(self):
            return self.session

        def lakerank_home(self) -> str:
            return home

        def _nothing_to_introspect(self) -> bool:
            return False

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_args) -> None:  # the serve log holds Spark's output only
            pass

        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if not hmac.compare_digest(self.headers.get("Authorization", "").encode(), expected):
                self.reply(401, {"error": REFUSED})
                return
            request = json.loads(body)
            try:
                session = client_session(spark, request["user_id"], request["session_id"])
                method = request["method"]
                if method == "run_python_model":
                    result = run_python_model(session, *request["args"])
                else:
                    ops = DriverOps(session)
                    if not getattr(getattr(ops, method, None), "_is_available_", False):
                        raise DbtRuntimeError(f"lakerank serve: no driver-side method {method!r}")
                    result = getattr(ops, method)(*decode(request["args"]), **decode(request["kwargs"]))
                reply = {"result": encode(result)}
            except Exception as exc:  # the client raises it as a dbt error
                detail = str(exc) if isinstance(exc, DbtRuntimeError) else f"{type(exc).__name__}: {exc}"
                reply = {"error": detail, "trace": traceback.format_exc(limit=5)}
            self.reply(200, reply)

        def reply(self, status: int, reply: dict) -> None:
            body = json.dumps(reply).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="lakerank-driver-ops", daemon=True).start()
    return server


def run_python_model(session, name: str, compiled_code: str, root: str) -> Any:
    """A dbt Python model on the server's driver (python_job.run_model there)."""
    return run_model(session, name, compiled_code, root)
