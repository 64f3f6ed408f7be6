"""Several writers on one shared catalog (docs/deployment.md, "Several writers"): the build
lease, the fence of a commit's record, and which writer a stage or an intent belongs to.

- **The lease** is the table property ``lakerank.lease`` of ``lakerank_lease.builds``, a
  small table of the shared catalog. Its value names the holder (a writer id, its host and
  pid), an epoch, a heartbeat count and the holder's time to live; no writer when nobody
  holds it (a released lease keeps its epoch). It is taken, renewed and released by
  compare-and-set: Hive's conditional
  ``alter_table`` (HIVE-26882: an ``EnvironmentContext`` with ``expected_parameter_key`` /
  ``expected_parameter_value``; the metastore refuses the change unless the property still
  has the expected value). A background thread renews it every quarter of its time to live.
  A waiting builder takes it over when its value has not changed for the holder's time to
  live on the waiter's own clock (no clock is compared across hosts): the holder is gone.
- **The fence**: :func:`alter_if` sets table properties only while a property has the value
  the writer read before its commit, so a writer that lost its lease (or raced) cannot
  record a commit over another's.
- **Writers**: while a lease is held, stage directories end in ``-<writer id>`` and intents
  carry ``writer``; :func:`live_other` says whether one belongs to the lease's current
  holder when that is another writer, which sweep and recovery then leave alone.

The embedded target takes no lease: nothing here runs there (:func:`held` is None).
"""

from __future__ import annotations

import atexit
import json
import os
import re
import socket
import threading
import time
import uuid
from dataclasses import asdict, dataclass
from typing import Callable, Optional

from python_udfs.jvm import jvm_class

LEASE_DB, LEASE_TABLE, KEY, FREE = "lakerank_lease", "builds", "lakerank.lease", "free"
WRITER = f"w{uuid.uuid4().hex[:8]}"  # this process, as a writer
_WRITER_SUFFIX = re.compile(r"-(w[0-9a-f]{8})$")


class FencedError(RuntimeError):
    """The metastore refused a conditional change: the property no longer has the value the
    writer expected (another writer changed it)."""


class LeaseBusyError(RuntimeError):
    """Another writer holds the lease and did not let it go in time."""


class LeaseLostError(RuntimeError):
    """This writer's lease was taken over: it may not commit."""


@dataclass
class Lease:
    writer: str
    holder: str
    epoch: int
    beat: int
    ttl: float

    def value(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)


def _lease_of(value: Optional[str]) -> Optional[Lease]:
    try:
        return Lease(**json.loads(value)) if value and value != FREE else None
    except (TypeError, ValueError):
        return None


def parse(value: Optional[str]) -> Optional[Lease]:
    """The lease a property value names (None: free, released, or not a lease)."""
    lease = _lease_of(value)
    return lease if lease is not None and lease.writer else None


def _released(lease: Lease) -> str:
    """The value of a lease given back: no writer, its epoch kept (the next holder's is higher)."""
    return Lease("", "", lease.epoch, 0, 0).value()


# -- the metastore client and the conditional alter ----------------------------------------

_CLIENT_LOCK = threading.RLock()  # a HiveMetaStoreClient is not thread-safe: one call at a time
_CLIENTS: dict = {}


def _client(spark):
    uri = spark.conf.get("spark.hadoop.hive.metastore.uris")
    key = (id(spark.sparkContext._gateway), uri)
    if key not in _CLIENTS:
        conf = jvm_class(spark, "org.apache.hadoop.hive.conf.HiveConf")()
        conf.set("hive.metastore.uris", uri)
        _CLIENTS[key] = jvm_class(spark, "org.apache.hadoop.hive.metastore.HiveMetaStoreClient")(conf)
    return _CLIENTS[key]


def get_property(spark, db: str, name: str, key: str) -> Optional[str]:
    with _CLIENT_LOCK:
        value = _client(spark).getTable(db, name).getParameters().get(key)
    return None if value is None else str(value)


