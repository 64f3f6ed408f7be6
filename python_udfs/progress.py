"""Progress lines of long stages: a build working through a large landing backlog
says how far it got instead of staying silent for minutes. One line at dbt's info level per
step worth telling (an ingest commit), at most one every ``LAKERANK_PROGRESS_SECONDS``
(default 5) per stage, so a backlog of thousands of small commits does not flood the log; the
stage's own closing message (the model's result) gives the totals."""

from __future__ import annotations

import os
import time
from typing import Dict

_LAST: Dict[str, float] = {}


def report(stage: str, message: str) -> bool:
    """Log ``<stage>: <message>`` unless the stage logged less than the interval ago. Returns
    whether it logged."""
    now = time.monotonic()
    interval = float(os.environ.get("LAKERANK_PROGRESS_SECONDS", "5"))
    if stage in _LAST and now - _LAST[stage] < interval:
        return False
    _LAST[stage] = now
    try:
        from dbt.adapters.events.logging import AdapterLogger
    except ImportError:  # outside dbt (scripts, the serve driver without dbt's logging)
        print(f"{stage}: {message}", flush=True)
        return True
    AdapterLogger("lakerank").info(f"{stage}: {message}")
    return True
