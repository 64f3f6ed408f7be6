"""The shared target's writers (docs/deployment.md, "Several writers"): the build lease each
dbt invocation takes on the shared catalog, and the fenced record of a commit. The lease and
the conditional alter are :mod:`python_udfs.commit.lease`'s; this is their dbt side.

- :func:`take_lease` (an embedded connection's open, on the shared target): once per
  invocation of a command that writes (not ``dbt show``, ``compile``, ``test``, ...), the
  lease is taken, waiting up to ``LAKERANK_LEASE_WAIT`` seconds (default 600) for another
  builder; its time to live is ``LAKERANK_LEASE_TTL`` (default 60 s). When another writer
  held it since this process last did, the session's cached tables (relations, file
  listings, cached data) are dropped first. :func:`give_back` (the invocation's end)
  releases it.
- :func:`observe` notes the ``lakerank.commit_id`` of a table the first time the invocation
  reads it; :func:`record` sets a commit's properties only while the table still has that
  value, so a build whose lease was lost, or that raced, records nothing over another's.
"""

from __future__ import annotations

import os
import threading
from typing import Dict, Optional, Tuple

from dbt_common.exceptions import DbtRuntimeError
from dbt_common.invocation import get_invocation_id

from dbt.adapters.lakerank.home import LakerankBusyError
from python_udfs.commit import lease

COMMIT = "lakerank.commit_id"
_OBSERVED: Dict[Tuple[str, str], Optional[str]] = {}
_LOCK = threading.Lock()
_TAKING = threading.Lock()  # the invocation's threads open connections at once: one takes the lease
_TAKEN: Dict[str, str] = {}  # "invocation": the invocation that holds the lease


def _say(message: str) -> None:
    from dbt.adapters.events.logging import AdapterLogger

    AdapterLogger("lakerank").info(message)


# dbt commands that write nothing to the catalog: they take no lease.
READ_ONLY = ("show", "compile", "docs", "test", "debug", "parse", "ls", "list", "source")


def take_lease(spark) -> None:
    """This invocation's lease on the shared catalog (once; the other threads wait for it), or
    :class:`DbtRuntimeError` saying who holds it. Read-only commands take none."""
    from dbt.flags import get_flags

    if getattr(get_flags(), "WHICH", None) in READ_ONLY:
        return
    with _TAKING:
        invocation = get_invocation_id()
        if _TAKEN.get("invocation") == invocation and lease.held() is not None:
            return
        try:
            others = lease.acquire(spark, float(os.environ.get("LAKERANK_LEASE_WAIT", "600")),
                                   float(os.environ.get("LAKERANK_LEASE_TTL", "60")), _say)
        except lease.LeaseBusyError as exc:
            raise LakerankBusyError(str(exc)) from None
        if others:  # tables this process read may have moved: read them afresh
            spark._jsparkSession.sessionState().catalog().invalidateAllCachedTables()
            spark.catalog.clearCache()
        _TAKEN["invocation"] = invocation


def give_back() -> None:
    """Release this process's lease, if it holds one (the invocation is over)."""
    with _TAKING:
        _TAKEN.pop("invocation", None)
        lease.release()

def _key(schema: str, name: str) -> Tuple[str, str]:
    return get_invocation_id(), f"{schema}.{name}".lower()


def observe(schema: str, name: str, properties: Dict[str, str]) -> None:
    """Note ``schema.name``'s recorded commit as this invocation first reads it."""
    if lease.held() is None:
        return
    key = _key(schema, name)
    with _LOCK:
        for old in [k for k in _OBSERVED if k[0] != key[0]]:
            del _OBSERVED[old]
        _OBSERVED.setdefault(key, properties.get(COMMIT))


def fenced() -> bool:
    """Whether this process records commits through :func:`record` (it holds a lease)."""
    return lease.held() is not None


def writer() -> Dict[str, object]:
    """What a commit's Jinja needs of this writer, carried in its open record (no call of its
    own): the suffix of its stage directories and whether its record is fenced."""
    return {"suffix": lease.stage_suffix(), "fenced": fenced()}


def record(spark, relation, properties: Dict[str, str]) -> None:
    """Set a commit's ``properties`` on ``relation`` in one conditional metastore call: only
    while its ``lakerank.commit_id`` is the one this invocation first read (none read: only
    while the lease is still this build's)."""
    schema, name = relation.schema, relation.identifier
    key = _key(schema, name)
    try:
        lease.confirm(spark)
        lease.alter_if(spark, schema, name, properties, COMMIT, _OBSERVED.get(key))
    except lease.LeaseLostError as exc:
        raise DbtRuntimeError(f"{exc}: {relation}'s commit is not recorded, so not applied") from None
    except lease.FencedError as exc:
        raise DbtRuntimeError(
            f"lakerank: {relation}: this build's commit is not recorded: {exc}. Another writer recorded a commit "
            "on this table since this build read it; this build's commit is not applied (rerun the build: it "
            "starts from the other writer's).") from None
    if COMMIT in properties:
        with _LOCK:
            _OBSERVED[key] = str(properties[COMMIT])
    spark.catalog.refreshTable(f"`{schema}`.`{name}`")
