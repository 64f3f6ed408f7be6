"""dbt's connections for lakerank: dbt-spark's ``session`` method, opened on the process's
embedded SparkSession (:mod:`session`, on the LAKERANK_HOME :mod:`home` resolves) or, for
``engine: connect``, on a Spark Connect session (:mod:`remote`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from dbt.adapters.contracts.connection import Connection
from dbt.adapters.spark.connections import (
    SparkConnectionManager,
    SparkConnectionMethod,
    SparkCredentials,
)
from dbt.adapters.spark.session import Connection as SessionConnection
from dbt.adapters.spark.session import Cursor
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.lakerank.fence import take_lease
from dbt.adapters.lakerank.home import resolve_home
from dbt.adapters.lakerank.literals import BindingWrapper
from dbt.adapters.lakerank.remote import apply_connect_conf, connect_session, lock_connect_builds
from dbt.adapters.lakerank.rewrites import run_dml
from dbt.adapters.lakerank.session import (
    apply_once,
    current_thread_session,
    env_spark_conf,
    is_shared,
    process_session,
    use_home,
)


@dataclass
class LakerankCredentials(SparkCredentials):
    lakerank_home: Optional[str] = None
    # "embedded" (a driver in the dbt process) or "connect" (Spark Connect, `lakerank serve`)
    engine: str = "embedded"

    @property
    def type(self) -> str:
        return "lakerank"

    def _connection_keys(self):  # type: ignore[override]
        return tuple(super()._connection_keys()) + ("lakerank_home", "engine")


class LakerankConnectionManager(SparkConnectionManager):
    TYPE = "lakerank"

    @classmethod
    def open(cls, connection: Connection) -> Connection:
        creds = connection.credentials
        if creds.method != SparkConnectionMethod.SESSION or connection.state == "open":
            return super().open(connection)
        if creds.engine == "connect":
            home = resolve_home(creds.lakerank_home)
            spark, _endpoint = connect_session(home)
            params = dict(creds.server_side_parameters)
            apply_once(f"connect:{spark.session_id}", {**params, **env_spark_conf()},
                       lambda: apply_connect_conf(spark, params))
            lock_connect_builds(home)
            connection = super().open(connection)
            connection.handle = BindingWrapper(_SessionConnection(spark))
            return connection
        params = dict(creds.server_side_parameters)
        use_home(resolve_home(creds.lakerank_home), params)
        if is_shared({**params, **env_spark_conf()}):
            take_lease(process_session())  # the shared catalog's writers, one at a time
        connection = super().open(connection)
        connection.handle = BindingWrapper(_SessionConnection())
        return connection


class _SessionCursor(Cursor):
    """dbt-spark's session cursor on the process's session (its own re-applies the profile
    through ``SparkSession.builder`` on every statement: see :func:`session.process_session`), or on
    a Spark Connect session (the connect target)."""

    def __init__(self, spark=None) -> None:
        super().__init__()
        self._spark = spark

    def execute(self, sql: str, *parameters) -> None:
        from pyspark.errors import AnalysisException

        if parameters:
            sql = sql % parameters
        try:
            spark = self._spark or current_thread_session()
            if self._spark is None and run_dml(spark, sql):
                self._df = None
                return
            self._df = spark.sql(sql)
        except AnalysisException as exc:
            raise DbtRuntimeError(str(exc)) from exc


class _SessionConnection(SessionConnection):
    def __init__(self, spark=None) -> None:
        super().__init__()
        self._spark = spark

    def cursor(self) -> Cursor:
        return _SessionCursor(self._spark)
