"""The pk_table materialization's Python side (lakerank_lib/macros/materializations/pk_table/):
its options, its merge, and its commit in three crossings, each carrying a record: ``open``
(driver check, the four tables' state, the window, recovery), ``commit`` (stage the buckets
and the logs, plan, write the snapshot row, swap) and ``finish`` (what the commit superseded,
what it wrote for the model's data tests, the commit's temporary views). The record between
``commit`` and ``finish`` is a SQL statement of the materialization."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

from dbt.adapters.base import available
from dbt.adapters.base.meta import AdapterMeta
from dbt_common.exceptions import CompilationError, DbtRuntimeError

from dbt.adapters.lakerank import fence
from dbt.adapters.lakerank.python_job import ship_python_udfs
from dbt.adapters.lakerank.records import record_of
from dbt.adapters.lakerank.remote import driver_side


class PkTableMixin(metaclass=AdapterMeta):
    @available
    def lakerank_pk_spec(self, model_name: str, options, columns, primary_key, partition_by):
        """Validate a pk_table's Paimon ``options``; the normalised spec (with
        ``sql_mergeable``: whether the commit's merge can run as plain Spark SQL), or a
        compile error naming the offending key."""
        from python_udfs.commit.pk_commit import sql_mergeable
        from python_udfs.paimon.errors import PaimonOptionError
        from python_udfs.paimon.validation import validate_options

        try:
            spec = validate_options(
                {str(k): v for k, v in (options or {}).items()},
                [(c["name"], c["type"]) for c in columns],
                list(primary_key),
                list(partition_by or []),
            )
        except PaimonOptionError as exc:
            raise CompilationError(f"pk_table {model_name}: option '{exc.key}': {exc}") from exc
        plain = spec.as_dict()  # the plain form the pk_table macros read and pk_commit ships as JSON
        plain["sql_mergeable"] = sql_mergeable(dict(plain))
        return plain

    @available
    @driver_side
    def lakerank_pk_merge(self, input_view: str, stored_view: str, spec, columns, out_view: str) -> str:
        """Register ``out_view`` with the commit's per-key merge (python_udfs.commit.pk_commit)."""
        import python_udfs
        from python_udfs.commit.pk_commit import merge_commit

        spark = self._session()
        ship_python_udfs(spark, os.path.dirname(os.path.dirname(os.path.abspath(python_udfs.__file__))))
        merge_commit(spark, input_view, stored_view, dict(spec), list(columns), out_view)
        return ""

    @available
    def lakerank_pk_open(self, target, audit, state, snapshots, source=None, full_refresh: bool = False
                         ) -> Dict[str, Any]:
        """Phase one: the driver check, the four tables' existence, locations and properties
        (one metastore call), the model's commit window (None without a commit source) and,
        for an existing table, the commit protocol's recovery to its last recorded snapshot
        and its stored columns. ``{'info', 'window', 'snapshot_id', 'recovered',
        'stored_columns'}``."""
        self.lakerank_require_driver("pk_table")
        info = self.lakerank_tables_info([target, audit, state, snapshots])
        window = self.lakerank_commit_window(target, source, full_refresh)
        out = {"info": info, "window": window, "snapshot_id": 0, "recovered": "", "stored_columns": [],
               "writer": fence.writer()}
        if info[target.identifier]["exists"]:
            out["snapshot_id"] = int(info[target.identifier]["properties"].get("lakerank.snapshot_id", "0"))
            logs = [[rel, col] for rel, col in ((audit, "_commit_id"), (state, "_commit_id"),
                                                (snapshots, "snapshot_id")) if info[rel.identifier]["exists"]]
            out["recovered"] = self.lakerank_commit_begin(target, out["snapshot_id"], logs,
                                                          info[target.identifier]["location"])["done"]
            out["stored_columns"] = self.lakerank_query_schema(f"{target.schema}.{target.identifier}")
        return out

    @available
    def lakerank_pk_commit(self, target, commit: Dict[str, Any]) -> Dict[str, Any]:
        """Phase two, up to the commit's swap: compute the merged view once
        (``commit['merged']``, a temporary view, as its rows), stage the rewritten (partition, bucket)
        directories (``commit['buckets']``: sql, stage, partition_by), write and register the
        log partitions (``commit['logs']``: relation, spec, location, sql), plan the swap and
        write it as the intent, write the snapshot row (``commit['snapshot']``: its SQL with
        ``{rewritten_partitions}``, ``{rewritten_bytes}``, ``{superseded_bytes}`` to fill in
        from the plan), then swap. ``commit['fault']``: the model's test fault (steps
        staged, logged, planned stop or kill the run; ``write:<part>`` a full disk). The plan."""
        fault = str(commit.get("fault") or "")
        write_fault = fault if fault.startswith("write:") else ""
        buckets = commit["buckets"]
        self.lakerank_materialize_view(commit["merged"])
        self.lakerank_write_dirs(buckets["sql"], buckets["stage"], buckets["partition_by"], fault=write_fault)
        self._pk_fault_point(target, fault, "staged")
        for log in commit["logs"]:
            self._pk_log_partition(log, write_fault)
        self._pk_fault_point(target, fault, "logged")
        plan = self.lakerank_commit_intent(target, commit["commit_id"], buckets["stage"],
                                           len(buckets["partition_by"]), commit["touched"])
        written = [item[2] for item in plan["replace"]] + [item[1] for item in plan["create"]]
        superseded = [item[1] for item in plan["replace"]] + [item[1] for item in plan["drop"]]
        snapshot = dict(commit["snapshot"])
        filled = {"rewritten_partitions": len(written), "rewritten_bytes": self.lakerank_path_bytes(written),
                  "superseded_bytes": self.lakerank_path_bytes(superseded)}
        for name, value in filled.items():
            snapshot["sql"] = snapshot["sql"].replace("{" + name + "}", str(value))
        self._pk_log_partition(snapshot, write_fault)
        self._pk_fault_point(target, fault, "planned")
        self.lakerank_commit_swap(target, plan)
        return plan

    def _pk_log_partition(self, log: Dict[str, Any], write_fault: str) -> None:
        """Write a log table's partition as a directory (cast to the table's columns) and
        register it: one write, one metastore call."""
        self.lakerank_write_dirs(log["sql"], log["location"], [], log["relation"], fault=write_fault)
        self.lakerank_commit_swap(log["relation"], {"create": [[log["spec"], log["location"]]]})

    def _pk_fault_point(self, target, fault: str, step: str) -> None:
        """``lakerank_lib.fault_point`` for the steps inside :meth:`lakerank_pk_commit`."""
        if fault == f"kill:{step}":
            self.lakerank_test_kill(f"{target} {step}")
        if fault == step:
            raise DbtRuntimeError(f"lakerank_fault: stopped after step '{step}'")

    @available
    def lakerank_pk_finish(self, target, plan: Optional[Dict[str, Any]], written: Dict[str, Any],
                           views: List[str]) -> str:
        """Phase three, after the record: delete what the commit superseded and its dead
        attempts (``plan``; none when nothing was committed), note what it wrote for the
        model's data tests, drop the commit's temporary views."""
        if plan is not None:
            self.lakerank_commit_finish(target, plan)
        record_of(target).written = {"filter": written.get("filter"), "rows": None, "commit_id": None}
        for view in views:
            self.lakerank_drop_view(view)
        return ""
