"""A whole-table rewrite of an unpartitioned file-format table (parquet, orc ...), seen by
readers in one metastore call: what dbt's ``merge`` and ``delete+insert`` strategies,
``on_schema_change: sync_all_columns`` and ``dbt snapshot`` run on lakerank's tables, which
have no MERGE, DELETE or DROP COLUMN of their own (dbt-spark allows those on Delta, Iceberg
and Hudi only).

The commit protocol's steps (:mod:`protocol`) for one table:

1. **stage**: the new rows are written to ``<dir>/_lakerank_versions/<name>/_v/r_<id>``, where
   ``<dir>/<name>`` is the table's own directory (a managed table's in its schema, or its
   ``location_root``'s): beside it rather than inside it, so a ``DROP TABLE`` (which deletes
   the directory a managed table points at) and a later ``CREATE TABLE`` of the same name
   (which refuses a non-empty directory) behave as on any dbt-spark table.
2. **swap**: the table's data schema when the caller changes it (columns read NULL from the
   old files until the next call), then ``ALTER TABLE ... SET LOCATION``: one metastore call
   between the old rows and the new. A reader, or a run killed at any point, sees one or the
   other, never a mix. Before its first swap the table records its own directory
   (``lakerank.own_location``).
3. **finish**: the directory it replaced is deleted (the attempts of killed runs went at the
   recovery that starts every rewrite; commits on a home are serialised by its build lock).

**Recovery** is the first step of every rewrite: attempts that died before their swap are
swept, and the table's own directory is deleted once the table points at a version (a run
killed between its first swap and its finish).
"""

from __future__ import annotations

import uuid
from typing import Callable, Optional, Tuple

from python_udfs.commit.protocol import Table, delete_path, stage_dir, swap, sweep
from python_udfs.jvm import external_catalog, jvm_class, scala_items

_VERSIONS = "/_lakerank_versions/"
_OWN = "lakerank.own_location"


def layout(spark, meta) -> Tuple[str, str, str]:
    """``(current, root, own)`` of a table (``meta``, its catalog entry): the directory it
    reads, the root of its versions (``<root>/_v/...``) and its own directory (where it was
    created)."""
    current = str(jvm_class(spark, "org.apache.hadoop.fs.Path")(meta.location()).toString()).rstrip("/")
    if _VERSIONS in current:
        return current, current.split("/_v/", 1)[0], str(meta.properties().get(_OWN).getOrElse(None) or "")
    base, name = current.rsplit("/", 1)
    return current, f"{base}{_VERSIONS}{name}", current


def recover(spark, table: Table, current: str, root: str, own: str) -> int:
    """Sweep what a killed rewrite of ``table`` (its :func:`layout`) left: dead attempts, and
    its own directory once it reads a version. Returns how many directories it deleted."""
    deleted = sweep(spark, table, root)
    if current != own and own:
        deleted += int(delete_path(spark, own))
    return deleted


def file_format(meta) -> Optional[str]:
    """The Spark file format a table's rows are written in (parquet, orc, csv, json), or None
    for a table with a format of its own (Hive SerDe, Delta, Iceberg, Hudi)."""
    provider = str(meta.provider().get()) if meta.provider().isDefined() else "hive"
    return None if provider.lower() in ("hive", "delta", "iceberg", "hudi") else provider


def rewrite(spark, table: Table, sql: str, replace_schema: bool = False,
            after_stage: Optional[Callable[[str], None]] = None) -> str:
    """Replace ``table``'s rows with ``sql``'s. Without ``replace_schema`` the rows take the
    table's columns and types (by name; a column ``sql`` lacks is refused); with it, the
    table's columns become ``sql``'s. ``after_stage`` (a test hook) runs between the stage
    and the swap. Returns the new version's directory."""
    catalog = external_catalog(spark)
    meta = catalog.getTable(*table)
    if not meta.partitionColumnNames().isEmpty():
        raise ValueError(f"{table[0]}.{table[1]} is partitioned: a whole-table rewrite supports unpartitioned "
                         "tables (use incremental_strategy 'insert_overwrite' with partition_by)")
    provider = file_format(meta)
    if provider is None:
        raise ValueError(f"{table[0]}.{table[1]} has a format of its own (Hive, Delta, Iceberg or Hudi): a "
                         "whole-table rewrite writes files of a Spark file format (parquet, orc, csv, json)")
    current, root, own = layout(spark, meta)
    recover(spark, table, current, root, own)
    df = spark.sql(sql)
    if not replace_schema:
        df = _as_table_columns(spark, table, df)
    stage = stage_dir(root, "r", "", uuid.uuid4().hex[:12])  # a rewrite has no commit id
    df.write.mode("overwrite").format(provider).save(stage)
    if after_stage is not None:
        after_stage(stage)
    if current == own:
        spark.sql(f"alter table `{table[0]}`.`{table[1]}` set tblproperties ('{_OWN}' = '{own}')")
    if replace_schema:
        catalog.alterTableDataSchema(table[0], table[1], df._jdf.schema())
    swap(spark, table, {"relocate": [current, stage]})
    delete_path(spark, current)  # every other attempt was swept by the recovery above
    return stage