def alter_if(spark, db: str, name: str, properties: dict, key: str, expected: Optional[str]) -> None:
    """Set ``properties`` on ``db.name`` in one metastore call, refused (:class:`FencedError`)
    unless its property ``key`` is ``expected`` (None: unconditional)."""
    from py4j.protocol import Py4JJavaError

    with _CLIENT_LOCK:
        client = _client(spark)
        table = client.getTable(db, name)
        for k, v in properties.items():
            table.getParameters().put(k, str(v))
        context = jvm_class(spark, "org.apache.hadoop.hive.metastore.api.EnvironmentContext")()
        if expected is not None:
            context.putToProperties("expected_parameter_key", key)
            context.putToProperties("expected_parameter_value", str(expected))
        try:
            client.alter_table_with_environmentContext(db, name, table, context)
        except Py4JJavaError as exc:
            message = str(exc.java_exception.getMessage() or "")
            if "has been modified" in message:
                raise FencedError(message) from None
            raise


# -- the lease -------------------------------------------------------------------------------

class _State:
    lease: Optional[Lease] = None
    last_epoch: int = -1  # the epoch of the lease this process held last
    lost: str = ""
    spark = None
    stop: Optional[threading.Event] = None


_STATE = _State()
_RENEWAL = threading.Lock()


def held() -> Optional[Lease]:
    """The lease this process holds (None: none, e.g. the embedded target)."""
    return _STATE.lease


def ensure_lease_table(spark) -> None:
    """Create ``lakerank_lease.builds`` (free) when the catalog has none; a builder that
    creates it at the same time as another finds the other's."""
    from pyspark.errors import AnalysisException

    spark.sql(f"create database if not exists {LEASE_DB}")
    try:
        spark.sql(f"create table if not exists {LEASE_DB}.{LEASE_TABLE} (note string) using parquet "
                  f"tblproperties ('{KEY}' = '{FREE}')")
    except AnalysisException:
        if not spark.catalog.tableExists(f"{LEASE_DB}.{LEASE_TABLE}"):
            raise


def describe(lease: Lease) -> str:
    return f"writer {lease.writer} ({lease.holder}, epoch {lease.epoch})"


def acquire(spark, wait: float, ttl: float, say: Callable[[str], None]) -> bool:
    """Take the lease for this process, waiting up to ``wait`` seconds for its holder to
    release it or to be gone (its value unchanged for its time to live); ``say`` tells once
    that it waits, and whom it took over from. :class:`LeaseBusyError` after ``wait``.
    Returns whether another writer held it since this process last did (then what this
    process remembers of the catalog's tables is stale)."""
    if _STATE.lease is not None and not _STATE.lost:
        return False
    ensure_lease_table(spark)
    started = seen_at = time.monotonic()
    seen, told = None, False
    while True:
        value = get_property(spark, LEASE_DB, LEASE_TABLE, KEY) or FREE
        now = time.monotonic()
        if value != seen:
            seen, seen_at = value, now
        other, last = parse(value), _lease_of(value)
        gone = other is not None and now - seen_at >= other.ttl
        if other is None or other.writer == WRITER or gone:
            mine = Lease(WRITER, f"{socket.gethostname()} pid {os.getpid()}", (last.epoch if last else 0) + 1, 0, ttl)
            try:
                alter_if(spark, LEASE_DB, LEASE_TABLE, {KEY: mine.value()}, KEY, value)
            except FencedError:
                continue  # another writer moved first: look again
            if gone:
                say(f"lakerank: took over the shared catalog's build lease from {describe(other)}: its holder "
                    f"stopped renewing it {other.ttl:.0f} s ago")
            others = last is None or last.epoch != _STATE.last_epoch
            _hold(spark, mine)
            return others
        if now - started >= wait:
            raise LeaseBusyError(
                f"lakerank: another build holds the shared catalog's build lease: {describe(other)}. Refusing to "
                f"start after waiting {wait:.0f} s; nothing was changed. Wait for it to finish, or set "
                "LAKERANK_LEASE_WAIT to wait longer.")
        if not told:
            say(f"lakerank: waiting for the shared catalog's build lease, held by {describe(other)}")
            told = True
        time.sleep(min(1.0, max(0.1, other.ttl / 8)))


def _hold(spark, lease: Lease) -> None:
    if _STATE.spark is None:  # registered after the JVM's start: runs before pyspark stops it
        atexit.register(_release_at_exit)
    _STATE.lease, _STATE.lost, _STATE.spark, _STATE.last_epoch = lease, "", spark, lease.epoch
    _STATE.stop = threading.Event()
    threading.Thread(target=_heartbeat, args=(_STATE.stop,), name="lakerank-lease", daemon=True).start()


