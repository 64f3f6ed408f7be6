"""Commit records: what a model, its materialization and its data tests tell each other in one
dbt invocation, as one typed record per (invocation, relation).

- ``window``: the model's pending commit window, ``(its watermark, its source's head]``, taken
  the first time anyone asks in the invocation (the model's SQL through
  ``lakerank_lib.pending_rows`` / ``commit_window``, or the materialization from the
  model's ``commit_source`` config) and the same for everyone after;
- ``rewrite``: which current rows a ``merge_on_read`` run recomputes (``predicate``) and,
  optionally, those rows as the model already read them (``prior``, ``prior_columns``):
  the model's one declaration, ``lakerank_lib.declare_rewrite``;
- ``written``: what the commit wrote, for the model's data tests in the same invocation
  (``filter``: a predicate over the relation's rows, alias ``t``; or ``rows``: a query of
  exactly those rows; ``commit_id``: the commit, for views over its audit log).

A merge_on_read commit crosses from Jinja to Python once per phase: ``open`` (recovery, the
window, the tables' state: :meth:`lakerank_merge_on_read_open`), ``swap`` (the audit-log
partition, the compaction decision, what was written: :meth:`lakerank_merge_on_read_swap`);
the stage and the record are SQL statements of the materialization.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

from dbt.adapters.base import available
from dbt.adapters.base.meta import AdapterMeta
from dbt_common.exceptions import DbtRuntimeError
from dbt_common.invocation import get_invocation_id

from dbt.adapters.lakerank import fence


@dataclass
class CommitRecord:
    window: Optional[Dict[str, Any]] = None
    rewrite: Optional[Dict[str, Any]] = None
    written: Optional[Dict[str, Any]] = None


_RECORDS: Dict[Tuple[str, str], CommitRecord] = {}
_LOCK = threading.Lock()


def record_of(relation) -> CommitRecord:
    """The record of ``relation`` in this invocation (created empty; the records of earlier
    invocations are dropped: a long-lived process runs many)."""
    key = (get_invocation_id(), f"{relation.schema}.{relation.identifier}".lower())
    with _LOCK:
        for old in [k for k in _RECORDS if k[0] != key[0]]:
            del _RECORDS[old]
        return _RECORDS.setdefault(key, CommitRecord())


def _watermark(info: Dict[str, Any], default: int = -1) -> int:
    return int(info["properties"].get("lakerank.commit_id", default)) if info["exists"] else default


class RecordMixin(metaclass=AdapterMeta):
    @available
    def lakerank_commit_window(self, relation, source=None, full_refresh: bool = False) -> Optional[Dict[str, Any]]:
        """The model's pending window ``{'from', 'to', 'pending'}``: the one its record holds,
        else, given its ``source`` (a relation), taken now and kept: ``(watermark, head]``,
        ``from`` -1 on ``full_refresh`` or before the table exists. None without either."""
        record = record_of(relation)
        if record.window is not None or source is None:
            return record.window
        head = _watermark(self.lakerank_tables_info([source])[source.identifier])
        mark = -1 if full_refresh else _watermark(self.lakerank_tables_info([relation])[relation.identifier])
        record.window = {"from": mark, "to": head, "pending": head > mark}
        return record.window

    @available
    def lakerank_declare_rewrite(self, relation, predicate: str, prior: Optional[str] = None,
                                 prior_columns=None) -> str:
        """A merge_on_read model's rewrite: which current rows it recomputes, and optionally
        those rows as it read them (``lakerank_lib.declare_rewrite``)."""
        record_of(relation).rewrite = {
            "predicate": predicate,
            "prior": None if prior is None else {"query": prior, "columns": prior_columns},
        }
        return ""

    @available
    def lakerank_note_written(self, relation, filter: Optional[str] = None, rows: Optional[str] = None,
                              commit_id: Optional[int] = None) -> str:
        """What this run's commit of ``relation`` wrote, for its data tests."""
        record_of(relation).written = {"filter": filter, "rows": rows, "commit_id": commit_id}
        return ""

    @available
    def lakerank_written(self, relation) -> Optional[Dict[str, Any]]:
        """What this invocation's commit of ``relation`` wrote (None: it did not run)."""
        return record_of(relation).written

    @available
    def lakerank_merge_on_read_open(self, view, base, audit, source=None, full_refresh: bool = False,
                                    nothing: str = "false") -> Dict[str, Any]:
        """Phase one of a merge_on_read run: the driver check, the window, the three tables'
        state (one metastore call), the base's columns; when it commits into an existing
        table, whether a killed run already added this commit's audit partition and, if
        not, the commit protocol's recovery. A run with nothing to commit notes that it
        wrote nothing (``nothing``: a query with no row, for its data tests)."""
        self.lakerank_require_driver("merge_on_read")
        record = record_of(view)
        window = self.lakerank_commit_window(view, source, full_refresh)
        if window is None:
            raise DbtRuntimeError(
                f"merge_on_read model {view} has no commit source: set config commit_source='<model>' or read it "
                "with lakerank_lib.pending_rows(ref('<model>')) in its SQL")
        info = self.lakerank_tables_info([view, base, audit])
        exists = info[view.identifier]["exists"] and not full_refresh
        out = {
            "window": window,
            "rewrite": record.rewrite,
            "exists": exists,  # an incremental commit into the existing view
            "view_exists": info[view.identifier]["exists"],
            "properties": info[view.identifier]["properties"],
            "base": info[base.identifier],
            "audit": info[audit.identifier],
            "root": f"{self.lakerank_schema_location(view.schema)}/{view.identifier}__base",
            "base_columns": [],  # [{'name', 'type'}]
            "committed": False,
            "writer": fence.writer(),  # stage suffix and fencing (lakerank_lib.stage_dir, record_commit)
        }
        if exists and info[base.identifier]["exists"]:
            out["base_columns"] = self.lakerank_query_schema(f"{base.schema}.{base.identifier}")
        if not exists:
            record.written = {"filter": "true", "rows": None, "commit_id": None}
        elif not window["pending"]:
            record.written = {"filter": "false", "rows": nothing, "commit_id": None}
        else:
            out["committed"] = self.lakerank_partition_exists(audit, "_commit_id", window["to"])
            if not out["committed"]:
                self.lakerank_commit_begin(audit, window["from"], (), out["audit"]["location"])
        return out

    @available
    def lakerank_merge_on_read_swap(self, view, commit_id: int, location: str, fault: str, base_commit: int,
                                    compaction: Dict[str, Any], written_rows: str) -> Dict[str, Any]:
        """Phase two: add the diff staged at ``location`` as audit partition
        ``_commit_id = commit_id`` (the commit point; '' when a killed run added it), note
        what it wrote, and say whether the changes since the base (``base_commit``) are due
        for compaction: ``compaction['commits']`` of them, or more than
        ``compaction['ratio']`` of the base's bytes once past ``compaction['min_bytes']``.
        ``{'kib': the diff's size, 'compact': bool}``."""
        audit, base = side_table(view, "audit_log"), side_table(view, "base")
        if location:
            self.lakerank_write_fault(location, fault)
            partition = [[f"_commit_id={commit_id}", location]]
            self.lakerank_commit_swap(audit, {"commit_id": commit_id, "create": partition})
        record_of(view).written = {"filter": None, "rows": written_rows, "commit_id": commit_id}
        deltas = self._changes_since(view, base_commit)
        out = {"kib": self.lakerank_path_bytes([location]) / 1024 if location else 0.0,
               "compact": len(deltas) >= int(compaction["commits"])}
        if not out["compact"]:
            delta_bytes = self.lakerank_path_bytes(deltas)
            out["compact"] = delta_bytes >= int(compaction["min_bytes"]) and delta_bytes > float(
                compaction["ratio"]) * self.lakerank_path_bytes([self.lakerank_table_location(base)])
        return out

    def _changes_since(self, view, base_commit) -> list:
        """The locations of ``view``'s audit-log partitions after commit ``base_commit``: the
        changes its view applies over its base."""
        return [loc for spec, loc in self.lakerank_partition_locations(side_table(view, "audit_log")).items()
                if int(spec.split("=")[1]) > int(base_commit)]

    @available
    def lakerank_merge_on_read_state(self, view, push_min_bytes: int = 0) -> Dict[str, Any]:
        """What a reader of merge_on_read ``view`` needs to push a filter below its joins:
        ``{'base_commit', 'primary_key'}`` (None when ``view`` is not a merge_on_read view),
        ``change_bytes`` (the audit log's partitions after the base) and, when those reach
        ``push_min_bytes``, ``base_columns``."""
        props = self.lakerank_tables_info([view])[view.identifier]["properties"]
        base_commit, primary_key = props.get("lakerank.base_commit"), props.get("lakerank.primary_key")
        if base_commit is None or not primary_key:
            return {"base_commit": None, "primary_key": None, "change_bytes": 0, "base_columns": []}
        base = side_table(view, "base")
        change_bytes = self.lakerank_path_bytes(self._changes_since(view, base_commit))
        return {"base_commit": int(base_commit), "primary_key": primary_key.split(","), "change_bytes": change_bytes,
                "base_columns": [c["name"] for c in self.lakerank_query_schema(f"{base.schema}.{base.identifier}")]
                if change_bytes >= push_min_bytes else []}


def side_table(view, suffix: str):
    """Side table ``<model>__<suffix>`` of a merge_on_read view (``lakerank_lib._side_table``)."""
    return view.incorporate(path={"identifier": f"{view.identifier}__{suffix}"}, type="table")
