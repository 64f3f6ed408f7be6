"""A LAKERANK_HOME: where it is, the locks that keep one writer on it, and the state file
of the server (`lakerank serve`) that holds it.

No Spark here: the embedded session is :mod:`session`, which puts its metastore and
warehouse inside the home this module resolves.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from typing import Callable, Dict, Optional

from dbt_common.exceptions import DbtRuntimeError

# One lock file descriptor per key (a home, or a home's connect-build lock), held for the
# life of the process: a second flock on a new descriptor would conflict with our own lock.
_LOCKS: Dict[str, int] = {}
# dbt's threads open their connections at once; two threads flocking one home on two
# descriptors would refuse each other.
_LOCKS_GUARD = threading.RLock()


class LakerankBusyError(DbtRuntimeError):
    """Another process is building on the same LAKERANK_HOME."""


def project_dir() -> str:
    try:
        from dbt.flags import get_flags

        flags_dir = getattr(get_flags(), "PROJECT_DIR", None)
    except Exception:  # pragma: no cover - flags not set outside a dbt run
        flags_dir = None
    return os.path.abspath(flags_dir or os.getcwd())


def resolve_home(configured: Optional[str] = None) -> str:
    """``LAKERANK_HOME``, else the profile's ``lakerank_home``, else ``<project>/.lakerank``."""
    home = os.environ.get("LAKERANK_HOME") or configured or os.path.join(project_dir(), ".lakerank")
    if not os.path.isabs(home):
        home = os.path.join(project_dir(), home)
    return os.path.abspath(home)


def metastore_path(home: str) -> str:
    """The embedded target's Derby metastore of ``home`` (created by its first session)."""
    return os.path.join(home, "metastore_db")


def lock_home(home: str, holder: str, busy_message: str, name: str = "build.lock") -> int:
    """Take the home's exclusive lock (``name``) and return its descriptor, with
    ``holder`` written into it; refuse with ``busy_message`` (``{home}`` and ``{holder}``
    filled in) when another process holds it.

    ``flock`` is released by the kernel when the process dies (kill -9
    included), so a crashed build never leaves a stale lock behind.
    """
    os.makedirs(home, exist_ok=True)
    fd = os.open(os.path.join(home, name), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        other = os.pread(fd, 200, 0).decode(errors="replace").strip() or "unknown"
        os.close(fd)
        raise LakerankBusyError(busy_message.format(home=home, holder=other)) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{holder} since {time.strftime('%Y-%m-%d %H:%M:%S')}".encode(), 0)
    return fd


def hold_lock(key: str, take: Callable[[], int]) -> None:
    """Keep the descriptor ``take()`` returns under ``key`` for the life of the process, once."""
    with _LOCKS_GUARD:
        if key not in _LOCKS:
            _LOCKS[key] = take()


def acquire_build_lock(home: str, holder: Optional[str] = None) -> None:
    """Take the home's build lock for this process or refuse with a clear message."""
    hold_lock(home, lambda: lock_home(
        home, holder or f"pid {os.getpid()}",
        "lakerank: another build is already running on LAKERANK_HOME={home} ({holder}). "
        "Refusing to start; nothing was changed. Wait for it to finish, or use another LAKERANK_HOME."))


def release_build_lock(home: str) -> None:
    with _LOCKS_GUARD:
        fd = _LOCKS.pop(home, None)
    if fd is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


# -- the server's state file ----------------------------------------------------------------


def state_path(home: str) -> str:
    """Where `lakerank serve` records the server running on ``home``."""
    return os.path.join(home, "serve.json")


def ready_path(home: str) -> str:
    """Where the server process says it is listening, once both of its services are."""
    return os.path.join(home, "serve.ready.json")


def write_state(home: str, state: Dict) -> None:
    """Record the home's server in its state file, readable by its owner only: it holds the
    server's token. The file is created with mode 0600 under a temporary name and renamed
    into place, so it is never readable by others, not even while it is written, and a
    reader never sees half of it."""
    path = state_path(home)
    tmp = f"{path}.{os.getpid()}.tmp"
    if os.path.exists(tmp):
        os.remove(tmp)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(state, fh)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise


def read_state(home: str) -> Optional[Dict]:
    """The running server of ``home`` (None when there is none; a stale file is ignored)."""
    try:
        with open(state_path(home), encoding="utf-8") as fh:
            state = json.load(fh)
    except (FileNotFoundError, ValueError):
        return None
    return state if alive(int(state.get("pid", 0))) else None


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (an exited child its parent has not reaped yet does not)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True
