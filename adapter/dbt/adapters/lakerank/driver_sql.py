"""The Jinja surface of small SQL in the driver (:mod:`python_udfs.driver_sql`): the rank
rewrite's results and check computed by DuckDB in the driver (macros/pipeline/rewrite_table.sql)."""

from __future__ import annotations

from typing import Any, Dict, Optional

from dbt.adapters.base import available
from dbt.adapters.base.meta import AdapterMeta
from dbt.adapters.events.logging import AdapterLogger

from dbt.adapters.lakerank.remote import driver_side
from python_udfs import driver_sql

logger = AdapterLogger("lakerank")


class DriverSqlMixin(metaclass=AdapterMeta):
    @available
    @driver_side
    def lakerank_rows_in_driver(self, inputs_sql: str, results_sql: str, check_sql: str, view: str,
                                max_rows: int) -> Optional[Dict[str, Any]]:
        """``inputs_sql``'s rows, ``results_sql``'s over them and ``check_sql``'s problems,
        computed in the driver, all rows left in ``global_temp.<view>``
        (:func:`python_udfs.driver_sql.rows_in_driver`); None when the inputs hold more than
        ``max_rows`` rows, or the target has no driver lakerank controls (thrift)."""
        spark = self._session()
        if spark is None:
            return None
        found = driver_sql.rows_in_driver(spark, inputs_sql, results_sql, check_sql, view, int(max_rows))
        logger.debug(f"lakerank: rows in the driver for {view}: "
                     + (f"more than {max_rows} inputs, left to Spark" if found is None else
                        f"{found['inputs']} inputs, {found['results']} results, {len(found['problems'])} problems"))
        return found

    @available
    @driver_side
    def lakerank_drop_driver_rows(self, view: str) -> str:
        """Drop ``global_temp.<view>`` (:meth:`lakerank_rows_in_driver`'s)."""
        spark = self._session()
        if spark is not None:
            driver_sql.drop_view(spark, view)
        return ""
