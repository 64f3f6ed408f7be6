"""A whole-table rewrite of an unpartitioned file-format table (parquet, orc ...), seen by
readers in one metastore call: what dbt's ``merge`` and ``delete+insert`` strategies,
``on_schema_change: sync_all_columns`` and ``dbt snapshot`` run on lakerank's tables, which
have no MERGE, DELETE or DROP COLUMN of their own (dbt-spark allows those on Delta, Iceberg
and Hudi only).

The commit protocol's steps (:mod:`protocol`) for one table:

1. **stage**: the new rows are written to ``<schema dir>/_lakerank_versions/<table>/_v/r<id>``,
   beside the table's default directory rather than inside it, so a ``DROP TABLE`` (which
   deletes the directory a managed table points at) and a later ``CREATE TABLE`` of the same
   name (which refuses a non-empty default directory) behave as on any dbt-spark table.
2. **swap**: the table's data schema when the caller changes it (columns read NULL from the
   old files until the next call), then ``ALTER TABLE ... SET LOCATION``: one metastore call
   between the old rows and the new. A reader, or a run killed at any point, sees one or the
   other, never a mix.
3. **finish**: the directory it replaced is deleted, and every attempt under ``_v`` the table
   does not point at.

**Recovery** is the first step of every rewrite: attempts that died before their swap are
swept, and the table's default directory is deleted when the table no longer points there (a
run killed between its swap and its finish)."""

from __future__ import annotations

import uuid
from typing import Callable, Optional, Tuple

from python_udfs.commit.protocol import Table, delete_path, swap, sweep, table_location
from python_udfs.jvm import external_catalog, jvm_class


def versions_root(spark, table: Table) -> str:
    """Where ``table``'s rewritten versions live: ``<schema dir>/_lakerank_versions/<table>``."""
    database = external_catalog(spark).getDatabase(table[0])
    schema_dir = str(jvm_class(spark, "org.apache.hadoop.fs.Path")(database.locationUri()).toString())
    return f"{schema_dir.rstrip('/')}/_lakerank_versions/{table[1].lower()}"


def default_location(spark, table: Table) -> str:
    database = external_catalog(spark).getDatabase(table[0])
    schema_dir = str(jvm_class(spark, "org.apache.hadoop.fs.Path")(database.locationUri()).toString())
    return f"{schema_dir.rstrip('/')}/{table[1].lower()}"


def recover(spark, table: Table) -> int:
    """Sweep what a killed rewrite of ``table`` left: dead attempts, and the default directory
    the table no longer points at. Returns how many directories it deleted."""
    root = versions_root(spark, table)
    deleted = sweep(spark, table, root)
    current, default = table_location(spark, table).rstrip("/"), default_location(spark, table)
    if current.startswith(root + "/"):
        deleted += int(delete_path(spark, default))
    return deleted


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
    provider = str(meta.provider().get()) if meta.provider().isDefined() else "hive"
    if provider.lower() in ("hive", "delta", "iceberg", "hudi"):
        raise ValueError(f"{table[0]}.{table[1]} is a {provider} table: a whole-table rewrite writes files "
                         "of a Spark file format (parquet, orc, csv, json)")
    recover(spark, table)
    df = spark.sql(sql)
    if not replace_schema:
        df = _as_table_columns(spark, table, df)
    stage = f"{versions_root(spark, table)}/_v/r{uuid.uuid4().hex[:12]}"
    df.write.mode("overwrite").format(provider).save(stage)
    if after_stage is not None:
        after_stage(stage)
    old = table_location(spark, table)
    if replace_schema:
        catalog.alterTableDataSchema(table[0], table[1], df._jdf.schema())
    swap(spark, table, {"relocate": [old, stage]})
    root = versions_root(spark, table)
    if not old.startswith(root + "/"):
        delete_path(spark, old)
    sweep(spark, table, root)
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
    parts = [str(p) for p in _iterate(target.multipartIdentifier())]
    if target.getClass().getSimpleName() != "UnresolvedRelation" or not 1 <= len(parts) <= 3:
        return None
    table = (parts[-2] if len(parts) > 1 else spark.catalog.currentDatabase(), parts[-1])
    meta = external_catalog(spark).getTable(*table)
    provider = str(meta.provider().get()).lower() if meta.provider().isDefined() else "hive"
    if provider in ("hive", "delta", "iceberg", "hudi"):
        return None
    source = f"`{table[0]}`.`{table[1]}`{alias}"
    if kind == "DeleteFromTable":
        return table, f"select * from {source} where not coalesce({plan.condition().sql()}, false)"
    condition = plan.condition().get().sql() if plan.condition().isDefined() else "true"
    values = {}
    for assignment in _iterate(plan.assignments()):
        name = [str(p) for p in _iterate(assignment.key().nameParts())][-1]
        values[name.lower()] = assignment.value().sql()
    columns = [f.name for f in spark.table(f"`{table[0]}`.`{table[1]}`").schema.fields]
    unknown = set(values) - {c.lower() for c in columns}
    if unknown:
        raise ValueError(f"{table[0]}.{table[1]} has no column {sorted(unknown)} to update")
    select = ", ".join(
        f"case when coalesce({condition}, false) then {values[c.lower()]} else `{c}` end as `{c}`"
        if c.lower() in values else f"`{c}`" for c in columns)
    return table, f"select {select} from {source}"


def _first_word(sql: str) -> str:
    """The statement's first keyword, after leading comments (dbt's query comment)."""
    text = sql.lstrip()
    while text.startswith(("/*", "--")):
        end = text.find("*/") + 2 if text.startswith("/*") else text.find("\n") + 1
        if end <= 1:
            return ""
        text = text[end:].lstrip()
    return text.split(None, 1)[0].lower() if text else ""


def _iterate(seq):
    it = seq.iterator()
    while it.hasNext():
        yield it.next()
