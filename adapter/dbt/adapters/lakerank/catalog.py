"""dbt's catalog (``dbt docs generate``) read from the metastore: every table and view of a
schema with its comment and its columns' comments, which dbt-spark's catalog (parsed from
``SHOW TABLE EXTENDED``'s text) does not carry. One metastore call per schema."""

from __future__ import annotations

from typing import Any, Dict, List

from python_udfs.jvm import external_catalog, scala_items, scala_seq


def catalog_rows(spark, schema: str) -> List[Dict[str, Any]]:
    """One row per column of every relation in ``schema``, in dbt-spark's catalog columns."""
    catalog = external_catalog(spark)
    names = list(scala_items(catalog.listTables(schema)))
    rows = []
    for table in scala_items(catalog.getTablesByName(schema, scala_seq(spark, names))):
        kind = "view" if table.tableType().name() == "VIEW" else "table"
        comment = table.comment().get() if table.comment().isDefined() else None
        stats = table.stats()
        stat_columns = {}
        if stats.isDefined():
            stat_columns = {"stats:bytes:label": "bytes", "stats:bytes:value": int(str(stats.get().sizeInBytes())),
                            "stats:bytes:description": "", "stats:bytes:include": True}
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

