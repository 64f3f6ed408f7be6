"""The lakerank adapter: dbt-spark with in-process Python models."""

from __future__ import annotations

from typing import Any, Dict, Type

from dbt.adapters.base import available
from dbt.adapters.base.impl import PythonJobHelper
from dbt.adapters.contracts.connection import AdapterResponse
from dbt.adapters.spark.impl import SparkAdapter
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.lakerank.connections import LakerankConnectionManager, resolve_home
from dbt.adapters.lakerank.python_job import SessionPythonJobHelper


class LakerankAdapter(SparkAdapter):
    ConnectionManager = LakerankConnectionManager  # type: ignore[assignment]

    @property
    def default_python_submission_method(self) -> str:
        return "session"

    @property
    def python_submission_helpers(self) -> Dict[str, Type[PythonJobHelper]]:
        return {**super().python_submission_helpers, "session": SessionPythonJobHelper}

    def generate_python_submission_response(self, submission_result: Any) -> AdapterResponse:
        message = str(submission_result) if submission_result is not None else "OK"
        return AdapterResponse(_message=message)

    @available
    def lakerank_home(self) -> str:
        """Absolute ``LAKERANK_HOME`` of the embedded target (landing, checkpoints)."""
        creds = self.config.credentials
        return resolve_home(getattr(creds, "lakerank_home", None))

    # -- per-invocation memo shared by a model's SQL and its materialization ---------------
    _memo: Dict[str, Any] = {}

    @available
    def lakerank_memo_set(self, key: str, value: Any) -> str:
        """Remember ``value`` under ``key`` for this process (returns '' for use in Jinja)."""
        LakerankAdapter._memo[key] = value
        return ""

    @available
    def lakerank_memo_get(self, key: str, default: Any = None) -> Any:
        return LakerankAdapter._memo.get(key, default)

    # -- storage helpers (embedded/cluster session only; no-ops over thrift) -------------
    def _session(self):
        creds = self.config.credentials
        if str(creds.method) != "session":
            return None
        from pyspark.sql import SparkSession

        return SparkSession.builder.getOrCreate()

    @available
    def lakerank_partition_locations(self, relation) -> Dict[str, str]:
        """``{"col=value": location}`` for every partition of ``relation`` (one metastore call)."""
        spark = self._session()
        if spark is None:
            return {}
        jvm = spark._jvm
        catalog = spark._jsparkSession.sharedState().externalCatalog()
        parts = catalog.listPartitions(relation.schema, relation.identifier, jvm.scala.Option.empty())
        out: Dict[str, str] = {}
        it = parts.iterator()
        while it.hasNext():
            part = it.next()
            spec = part.spec()
            keys = spec.keys().iterator()
            items = []
            while keys.hasNext():
                k = keys.next()
                items.append(f"{k}={spec.apply(k)}")
            out["/".join(items)] = str(jvm.org.apache.hadoop.fs.Path(part.location()).toString())
        return out

    @available
    def lakerank_delete_path(self, location: str) -> bool:
        """Delete a superseded data directory through Hadoop's FileSystem API."""
        spark = self._session()
        if spark is None or not location:
            return False
        jvm = spark._jvm
        path = jvm.org.apache.hadoop.fs.Path(location)
        fs = path.getFileSystem(spark._jsc.hadoopConfiguration())
        return bool(fs.delete(path, True))

    @available
    def lakerank_table_location(self, relation) -> str:
        spark = self._session()
        if spark is None:
            return ""
        catalog = spark._jsparkSession.sharedState().externalCatalog()
        table = catalog.getTable(relation.schema, relation.identifier)
        return str(spark._jvm.org.apache.hadoop.fs.Path(table.location()).toString())

    @available
    def lakerank_table_exists(self, relation) -> bool:
        """Ask the metastore directly (dbt's relation cache misses tables written by macros)."""
        spark = self._session()
        if spark is None:
            return self.get_relation(relation.database, relation.schema, relation.identifier) is not None
        catalog = spark._jsparkSession.sharedState().externalCatalog()
        return bool(catalog.tableExists(relation.schema, relation.identifier))

    # -- commits: table properties and partition swaps through the metastore --------------
    @available
    def lakerank_get_property(self, relation, key: str, default: str = "") -> str:
        """A table property (lakerank keeps commit watermarks there); ``default`` if absent."""
        spark = self._session()
        if spark is None:
            rows = self.execute(f"show tblproperties {relation}", fetch=True)[1]
            for row in rows:
                if row[0] == key:
                    return str(row[1])
            return default
        catalog = spark._jsparkSession.sharedState().externalCatalog()
        if not catalog.tableExists(relation.schema, relation.identifier):
            return default
        props = catalog.getTable(relation.schema, relation.identifier).properties()
        value = props.get(key)
        return str(value.get()) if value.isDefined() else default

    @available
    def lakerank_swap_partitions(self, target, stage, partition_by: str, declared) -> Dict[str, int]:
        """Point ``target``'s declared partitions at ``stage``'s directories.

        Three metastore calls, each one transaction: alter (replace) the partitions that
        exist in both, create the new ones, drop declared ones the stage left empty.
        Superseded directories under ``/_v/`` are deleted; returns how many partitions were
        replaced, created and dropped.
        """
        spark = self._session()
        jvm = spark._jvm
        catalog = spark._jsparkSession.sharedState().externalCatalog()
        none = jvm.scala.Option.empty()
        conv = jvm.scala.jdk.javaapi.CollectionConverters

        def listing(rel):
            parts = {}
            it = catalog.listPartitions(rel.schema, rel.identifier, none).iterator()
            while it.hasNext():
                p = it.next()
                parts[str(p.spec().apply(partition_by))] = p
            return parts

        new_parts, old_parts = listing(stage), listing(target)
        declared = [str(v) for v in declared]
        undeclared = sorted(set(new_parts) - set(declared))
        if undeclared:
            raise DbtRuntimeError(f"{target} wrote undeclared partitions: {undeclared[:5]}")

        def seq(items):
            arr = jvm.java.util.ArrayList()
            for item in items:
                arr.add(item)
            return conv.asScala(arr).toSeq()

        replace = [new_parts[v] for v in declared if v in new_parts and v in old_parts]
        create = [new_parts[v] for v in declared if v in new_parts and v not in old_parts]
        drop = [old_parts[v].spec() for v in declared if v not in new_parts and v in old_parts]
        superseded = [
            str(jvm.org.apache.hadoop.fs.Path(old_parts[v].location()).toString())
            for v in declared if v in old_parts
        ]
        if replace:
            catalog.alterPartitions(target.schema, target.identifier, seq(replace))
        if create:
            catalog.createPartitions(target.schema, target.identifier, seq(create), False)
        if drop:
            catalog.dropPartitions(target.schema, target.identifier, seq(drop), True, False, True)
        spark.catalog.refreshTable(f"{target.schema}.{target.identifier}")
        # Every declared partition now points at a new attempt directory (or is gone), so
        # its old directory is referenced by nothing.
        for loc in superseded:
            if "/_v/" in loc:
                self.lakerank_delete_path(loc)
        return {"replaced": len(replace), "created": len(create), "dropped": len(drop)}
