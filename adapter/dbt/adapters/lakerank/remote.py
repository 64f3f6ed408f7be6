"""The `connect` target's client: its Spark Connect session and its driver-side calls.

Over Spark Connect the dbt process has no JVM: its SQL goes through the Connect client, but
lakerank's commits also need the driver's catalog and filesystem APIs (partition swaps, table
properties, directory writes) and Python models run on a driver. `lakerank serve` is therefore
a Python driver that hosts both: Spark Connect in its JVM, and a small JSON endpoint
(127.0.0.1 only) that runs the adapter's driver-side methods, the same code the embedded
target runs, on the server's session *of the calling Connect client* (looked up by the
client's user and session id), so the temporary views a model's SQL created over Connect are
the ones the driver-side call sees.

:func:`driver_side` wraps each driver-side adapter method; on the connect target the call
goes to :class:`RemoteDriver` instead of running here. The server's end is
:mod:`driver_ops`.

Both endpoints take only clients with the server's token: the one `lakerank serve` keeps in
the home's serve.json (its owner only), or, for an endpoint named in
``LAKERANK_CONNECT_URL``, the connection string's ``token=`` or
``SPARK_CONNECT_AUTHENTICATE_TOKEN``. Messages name an endpoint without its parameters.
"""

from __future__ import annotations

import functools
import ipaddress
import json
import os
import threading
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable, Dict

from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.lakerank.home import hold_lock, lock_home, read_state, resolve_home
from dbt.adapters.lakerank.session import env_spark_conf

REL = "__lakerank_relation__"


def encode(value: Any) -> Any:
    """JSON form of a driver-side call's arguments and results (relations by name)."""
    if hasattr(value, "identifier") and hasattr(value, "schema") and hasattr(value, "render"):
        return {REL: {"schema": value.schema, "identifier": value.identifier, "type": str(value.type or "table")}}
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    return value


