"""Write-failure injection for lakerank's own tests (pk_table, merge_on_read and the ingest
share it): a write that fails as a full disk would, after leaving a torn parquet file."""

from __future__ import annotations

import os


def inject_full_disk(location: str, part: str, hook: str) -> None:
    """When ``location`` contains ``part`` (non-empty), cut the largest parquet file under the
    local ``location`` to half its size and raise ENOSPC naming ``hook`` (the test hook that
    asked for it). Otherwise nothing."""
    if not part or part not in location:
        return
    root = location[len("file:"):] if location.startswith("file:") else location
    files = [os.path.join(d, f) for d, _s, names in os.walk(root) for f in names if f.endswith(".parquet")]
    if files:
        victim = max(files, key=os.path.getsize)
        with open(victim, "r+b") as fh:
            fh.truncate(os.path.getsize(victim) // 2)
    raise OSError(28, f"No space left on device: writing {location} (injected by {hook})")
