"""The Jinja surface of a whole-table rewrite (:mod:`python_udfs.commit.rewrite`): how dbt's
``merge`` / ``delete+insert`` strategies, ``sync_all_columns`` and ``dbt snapshot`` replace
the rows of a parquet table, in one metastore call that readers see (the adapter's
materializations in ``dbt/include/lakerank/macros``)."""

from __future__ import annotations

import os

from dbt.adapters.base import available
from dbt.adapters.base.meta import AdapterMeta
from dbt.adapters.events.logging import AdapterLogger
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.lakerank.remote import driver_side
from python_udfs.commit import rewrite

logger = AdapterLogger("lakerank")


class RewriteMixin(metaclass=AdapterMeta):
    @available
    @driver_side
    def lakerank_rewrite_table(self, relation, sql: str, replace_schema: bool = False) -> str:
        """Replace ``relation``'s rows with ``sql``'s (its columns too with ``replace_schema``),
        staged beside the table and swapped in with one ``ALTER TABLE ... SET LOCATION``.
        Returns the new version's directory. A crash test's hook: LAKERANK_FAULT=kill:staged
        (with LAKERANK_TEST_HOOKS=1) kills the process between the stage and the swap."""
        logger.debug(f"lakerank: rewriting {relation}:\n{sql}")
        spark = self._session()
        if spark is None:
            raise DbtRuntimeError(f"{relation}: rewriting a table needs a Spark driver lakerank controls "
                                  "(targets local, cluster and connect)")

        def after_stage(_stage: str) -> None:
            if os.environ.get("LAKERANK_FAULT") == "kill:staged":
                self.lakerank_test_kill("staged")

        try:
            return rewrite.rewrite(spark, (relation.schema, relation.identifier), sql, bool(replace_schema),
                                   after_stage)
        except ValueError as exc:
            raise DbtRuntimeError(str(exc)) from None


def run_dml(spark, sql: str) -> bool:
    """Run ``sql`` as a rewrite when it is an ``UPDATE`` or ``DELETE`` of a table of a plain file
    format, which Spark refuses (dbt's tests and hooks edit tables so); False for any other
    statement, which the caller runs."""
    try:
        found = rewrite.dml_rows(spark, sql)
        if found is None:
            return False
        table, rows = found
        rewrite.rewrite(spark, table, rows)
    except ValueError as exc:
        raise DbtRuntimeError(str(exc)) from None
    return True