def decode(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {REL}:
            from dbt.adapters.spark.relation import SparkRelation

            spec = value[REL]
            return SparkRelation.create(schema=spec["schema"], identifier=spec["identifier"], type=spec["type"])
        return {k: decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode(v) for v in value]
    return value


def shown(url: str) -> str:
    """``url`` for a message: without its connection-string parameters (``;token=...``)."""
    return url.split(";", 1)[0].rstrip("/")


def loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class RemoteDriver:
    """Client of a `lakerank serve` driver endpoint, bound to one Connect session; every call
    carries the server's token."""

    def __init__(self, url: str, user_id: str, session_id: str, token: str = "") -> None:
        self.url, self.user_id, self.session_id, self.token = url.rstrip("/"), user_id, session_id, token

    def call(self, method: str, args=(), kwargs=None) -> Any:
        parsed = urllib.parse.urlparse(self.url)
        if parsed.scheme != "https" and not loopback(parsed.hostname or ""):
            # as Spark Connect's clients do: a token goes in clear to this machine only
            raise DbtRuntimeError(f"lakerank: the serve driver at {self.url} is not on this machine and not https; "
                                  "its token is not sent in clear. Reach it through an SSH tunnel "
                                  "(LAKERANK_DRIVER_URL=http://127.0.0.1:<port>) or a TLS proxy (https://).")
        body = json.dumps({"method": method, "args": encode(list(args)), "kwargs": encode(kwargs or {}),
                           "user_id": self.user_id, "session_id": self.session_id}).encode()
        request = urllib.request.Request(self.url + "/call", data=body, headers={
            "Content-Type": "application/json", "Authorization": f"Bearer {self.token}"})
        try:
            with urllib.request.urlopen(request, timeout=24 * 3600) as response:
                reply = json.loads(response.read())
        except urllib.error.HTTPError as exc:  # refused: the server says why
            try:
                reply = json.loads(exc.read())
            except ValueError:
                reply = {"error": f"lakerank: the serve driver at {self.url} answered HTTP {exc.code}"}
        except urllib.error.URLError as exc:
            raise DbtRuntimeError(f"lakerank: the serve driver at {self.url} does not answer ({exc.reason}); "
                                  "is `lakerank serve` running for this LAKERANK_HOME?") from None
        if "error" in reply:
            raise DbtRuntimeError(reply["error"])
        return decode(reply.get("result"))


# -- client side: the connect target's Spark Connect session and driver endpoint -------------


def connect_endpoint(home: str) -> Dict[str, str]:
    """``{"url", "driver", "token"}`` of the connect target: ``LAKERANK_CONNECT_URL`` (with
    ``LAKERANK_DRIVER_URL``, the serve driver endpoint beside it, if any; the token of its
    ``token=`` or ``SPARK_CONNECT_AUTHENTICATE_TOKEN``), else the server `lakerank serve`
    recorded for ``home``."""
    url = os.environ.get("LAKERANK_CONNECT_URL", "")
    if url:
        from pyspark.sql.connect.client import DefaultChannelBuilder

        return {"url": url, "driver": os.environ.get("LAKERANK_DRIVER_URL", ""),
                "token": DefaultChannelBuilder(url).token or ""}
    try:
        state = read_state(home)
    except PermissionError:
        raise DbtRuntimeError(
            f"target connect: the server of LAKERANK_HOME={home} belongs to another user: its serve.json, "
            "which holds the server's token, is readable by its owner only. Build as that user.") from None
    if state is None:
        raise DbtRuntimeError(
            f"target connect: no Spark Connect server for LAKERANK_HOME={home}. Start one with "
            "`lakerank serve --background` (same LAKERANK_HOME) or set LAKERANK_CONNECT_URL to a cluster's.")
    return {"url": state["url"], "driver": state.get("driver", ""), "token": state.get("token", "")}


_CONNECT: Dict[str, Any] = {}
_CONNECT_LOCK = threading.RLock()  # dbt's threads open their connections at once


def connect_session(home: str):
    """This process's Spark Connect session and endpoint for ``home`` (resolved once per home
    and ``LAKERANK_CONNECT_URL``: every driver-side call asks for them)."""
    key = home + "|" + os.environ.get("LAKERANK_CONNECT_URL", "")
    with _CONNECT_LOCK:
        if key not in _CONNECT:
            from pyspark.sql.connect.client import ChannelBuilder, DefaultChannelBuilder
            from pyspark.sql.connect.session import SparkSession as ConnectSession

            endpoint = connect_endpoint(home)
            channel = DefaultChannelBuilder(endpoint["url"])
            if endpoint["token"]:
                channel.set(ChannelBuilder.PARAM_TOKEN, endpoint["token"])
            _CONNECT[key] = (ConnectSession.builder.channelBuilder(channel).create(), endpoint)
        return _CONNECT[key]


def close_connect_sessions() -> None:
    """Close this process's Connect sessions (before their server stops: a client left open
    retries the dead server when the process exits)."""
    with _CONNECT_LOCK:
        while _CONNECT:
            _key, (spark, _endpoint) = _CONNECT.popitem()
            try:
                spark.stop()
            except Exception:  # already gone
                pass


WRITING_COMMANDS = ("build", "run", "seed", "snapshot")


def lock_connect_builds(home: str) -> None:
    """One writer per home through a server: a `dbt build/run/seed/snapshot` on the connect
    target takes ``<home>/connect-build.lock`` for the life of its process (the server holds
    the home's ``build.lock``), so a second one refuses at once; readers (`dbt show`, `dbt
    test`, other Connect clients) take nothing. Only where the home is on this machine."""
    from dbt.flags import get_flags

    if getattr(get_flags(), "WHICH", None) not in WRITING_COMMANDS or not os.path.isdir(home):
        return
    hold_lock(home + "#connect", lambda: lock_home(
        home, f"dbt pid {os.getpid()} through lakerank serve",
        "lakerank: another build is already running on LAKERANK_HOME={home} through its server ({holder}). "
        "Refusing to start; nothing was changed. Wait for it to finish.", name="connect-build.lock"))


def apply_connect_conf(spark, params: Dict[str, str]) -> None:
    """The profile's runtime SQL settings on a Connect session (static ones are the server's)."""
    wanted = {k: str(v) for k, v in {**params, **env_spark_conf()}.items() if k.startswith("spark.sql.")}
    current = dict(spark.sql("set").collect())
    for key, value in wanted.items():
        if current.get(key) != value and spark.conf.isModifiable(key):
            spark.conf.set(key, value)


def target_driver(creds):
    """The serve driver endpoint of a connect target (None on embedded targets), bound to
    this process's Connect session so driver-side calls see its temporary views."""
    if getattr(creds, "engine", "embedded") != "connect":
        return None
    home = resolve_home(creds.lakerank_home)
    spark, endpoint = connect_session(home)
    if not endpoint["driver"]:
        raise DbtRuntimeError(
            f"target connect: the Spark Connect endpoint {shown(endpoint['url'])} has no lakerank driver beside it "
            "(LAKERANK_DRIVER_URL). SQL table and view models run over plain Spark Connect; lakerank's "
            "incremental materializations and Python models need `lakerank serve` on the driver host "
            "(docs/design.md, 'Targets').")
    return RemoteDriver(endpoint["driver"], spark.client._user_id or "", spark.session_id, endpoint["token"])


def driver_side(fn: Callable) -> Callable:
    """Run an adapter method on the driver: here (embedded targets, or inside the server), or
    through the serve driver endpoint on the connect target."""

    @functools.wraps(fn)
    def call(self, *args, **kwargs):
        remote = self._remote_driver()
        if remote is None:
            return fn(self, *args, **kwargs)
        return remote.call(fn.__name__, args, kwargs)

    return call
