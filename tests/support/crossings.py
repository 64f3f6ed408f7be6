"""Count the Jinja-to-Python crossings: every ``adapter.lakerank_*`` attribute a template takes
from dbt's adapter wrapper (the Jinja side's only way in; the adapter's calls among its own
methods do not count), by the node that was running (dbt's log context)."""

from __future__ import annotations

import collections
import contextlib
from typing import Iterator


@contextlib.contextmanager
def counting_crossings() -> Iterator[collections.Counter]:
    """Within the block, ``counts[(node name, method)]`` grows with each crossing."""
    from dbt.context.providers import RuntimeDatabaseWrapper
    from dbt_common.events.contextvars import get_node_info

    counts: collections.Counter = collections.Counter()
    original = RuntimeDatabaseWrapper.__getattr__

    def getattr_counting(self, name):
        if name.startswith("lakerank_"):
            counts[(get_node_info().get("node_name", "(no node)"), name)] += 1
        return original(self, name)

    RuntimeDatabaseWrapper.__getattr__ = getattr_counting
    try:
        yield counts
    finally:
        RuntimeDatabaseWrapper.__getattr__ = original


def by_node(counts: collections.Counter) -> dict:
    """``{node: Counter(method: calls)}``."""
    out: dict = collections.defaultdict(collections.Counter)
    for (node, method), n in counts.items():
        out[node][method] += n
    return dict(out)