def _heartbeat(stop: threading.Event) -> None:
    """Renew the held lease every quarter of its time to live; a refused renewal (another
    writer took it over) or none for a whole time to live marks it lost. A renewal and the
    release never overlap (``_RENEWAL``): a release never expects a value a renewal replaced."""
    renewed = time.monotonic()
    while not stop.wait(_STATE.lease.ttl / 4 if _STATE.lease else 1):
        with _RENEWAL:
            lease = _STATE.lease
            if lease is None or stop.is_set():
                return
            nxt = Lease(lease.writer, lease.holder, lease.epoch, lease.beat + 1, lease.ttl)
            try:
                alter_if(_STATE.spark, LEASE_DB, LEASE_TABLE, {KEY: nxt.value()}, KEY, lease.value())
                _STATE.lease, renewed = nxt, time.monotonic()
            except FencedError:
                _lose(_taken_by(parse(get_property(_STATE.spark, LEASE_DB, LEASE_TABLE, KEY))))
                return
            except Exception:  # the metastore unreachable: try again, until the time to live is over
                if time.monotonic() - renewed >= lease.ttl:
                    _lose(f"not renewed for {lease.ttl:.0f} s (the metastore did not answer)")
                    return


def _taken_by(current: Optional[Lease]) -> str:
    return f"taken over by {describe(current)}" if current else "another writer took it over and released it"


def _lose(why: str) -> None:
    _STATE.lost = f"lakerank: this build lost the shared catalog's build lease ({why}); it commits nothing more"


def check() -> None:
    """Raise :class:`LeaseLostError` when this process's lease was lost (nothing when it holds
    none: the embedded target)."""
    if _STATE.lost:
        raise LeaseLostError(_STATE.lost)


def confirm(spark) -> None:
    """Raise :class:`LeaseLostError` unless the catalog still names this process's lease (its
    writer and epoch): one metastore read before a swap or a recovery, which are not
    conditional calls themselves. Nothing when this process holds no lease."""
    mine = _STATE.lease
    if mine is None:
        return
    check()
    current = parse(get_property(spark, LEASE_DB, LEASE_TABLE, KEY))
    if current is None or (current.writer, current.epoch) != (mine.writer, mine.epoch):
        _lose(_taken_by(current))
        raise LeaseLostError(_STATE.lost)


def release() -> None:
    """Give the lease back (no writer, the epoch kept), if this process holds it; its
    heartbeat stops."""
    with _RENEWAL:
        lease, spark = _STATE.lease, _STATE.spark
        if _STATE.stop is not None:
            _STATE.stop.set()
        _STATE.lease, _STATE.stop = None, None
    if lease is None or _STATE.lost:
        _STATE.lost = ""
        return
    try:
        alter_if(spark, LEASE_DB, LEASE_TABLE, {KEY: _released(lease)}, KEY, lease.value())
    except FencedError:
        pass  # taken over meanwhile: not ours to free


# -- writers ---------------------------------------------------------------------------------

def _release_at_exit() -> None:
    """A process that ends holding the lease gives it back (else it is free after its time
    to live); at exit the metastore may be out of reach: then nothing."""
    try:
        release()
    except Exception:  # noqa: BLE001 - exiting either way
        pass


def stage_suffix() -> str:
    """What a stage directory's name ends with while a lease is held: ``-<writer id>``."""
    return f"-{WRITER}" if _STATE.lease is not None else ""


def writer_of(name: str) -> Optional[str]:
    """The writer id a stage directory's name ends with (None: none)."""
    found = _WRITER_SUFFIX.search(name)
    return found.group(1) if found else None


def live_other(spark) -> Callable[[Optional[str]], bool]:
    """A test of writer ids: true for the lease's current holder when that is another writer
    (alive: sweep and recovery leave what it staged). Without a lease held: never true."""
    if _STATE.lease is None:
        return lambda writer: False
    current = parse(get_property(spark, LEASE_DB, LEASE_TABLE, KEY))
    live = current.writer if current is not None and current.writer != WRITER else None
    return lambda writer: writer is not None and writer == live
