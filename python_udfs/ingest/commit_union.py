"""One commit stream out of several: ``run_commit_union`` reads the pending commits of every
source (per-source watermarks), normalises them to one schema and publishes them as the next
commit of its own table (exactly once, see its docstring)."""

from __future__ import annotations

import re
from typing import Dict, Sequence

from python_udfs.commit import protocol
from python_udfs.ingest.tables import ensure_table, publish_partition, quote_name
from python_udfs.jvm import split_table_name

__all__ = ["WATERMARK_PREFIX", "run_commit_union"]

WATERMARK_PREFIX = "lakerank.source."


def _properties(spark, table: str) -> Dict[str, str]:
    return {r[0]: r[1] for r in spark.sql(f"SHOW TBLPROPERTIES {quote_name(table)}").collect()}


def _table_exists(spark, table: str) -> bool:
    return spark.catalog.tableExists(table)


def run_commit_union(spark, *, table: str, ddl: str, sources: Sequence[Dict[str, str]],
                     reset: bool = False) -> str:
    """Publish the pending commits of several commit sources as ONE new commit of ``table``.

    ``sources``: dicts with ``name`` (the watermark's name), ``head_table`` and
    ``head_property`` (the source's head, its last committed commit: the table property
    ``lakerank.commit_id`` of a stream ingest or merge_on_read model,
    ``lakerank.snapshot_id`` of a pk_table), ``rows_table`` (the rows, with
    ``_commit_id``; default ``head_table``; a pk_table's ``<model>__audit_log``) and
    ``select`` (a SELECT over ``{rows}``, the source's rows in its window, returning any
    subset of ``ddl``'s columns; the others are NULL). A missing table or property is
    an empty source.

    Per call: the window of each source is ``(watermark, head]``, the watermark being
    this table's property ``lakerank.source.<name>``; if any window is non-empty, the
    union of their rows becomes partition ``_commit_id = n`` (``n`` = this table's
    ``lakerank.commit_id`` + 1), written into a fresh directory and published with one
    metastore call, and then ONE ``ALTER TABLE ... SET TBLPROPERTIES`` records ``n`` and
    every source's new watermark together. A call killed before that statement left at
    most an unrecorded partition ``n``: the next call drops it and recomputes it from
    the same (or wider) windows, so every source commit lands in exactly one recorded
    commit of ``table``. Readers of ``table`` read only up to its recorded head.

    A source whose head is below this table's watermark for it was rebuilt (its commit
    ids restarted): the call fails rather than skip or re-read commits. ``reset`` (a
    ``--full-refresh``) drops ``table`` first and re-reads every source from the start;
    its consumers must then be rebuilt too (their watermarks refer to the old commits).
    """
    qname = quote_name(table)
    if reset:
        spark.sql(f"DROP TABLE IF EXISTS {qname}")
    location = ensure_table(spark, table, ddl)
    props = _properties(spark, table)
    head = int(props.get("lakerank.commit_id", "-1"))
    # A partition beyond the recorded head is a dead attempt's: never read, dropped (the
    # protocol's recovery, with the table as its own log).
    name = split_table_name(spark, table)
    protocol.recover(spark, name, head, logs=[(name, "_commit_id")])
    pending = [w for w in (_window(spark, table, props, source) for source in sources) if w[4] > w[3]]
    if not pending:
        return f"no pending commits (head {head})"
    commit_id = head + 1
    publish_partition(spark, table, location, commit_id, _union_rows(spark, ddl, pending).repartition(1))
    marks = [("lakerank.commit_id", commit_id)] + [(WATERMARK_PREFIX + w[0], w[4]) for w in pending]
    spark.sql(f"ALTER TABLE {qname} SET TBLPROPERTIES ("
              + ", ".join(f"'{k}' = '{v}'" for k, v in marks) + ")")
    return f"commit {commit_id}: " + ", ".join(f"{w[0]} ({w[3]}, {w[4]}]" for w in pending)


def _window(spark, table: str, props: Dict[str, str], source: Dict[str, str]):
    """``(name, rows_table, select, watermark, head)`` of one source: its commits this call
    reads are ``(watermark, head]``; a source behind the watermark was rebuilt (an error)."""
    name = source["name"]
    if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name):
        raise ValueError(f"commit source name {name!r} must be an identifier")
    rows_table = source.get("rows_table") or source["head_table"]
    source_head = -1
    if _table_exists(spark, source["head_table"]) and _table_exists(spark, rows_table):
        source_head = int(_properties(spark, source["head_table"]).get(source["head_property"], "-1"))
    mark = int(props.get(WATERMARK_PREFIX + name, "-1"))
    if source_head < mark:
        raise RuntimeError(
            f"commit source {name} ({source['head_table']}) is at commit {source_head} but {table} "
            f"already consumed it up to {mark}: the source was rebuilt. Rebuild {table} and its "
            "consumers too (dbt build --full-refresh on them).")
    return name, rows_table, source["select"], mark, source_head


def _union_rows(spark, ddl: str, pending):
    """The union of the pending windows' selected rows, each cast to ``ddl``'s columns (a
    column a source does not select is NULL)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import _parse_datatype_string

    schema = [f for f in _parse_datatype_string(ddl).fields if f.name != "_commit_id"]
    frames = []
    for name, rows_table, select_sql, mark, source_head in pending:
        view = f"__lr_union_{name}"
        spark.sql(
            f"CREATE OR REPLACE TEMPORARY VIEW {view} AS SELECT * FROM {quote_name(rows_table)} "
            f"WHERE _commit_id > {mark} AND _commit_id <= {source_head}")
        df = spark.sql(select_sql.format(rows=view))
        have = set(df.columns)
        frames.append(df.select(*[
            (F.col(f.name) if f.name in have else F.lit(None)).cast(f.dataType).alias(f.name)
            for f in schema]))
    union = frames[0]
    for df in frames[1:]:
        union = union.unionByName(df)
    return union