def _as_table_columns(spark, table: Table, df):
    """``df``'s columns as ``table``'s, in its order and types, matched by name."""
    from pyspark.sql import functions as F

    fields = spark.table(f"`{table[0]}`.`{table[1]}`").schema.fields
    named = {c.lower(): c for c in df.columns}
    missing = [f.name for f in fields if f.name.lower() not in named]
    if missing:
        raise ValueError(f"{table[0]}.{table[1]}: the rewrite's rows lack the table's columns {missing}")
    return df.select([F.col(f"`{named[f.name.lower()]}`").cast(f.dataType).alias(f.name) for f in fields])


def dml_rows(spark, sql: str) -> Optional[Tuple[Table, str]]:
    """``(table, rows)`` when ``sql`` is an ``UPDATE`` or ``DELETE`` of a table of a plain file
    format: the rows the table holds after it, for :func:`rewrite`. None for any other
    statement (and for tables with their own DML: Delta, Iceberg, Hudi), which runs as it is."""
    if _first_word(sql) not in ("update", "delete"):
        return None
    plan = spark._jsparkSession.sessionState().sqlParser().parsePlan(sql)
    kind = plan.getClass().getSimpleName()
    if kind not in ("UpdateTable", "DeleteFromTable"):
        return None
    target, alias = plan.table(), ""
    if target.getClass().getSimpleName() == "SubqueryAlias":
        alias, target = f" AS `{target.alias()}`", target.child()
    parts = [str(p) for p in scala_items(target.multipartIdentifier())]
    if target.getClass().getSimpleName() != "UnresolvedRelation" or not 1 <= len(parts) <= 3:
        return None
    table = (parts[-2] if len(parts) > 1 else spark.catalog.currentDatabase(), parts[-1])
    if file_format(external_catalog(spark).getTable(*table)) is None:
        return None
    source = f"`{table[0]}`.`{table[1]}`{alias}"
    if kind == "DeleteFromTable":
        return table, f"select * from {source} where not coalesce({_sql(plan.condition())}, false)"
    condition = _sql(plan.condition().get()) if plan.condition().isDefined() else "true"
    values = {}
    for assignment in scala_items(plan.assignments()):
        name = [str(p) for p in scala_items(assignment.key().nameParts())][-1]
        values[name.lower()] = _sql(assignment.value())
    columns = [f.name for f in spark.table(f"`{table[0]}`.`{table[1]}`").schema.fields]
    unknown = set(values) - {c.lower() for c in columns}
    if unknown:
        raise ValueError(f"{table[0]}.{table[1]} has no column {sorted(unknown)} to update")
    select = ", ".join(
        f"case when coalesce({condition}, false) then {values[c.lower()]} else `{c}` end as `{c}`"
        if c.lower() in values else f"`{c}`" for c in columns)
    return table, f"select {select} from {source}"


def _sql(expression) -> str:
    """A parsed expression back as SQL, or a clear error for one that has no SQL form before
    analysis (a subquery, say)."""
    try:
        return str(expression.sql())
    except Exception as exc:  # py4j's error for a JVM exception
        raise ValueError(f"UPDATE / DELETE on a parquet table: lakerank rewrites the table and cannot spell "
                         f"{expression.toString()!r} as SQL before analysis ({exc.__class__.__name__}); "
                         "write the change as a model (incremental merge) instead") from None


def _first_word(sql: str) -> str:
    """The statement's first keyword, after leading comments (dbt's query comment)."""
    text = sql.lstrip()
    while text.startswith(("/*", "--")):
        end = text.find("*/") + 2 if text.startswith("/*") else text.find("\n") + 1
        if end <= 1:
            return ""
        text = text[end:].lstrip()
    return text.split(None, 1)[0].lower() if text else ""

