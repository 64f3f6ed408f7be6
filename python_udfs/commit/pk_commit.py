"""Spark side of the ``pk_table`` materialization: one commit's per-key merge.

The materialization hands over two temporary views — the commit's input rows (with
``__kind`` and ``__arrival``) and the stored rows of the keys it touches — and gets back
one view with, per touched key, the rows each consumer needs (column ``__role``):

``after``       the key's merged row after the commit (absent when the key is deleted);
``premerged``   the commit's own rows of the key merged together (changelog-producer none);
``input``       the write-filtered input rows (changelog-producer input);
``lookup``      the lookup changelog (-U/+U, +I, -D) of the key for this commit.

The merge rules live in :mod:`python_udfs.paimon.merge`; this module only moves rows
between Spark and that code, one key group at a time (``applyInArrow``), so nothing is
collected to the driver.

:func:`sql_mergeable` says whether the materialization may instead build the same view in
plain Spark SQL (macro ``pk_sql_merge``, no Python worker): ``deduplicate`` and ``first-row``
without ``rowkind.field``, with sequence fields and row-deduplicate columns of types whose
Spark ordering / equality is exactly Python's (no float/double: NaN; no map: no equality).
"""

from __future__ import annotations

import json
from typing import Any, Dict, List

META_SRC = "__src"
META_KIND = "__kind"
META_ARRIVAL = "__arrival"
OUT_ROLE = "__role"
OUT_KIND = "__kind"
OUT_POS = "__pos"


def merge_commit(
    spark, input_view: str, stored_view: str, spec: Dict[str, Any], columns: List[str], out_view: str
) -> None:
    """Register ``out_view``: the merge of ``input_view`` into ``stored_view`` per key.

    ``columns`` are the stored columns (the primary key among them), in table order.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegerType, StringType, StructField, StructType

    stored = spark.table(stored_view).select(
        *columns,
        F.lit("stored").alias(META_SRC),
        F.lit("+I").alias(META_KIND),
        F.lit(-1).cast("long").alias(META_ARRIVAL),
    )
    incoming = spark.table(input_view).select(
        *columns,
        F.lit("input").alias(META_SRC),
        F.col(META_KIND),
        F.col(META_ARRIVAL).cast("long"),
    )
    rows = stored.unionByName(incoming)
    value_schema = spark.table(stored_view).select(*columns).schema
    out_schema = StructType(
        list(value_schema.fields)
        + [
            StructField(OUT_ROLE, StringType(), False),
            StructField(OUT_KIND, StringType(), False),
            StructField(OUT_POS, IntegerType(), False),
        ]
    )
    spec_json = json.dumps(spec)
    merged = rows.groupBy(*spec["primary_key"]).applyInArrow(
        _key_merger(spec_json, columns, out_schema.json()), schema=out_schema
    )
    merged.createOrReplaceTempView(out_view)


def _key_merger(spec_json: str, columns: List[str], schema_json: str):
    """The per-key Arrow function (a closure over plain strings, cheap to pickle)."""

    def merge_key(table):
        import pyarrow as pa
        from pyspark.sql.pandas.types import to_arrow_schema
        from pyspark.sql.types import StructType

        from python_udfs.paimon.merge import commit_key

        spec = _spec_cache(spec_json)
        # Spark expects timestamps back in UTC (it sends them in the session time zone).
        schema = _SCHEMAS.get(schema_json)
        if schema is None:
            schema = _SCHEMAS[schema_json] = to_arrow_schema(
                StructType.fromJson(json.loads(schema_json)), timezone="UTC"
            )
        rows = table.to_pylist()
        stored = [r for r in rows if r[META_SRC] == "stored"]
        incoming = sorted((r for r in rows if r[META_SRC] == "input"), key=lambda r: r[META_ARRIVAL])
        result = commit_key(
            spec,
            {c: stored[0][c] for c in columns} if stored else None,
            [(r[META_KIND], {c: r[c] for c in columns}) for r in incoming],
        )
        out: List[Dict[str, Any]] = []

        def emit(role: str, kind: str, row: Dict[str, Any]) -> None:
            out.append({**row, OUT_ROLE: role, OUT_KIND: kind, OUT_POS: len(out)})

        if result["after"] is not None:
            emit("after", "+I", result["after"])
        if result["premerged"] is not None:
            emit("premerged", *result["premerged"])
        for kind, row in result["input"]:
            emit("input", kind, row)
        for kind, row in result["lookup"]:
            emit("lookup", kind, row)
        return pa.Table.from_pylist(out, schema=schema)

    return merge_key


#: Types whose Spark ordering equals Python's on the values pyarrow hands over.
_SQL_ORDERED = frozenset(
    {"tinyint", "smallint", "int", "bigint", "decimal", "string", "varchar", "boolean", "date", "timestamp",
     "timestamp_ntz"}
)
#: Types whose Spark null-safe equality (<=>) equals ``paimon.values.values_equal``.
_SQL_EQUAL = _SQL_ORDERED | {"binary"}


def _sql_comparable(type_str: str) -> bool:
    from python_udfs.paimon.spark_types import parse_type

    def ok(t) -> bool:
        if t.name == "array":
            return ok(t.element)
        if t.name == "struct":
            return all(ok(ft) for _, ft in t.fields)
        return t.name in _SQL_EQUAL

    return ok(parse_type(type_str))


def sql_mergeable(spec: Dict[str, Any]) -> bool:
    """Can macro ``pk_sql_merge`` produce exactly :func:`merge_commit`'s view for ``spec``?

    Conservative: any option the SQL path does not model sends the commit to Python.
    """
    from python_udfs.paimon.spark_types import parse_type

    if spec.get("engine") not in ("deduplicate", "first-row") or spec.get("rowkind_field"):
        return False
    types = spec["column_types"]
    if any(parse_type(types[f]).name not in _SQL_ORDERED for f in spec.get("sequence_fields") or []):
        return False
    if spec.get("row_dedup"):
        ignore = set(spec.get("row_dedup_ignore") or [])
        if not all(_sql_comparable(t) for name, t in spec["columns"] if name not in ignore):
            return False
    return True


_SPECS: Dict[str, Dict[str, Any]] = {}
_SCHEMAS: Dict[str, Any] = {}


def _spec_cache(spec_json: str) -> Dict[str, Any]:
    spec = _SPECS.get(spec_json)
    if spec is None:
        spec = _SPECS[spec_json] = json.loads(spec_json)
    return spec

