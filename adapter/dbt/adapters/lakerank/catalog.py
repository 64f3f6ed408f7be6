"""dbt's catalog (``dbt docs generate``) read from the metastore: every table and view of a
schema with its comment and its columns' comments, which dbt-spark's catalog (parsed from
``SHOW TABLE EXTENDED``'s text) does not carry. One metastore call per schema."""

from __future__ import annotations

from typing import Any, Dict, List

from python_udfs.jvm import external_catalog, scala_items, scala_seq


def catalog_rows(spark, schema: str) -> List[Dict[str, Any]]:
    """One row per column of every relation in ``schema``, in dbt-spark's catalog columns
    (``column_index`` from 0, as dbt-spark's)."""
    catalog = external_catalog(spark)
    names = list(scala_items(catalog.listTables(schema)))
    rows = []
    for table in scala_items(catalog.getTablesByName(schema, scala_seq(spark, names))):
        kind = "view" if table.tableType().name() == "VIEW" else "table"
        comment = table.comment().get() if table.comment().isDefined() else None
        stat_columns = _stats(table.stats())
        fields = table.schema().fields()
        for index, field in enumerate(fields):
            column_comment = field.getComment()
            rows.append({
                "table_database": None,
                "table_schema": schema,
                "table_name": table.identifier().table(),
                "table_type": kind,
                "table_comment": comment,
                "table_owner": table.owner() or None,
                "column_name": field.name(),
                "column_index": index,
                "column_type": field.dataType().simpleString(),
                "column_comment": column_comment.get() if column_comment.isDefined() else None,
                **stat_columns,
            })
    return rows


def _stats(stats) -> Dict[str, Any]:
    """The metastore's statistics of a table, as dbt-spark reads them from ``SHOW TABLE
    EXTENDED`` ("Statistics: <n> bytes[, <m> rows]"): its size, which the metastore records
    when a query creates the table and keeps current through inserts, overwrites and a
    rewrite's swap, and its row count from ``ANALYZE TABLE`` until the rows change. None for
    a view, or for a table created empty and only inserted into since (a seed)."""
    if not stats.isDefined():
        return {}
    values = {"bytes": int(str(stats.get().sizeInBytes()))}
    if stats.get().rowCount().isDefined():
        values["rows"] = int(str(stats.get().rowCount().get()))
    out: Dict[str, Any] = {}
    for key, value in values.items():
        out.update({f"stats:{key}:label": key, f"stats:{key}:value": value,
                    f"stats:{key}:description": "", f"stats:{key}:include": True})
    return out
