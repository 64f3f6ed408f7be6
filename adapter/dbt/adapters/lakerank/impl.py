"""The lakerank adapter: dbt-spark with in-process Python models."""

from __future__ import annotations

from typing import Any, Dict, Type

from dbt.adapters.base import available
from dbt.adapters.base.impl import PythonJobHelper
from dbt.adapters.contracts.connection import AdapterResponse
from dbt.adapters.spark.impl import SparkAdapter

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
