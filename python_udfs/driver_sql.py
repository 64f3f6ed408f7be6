"""Small SQL in the driver: a Spark query's rows collected into the driver as Arrow, more SQL
over them run there by DuckDB, and every row handed back to Spark as a global temporary view.

The rank rewrite uses it for a batch's results (docs/decisions/0004-one-commit-per-batch.md,
"Spark's floor cold, and the results in the driver"): its inputs (the touched blocks' rows, a
few hundred thousand at 1e7) are read by Spark, and the ranking and the check over them, which
in Spark cost some twenty short jobs each paying Spark's per-job and JIT costs, run in DuckDB
in a fraction of a second. The SQL is written once, in Spark's dialect (the pipeline's
macros), and translated to DuckDB's by sqlglot.

Contract of :func:`rows_in_driver`:

- ``inputs_sql`` (Spark SQL) gives the input rows; more than ``max_rows`` of them and nothing
  else happens (None: the caller keeps Spark's path);
- ``results_sql`` (Spark SQL) reads them as ``driver_inputs`` and gives rows of the same
  columns, in the same order;
- ``check_sql`` (Spark SQL) reads the inputs and results together as ``driver_rows`` and
  gives one ``(problem, detail)`` row per problem; the problems are returned, not raised;
- all rows (inputs, then results) become the global temporary view ``global_temp.<view>``,
  typed as ``inputs_sql``'s columns, for the caller's next statement (a `create table as`);
  :func:`drop_view` drops it.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

__all__ = ["drop_view", "rows_in_driver", "to_duckdb"]


def to_duckdb(sql: str) -> str:
    """``sql`` (Spark SQL) in DuckDB's dialect."""
    import sqlglot

    return sqlglot.transpile(sql, read="spark", write="duckdb")[0]


def rows_in_driver(spark, inputs_sql: str, results_sql: str, check_sql: str, view: str,
                   max_rows: int) -> Optional[Dict[str, Any]]:
    """The inputs, their results and the check in the driver (the module doc); returns
    ``{"inputs": n, "results": m, "problems": [[problem, detail], ...]}``, or None when the
    inputs hold more than ``max_rows`` rows."""
    import duckdb
    import pyarrow as pa

    frame = spark.sql(inputs_sql)
    driver_inputs = frame.limit(max_rows + 1).toArrow()
    if driver_inputs.num_rows > max_rows:
        return None
    con = duckdb.connect()
    try:
        con.register("driver_inputs", driver_inputs)
        results = con.sql(to_duckdb(results_sql)).to_arrow_table()
        results = results.rename_columns(driver_inputs.column_names).cast(driver_inputs.schema)
        rows = pa.concat_tables([driver_inputs, results])
        con.register("driver_rows", rows)
        problems = [[str(p), str(d)] for p, d in con.sql(to_duckdb(check_sql)).fetchall()]
    finally:
        con.close()
    spark.createDataFrame(rows, schema=frame.schema).createOrReplaceGlobalTempView(view)
    return {"inputs": driver_inputs.num_rows, "results": results.num_rows, "problems": problems}


def drop_view(spark, view: str) -> None:
    """Drop the global temporary view ``view`` (nothing if it does not exist)."""
    spark.catalog.dropGlobalTempView(view)
