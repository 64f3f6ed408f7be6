"""Paimon test vectors -> executable lakerank plans (no Spark needed to import this module).

The vectors (``tests/data/paimon_vectors_public.json``, where they come from: tests/data/README.md) are inputs
and expected outputs copied from Apache Paimon's own tests. This module

* parses their Flink/Spark schema strings into Spark column types;
* turns every table-level (and docs_example) vector -- and every ``case`` sub-case and every
  value of a parameterised option (``'a | b'``) -- into a :class:`Plan`: a list of executable
  steps (``pk_table`` commits, each one ``dbt run`` of a model) and assertions (batch queries,
  changelog windows read through ``lakerank_lib.changes``, time travel through ``lakerank_lib.as_of``,
  expected errors), plus the steps/assertions it cannot map, each with a precise reason;
* classifies each vector ``pass-full`` / ``partial`` / ``unmappable`` (or ``kernel`` for the
  merge-function / field-aggregator unit vectors, which tests/unit/test_paimon_kernel.py covers);
* normalises values for comparison (DECIMAL strings with scale, ISO dates/timestamps, MAP as an
  order-insensitive entry set, ROW as lists, FLOAT as float32 bits, DOUBLE as float64 bits);
* writes ``docs/paimon_vectors.md``:  ``python3 tests/support/paimon_vectors.py --write-doc``.

Mapping rules that are choices (documented again in the generated doc):

* Arrival order inside a commit is the row order of the model's ``VALUES`` list. By default the
  plan uses no ``order_by`` column (pk_table's documented default: scan order), because an
  ``order_by`` column is stored as a table column and changes merge results (it is aggregated,
  and it makes ``changelog-producer.row-deduplicate`` see every row as changed). Set
  ``PAIMON_VECTORS_ORDER_COLUMN=_ord`` to pass an explicit ``order_by`` column instead.
* Paimon snapshot ids -> lakerank commit ids: a table with lookup compaction
  (``changelog-producer=lookup``, ``deletion-vectors.enabled``, ``merge-engine=first-row``,
  ``force-lookup``) or a compaction in every commit (Flink ``full-compaction`` producer,
  ``commit.force-compact``) writes two snapshots per commit: APPEND ``2c-1`` then COMPACT ``2c``.
  Snapshot ``2c`` is the state after commit ``c``; snapshot ``2c-1`` is the state after commit
  ``c`` too, except with deletion vectors, where an APPEND snapshot only exposes compacted data
  (= the state after commit ``c-1``). Otherwise snapshot ``n`` = commit ``n``.
* Flink writers with ``changelog-producer=full-compaction`` compact fully after every commit
  (``full-compaction.delta-commits`` defaults to 1 in Flink streaming writes); the plan states that
  explicitly with ``'full-compaction.delta-commits'='1'``. Vectors from paimon-core / Spark with
  that producer get changelog only from explicit compactions (``compact: full`` steps,
  ``CALL sys.compact``) -> the dbt var ``lakerank_full_compaction: true`` on that run.
* ``DELETE FROM t WHERE c`` is a commit whose input is ``select <columns>, '-D' as rowkind from t
  where c`` (Spark and Flink write a -D carrying the current full row); ``UPDATE t SET ...`` on a
  deduplicate table is the same with ``+U``.
* ``commit_each_row`` over pairwise distinct keys, in a plan that never refers to snapshot ids,
  is one commit (keys merge independently, so every later state is identical); set
  ``PAIMON_VECTORS_EXACT_COMMITS=1`` to run one commit per row anyway.
"""

from __future__ import annotations

import argparse
import collections
import datetime as _dt
import decimal
import itertools
import json
import os
import pathlib
import re
import struct
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DOC_PATH = ROOT / "docs" / "paimon_vectors.md"
VECTORS = ROOT / "tests" / "data" / "paimon_vectors_public.json"

TABLE_LEVELS = ("table", "docs_example")
KERNEL_LEVELS = ("merge_function", "field_aggregator")
REL = "{{REL}}"  # placeholder for the relation (lakerank.<model>) in SQL templates

PASS_FULL, PARTIAL, UNMAPPABLE, KERNEL = "pass-full", "partial", "unmappable", "kernel"


def load_vectors() -> Dict[str, Any]:
    """The repository's vectors (a missing file is an error, never an empty set)."""
    with open(VECTORS, encoding="utf-8") as fh:
        return json.load(fh)


# =====================================================================================
# Types: Flink/Spark type strings -> a small AST -> Spark type strings
# =====================================================================================
# AST: ("int",) ("bigint",) ("smallint",) ("tinyint",) ("float",) ("double",) ("boolean",)
#      ("string",) ("binary",) ("date",) ("timestamp",) ("decimal", p, s)
#      ("array", t) ("map", k, v) ("struct", ((name, t), ...))


class SchemaError(ValueError):
    """A schema string (or value) this module cannot turn into Spark."""


_SIMPLE_TYPES = {
    "INT": ("int",),
    "INTEGER": ("int",),
    "BIGINT": ("bigint",),
    "LONG": ("bigint",),
    "SMALLINT": ("smallint",),
    "SHORT": ("smallint",),
    "TINYINT": ("tinyint",),
    "BYTE": ("tinyint",),
    "FLOAT": ("float",),
    "REAL": ("float",),
    "DOUBLE": ("double",),
    "BOOLEAN": ("boolean",),
    "BOOL": ("boolean",),
    "STRING": ("string",),
    "VARCHAR": ("string",),
    "CHAR": ("string",),
    "BINARY": ("binary",),
    "VARBINARY": ("binary",),
    "BYTES": ("binary",),
    "DATE": ("date",),
    "TIMESTAMP": ("timestamp",),
    "TIMESTAMP_LTZ": ("timestamp",),
    "TIME": ("string",),  # Spark has no TIME type: values kept as 'HH:mm:ss' strings
}

_TOKEN = re.compile(r"\s*(`[^`]*`|[A-Za-z_][A-Za-z0-9_$]*|-?\d+|[<>(),:\[\]])")


def _tokens(text: str) -> List[str]:
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise SchemaError(f"cannot tokenize type {text!r} at {text[pos:]!r}")
        out.append(m.group(1))
        pos = m.end()
    return out


class _TypeParser:
    def __init__(self, text: str):
        self.text = text
        self.toks = _tokens(text)
        self.i = 0

    def peek(self, k: int = 0) -> Optional[str]:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else None

    def take(self, expect: Optional[str] = None) -> str:
        tok = self.peek()
        if tok is None or (expect is not None and tok.upper() != expect.upper()):
            raise SchemaError(f"type {self.text!r}: expected {expect or 'a token'}, got {tok!r}")
        self.i += 1
        return tok

    def parse_type(self) -> Tuple:
        name = self.take().upper()
        if name == "TIMESTAMP" and (self.peek() or "").upper() == "WITH":
            # TIMESTAMP WITH LOCAL TIME ZONE
            while self.peek() and self.peek().upper() in ("WITH", "LOCAL", "TIME", "ZONE"):
                self.take()
            name = "TIMESTAMP_LTZ"
        if name in ("ARRAY", "MULTISET"):
            self.take("<")
            elem = self.parse_type()
            self.skip_not_null()
            self.take(">")
            return ("array", elem) if name == "ARRAY" else ("map", elem, ("int",))
        if name == "MAP":
            self.take("<")
            key = self.parse_type()
            self.skip_not_null()
            self.take(",")
            val = self.parse_type()
            self.skip_not_null()
            self.take(">")
            return ("map", key, val)
        if name in ("ROW", "STRUCT"):
            close = {"<": ">", "(": ")"}[self.take()]
            fields = []
            while True:
                fname = self.take().strip("`")
                if self.peek() == ":":
                    self.take(":")
                ftype = self.parse_type()
                self.skip_not_null()
                fields.append((fname, ftype))
                if self.peek() == ",":
                    self.take(",")
                    continue
                self.take(close)
                break
            return ("struct", tuple(fields))
        params: List[int] = []
        if self.peek() == "(":
            self.take("(")
            while self.peek() != ")":
                tok = self.take()
                if tok != ",":
                    params.append(int(tok))
            self.take(")")
        if name in ("DECIMAL", "NUMERIC", "DEC"):
            p = params[0] if params else 10
            s = params[1] if len(params) > 1 else 0
            return ("decimal", p, s)
        if name in _SIMPLE_TYPES:
            return _SIMPLE_TYPES[name]
        raise SchemaError(f"unsupported type {name} in {self.text!r}")

    def skip_not_null(self) -> bool:
        if (self.peek() or "").upper() == "NOT" and (self.peek(1) or "").upper() == "NULL":
            self.i += 2
            return True
        if (self.peek() or "").upper() == "NULL":
            self.i += 1
        return False


def parse_type(text: str) -> Tuple:
    p = _TypeParser(text)
    t = p.parse_type()
    p.skip_not_null()
    if p.peek() is not None:
        raise SchemaError(f"trailing tokens in type {text!r}: {p.toks[p.i:]}")
    return t


def spark_type(t: Tuple) -> str:
    kind = t[0]
    if kind == "decimal":
        return f"decimal({t[1]},{t[2]})"
    if kind == "array":
        return f"array<{spark_type(t[1])}>"
    if kind == "map":
        return f"map<{spark_type(t[1])},{spark_type(t[2])}>"
    if kind == "struct":
        return "struct<" + ",".join(f"`{n}`:{spark_type(ft)}" for n, ft in t[1]) + ">"
    return kind


def type_from_spark_json(js: Any) -> Tuple:
    """The AST of a pyspark ``DataType.jsonValue()`` (so comparisons need no pyspark import)."""
    if isinstance(js, str):
        if js.startswith("decimal"):
            m = re.match(r"decimal\((\d+),\s*(\d+)\)", js)
            return ("decimal", int(m.group(1)), int(m.group(2))) if m else ("decimal", 10, 0)
        return {
            "integer": ("int",),
            "long": ("bigint",),
            "short": ("smallint",),
            "byte": ("tinyint",),
            "float": ("float",),
            "double": ("double",),
            "boolean": ("boolean",),
            "string": ("string",),
            "binary": ("binary",),
            "date": ("date",),
            "timestamp": ("timestamp",),
            "timestamp_ntz": ("timestamp",),
        }.get(js, ("string",) if js.startswith(("varchar", "char")) else (js,))
    kind = js.get("type")
    if kind == "array":
        return ("array", type_from_spark_json(js["elementType"]))
    if kind == "map":
        return ("map", type_from_spark_json(js["keyType"]), type_from_spark_json(js["valueType"]))
    if kind == "struct":
        return ("struct", tuple((f["name"], type_from_spark_json(f["type"])) for f in js["fields"]))
    raise SchemaError(f"unknown spark type json {js!r}")


# =====================================================================================
# Schemas
# =====================================================================================


@dataclass
class Column:
    name: str
    type: Tuple
    not_null: bool = False

    @property
    def spark(self) -> str:
        return spark_type(self.type)


@dataclass
class Schema:
    columns: List[Column]
    primary_key: List[str]
    partition_by: List[str]
    notes: List[str] = field(default_factory=list)
    append_table: bool = False

    @property
    def names(self) -> List[str]:
        return [c.name for c in self.columns]

    def column(self, name: str) -> Column:
        for c in self.columns:
            if c.name.lower() == name.lower():
                return c
        raise SchemaError(f"no column {name!r}")

    def truncated(self, n: int) -> "Schema":
        return Schema(self.columns[:n], list(self.primary_key), list(self.partition_by), list(self.notes),
                      self.append_table)


def _split_top(text: str, sep: str) -> List[str]:
    """Split at ``sep`` outside (), <>, [] and quotes."""
    out, depth, cur, quote = [], 0, [], None
    for ch in text:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = None
            continue
        if ch in "'`\"":
            quote = ch
        elif ch in "(<[":
            depth += 1
        elif ch in ")>]":
            depth -= 1
        if ch == sep and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [s.strip() for s in out if s.strip()]


def _strip_annotation(item: str) -> Tuple[str, Optional[str]]:
    """``'b INT (Spark, primary-key=a)'`` -> (``'b INT'``, ``'Spark, primary-key=a'``): a trailing
    top-level parenthesised group that is not a type parameter list."""
    item = item.strip()
    if not item.endswith(")"):
        return item, None
    depth = 0
    for i in range(len(item) - 1, -1, -1):
        if item[i] == ")":
            depth += 1
        elif item[i] == "(":
            depth -= 1
            if depth == 0:
                inner = item[i + 1 : -1]
                head = item[:i].rstrip()
                if re.fullmatch(r"\s*\d+\s*(,\s*\d+\s*)?", inner):
                    return item, None  # DECIMAL(12, 2), VARCHAR(8)
                if re.search(r"(PRIMARY\s+KEY|PARTITIONED\s+BY)\s*$", head, re.I):
                    return item, None
                if head.upper().endswith(("ROW", "STRUCT")):
                    return item, None
                return head, inner.strip()
    return item, None


def _name_list(text: str) -> List[str]:
    return [n.strip().strip("`") for n in text.split(",") if n.strip()]


def parse_schema(text: str, table_options: Optional[Dict[str, str]] = None) -> Schema:
    """Parse a vector's schema string (Flink DDL-ish, with Spark/annotation variants)."""
    table_options = table_options or {}
    if re.search(r"\(per case\)", text):
        raise SchemaError("schema given per case")
    pk: List[str] = []
    parts: List[str] = []
    notes: List[str] = []
    annotations: List[str] = []
    for seg in _split_top(text, ";"):
        seg, ann = _strip_annotation(seg)
        if ann:
            annotations.append(ann)
        m = re.fullmatch(r"PARTITIONED\s+BY\s*\((.*)\)", seg, re.I | re.S)
        if m:
            parts = _name_list(m.group(1))
            continue
        m = re.fullmatch(r"PRIMARY\s+KEY\s*\((.*)\)(\s+NOT\s+ENFORCED)?", seg, re.I | re.S)
        if m:
            pk = _name_list(m.group(1))
            continue
        columns_text = seg
    columns: List[Column] = []
    for item in _split_top(columns_text, ","):
        item, ann = _strip_annotation(item)
        if ann:
            annotations.append(ann)
        m = re.fullmatch(r"PRIMARY\s+KEY\s*\((.*)\)(\s+NOT\s+ENFORCED)?", item, re.I | re.S)
        if m:
            pk = _name_list(m.group(1))
            continue
        m = re.fullmatch(r"PARTITIONED\s+BY\s*\((.*)\)", item, re.I | re.S)
        if m:
            parts = _name_list(m.group(1))
            continue
        m = re.fullmatch(r"(`[^`]+`|[A-Za-z_][A-Za-z0-9_]*)\s+(.+)", item, re.S)
        if not m:
            raise SchemaError(f"cannot parse column {item!r}")
        name = m.group(1).strip("`")
        rest = m.group(2).strip()
        inline_pk = False
        mm = re.search(r"\s+PRIMARY\s+KEY(\s+NOT\s+ENFORCED)?\s*$", rest, re.I)
        if mm:
            inline_pk = True
            rest = rest[: mm.start()].strip()
        not_null = False
        mm = re.search(r"\s+NOT\s+NULL\s*$", rest, re.I)
        if mm:
            not_null = True
            rest = rest[: mm.start()].strip()
        columns.append(Column(name, parse_type(rest), not_null))
        if inline_pk:
            pk = [name]
    append_table = False
    for ann in annotations:
        m = re.search(r"primary-key\s*=\s*([A-Za-z0-9_,\s]+?)\s*(?:\)|$|;)", ann + ")")
        if m:
            pk = _name_list(m.group(1))
        if re.search(r"append table", ann, re.I):
            append_table = True
        m = re.search(r"\+\s*constant columns\s+(\w+)\s*\.\.\s*(\w+)", ann)
        if m:
            notes.append(f"schema annotation: {ann}")
    if "primary-key" in table_options:
        pk = _name_list(table_options["primary-key"].split("(")[0])
    names = [c.name.lower() for c in columns]
    for k in pk + parts:
        if k.lower() not in names:
            raise SchemaError(f"key/partition column {k!r} is not a column")
    if not columns:
        raise SchemaError("no columns")
    return Schema(columns, pk, parts, notes, append_table or not pk)


# =====================================================================================
# Values: JSON vector values -> Spark SQL literals; normalisation for comparison
# =====================================================================================


class UnsupportedValue(SchemaError):
    pass


def sql_string(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def literal(value: Any, t: Tuple) -> str:
    """A Spark SQL expression of type ``t`` for the vector value ``value``."""
    st = spark_type(t)
    if value is None:
        return f"cast(null as {st})"
    if isinstance(value, dict) and "map" not in value:
        raise UnsupportedValue(f"value {value!r} ({', '.join(value)}: serialized sketch/bitmap bytes)")
    kind = t[0]
    if kind in ("int", "bigint", "smallint", "tinyint"):
        if isinstance(value, bool) or not isinstance(value, int):
            raise UnsupportedValue(f"{value!r} is not an integer")
        return f"cast({value} as {st})"
    if kind in ("float", "double"):
        return f"cast('{float(value)!r}' as {st})"
    if kind == "boolean":
        return "true" if value else "false"
    if kind == "decimal":
        return f"cast('{value}' as {st})"
    if kind == "string":
        return sql_string(str(value))
    if kind == "binary":
        if isinstance(value, str):
            return f"cast({sql_string(value)} as binary)"
        raise UnsupportedValue(f"binary value {value!r}")
    if kind == "date":
        return f"date'{value}'"
    if kind == "timestamp":
        return f"timestamp'{str(value).replace('T', ' ')}'"
    if kind == "array":
        if not isinstance(value, list):
            raise UnsupportedValue(f"{value!r} is not an array")
        return f"cast(array({', '.join(literal(v, t[1]) for v in value)}) as {st})"
    if kind == "map":
        if isinstance(value, dict):
            pairs = value["map"]
        else:
            raise UnsupportedValue(f"{value!r} is not a map")
        flat = ", ".join(f"{literal(k, t[1])}, {literal(v, t[2])}" for k, v in pairs)
        return f"cast(map({flat}) as {st})"
    if kind == "struct":
        if not isinstance(value, list) or len(value) != len(t[1]):
            raise UnsupportedValue(f"{value!r} does not match {st}")
        inner = ", ".join(f"{sql_string(n)}, {literal(v, ft)}" for (n, ft), v in zip(t[1], value))
        return f"cast(named_struct({inner}) as {st})"
    raise UnsupportedValue(f"no literal for type {st}")


def quote(name: str) -> str:
    return f"`{name}`"


def values_sql(columns: Sequence[Column], rows: Sequence[Sequence[Any]], order_column: Optional[str]) -> str:
    """``select ... from values ...`` for ``rows`` = [[kind, v1, ...], ...]."""
    names = [c.name for c in columns]
    out_cols = [quote(n) for n in names] + ["rowkind"] + ([quote(order_column)] if order_column else [])
    if not rows:
        sel = ", ".join(
            [f"cast(null as {c.spark}) as {quote(c.name)}" for c in columns]
            + ["cast(null as string) as rowkind"]
            + ([f"cast(null as bigint) as {quote(order_column)}"] if order_column else [])
        )
        return f"select {sel}\nwhere false"
    lines = []
    for i, row in enumerate(rows):
        kind, vals = row[0], row[1:]
        cells = [literal(v, c.type) for v, c in zip(vals, columns)] + [sql_string(kind)]
        if order_column:
            cells.append(f"cast({i} as bigint)")
        lines.append("  (" + ", ".join(cells) + ")")
    alias = ", ".join(f"c{i}" for i in range(len(out_cols)))
    sel = ", ".join(f"c{i} as {n}" for i, n in enumerate(out_cols))
    return f"select {sel}\nfrom values\n" + ",\n".join(lines) + f"\nas v({alias})"


def _f32(x: float) -> bytes:
    return struct.pack(">f", float(x))


def _f64(x: float) -> bytes:
    return struct.pack(">d", float(x))


def canon(value: Any, t: Tuple, any_order: bool = False) -> Any:
    """Hashable canonical form of an actual (Spark -> Python) or expected (JSON) value."""
    if value is None:
        return None
    kind = t[0]
    if kind == "float":
        return ("f32", _f32(value))
    if kind == "double":
        return ("f64", _f64(value))
    if kind == "decimal":
        if isinstance(value, decimal.Decimal):
            return format(value, "f")
        return str(value)
    if kind == "date":
        return value.isoformat() if isinstance(value, (_dt.date, _dt.datetime)) else str(value)
    if kind == "timestamp":
        if isinstance(value, _dt.datetime):
            return value.replace(tzinfo=None).isoformat(timespec="seconds")
        return str(value).replace(" ", "T")
    if kind in ("int", "bigint", "smallint", "tinyint"):
        return int(value)
    if kind == "boolean":
        return bool(value)
    if kind == "binary":
        if isinstance(value, str):
            return value.encode("utf-8")
        if isinstance(value, dict):
            return ("json", json.dumps(value, sort_keys=True))
        return bytes(value)
    if kind == "string":
        return str(value)
    if kind == "array":
        elems = [canon(v, t[1], any_order) for v in value]
        if any_order:
            elems.sort(key=repr)
        return tuple(elems)
    if kind == "map":
        if isinstance(value, dict) and set(value) == {"map"}:
            pairs = value["map"]
        elif isinstance(value, dict):
            pairs = list(value.items())
        else:
            pairs = list(value)
        entries = ((canon(k, t[1], any_order), canon(v, t[2], any_order)) for k, v in pairs)
        return ("map", tuple(sorted(entries, key=repr)))
    if kind == "struct":
        if isinstance(value, dict):
            value = [value[n] for n, _ in t[1]]
        return tuple(canon(v, ft, any_order) for v, (_, ft) in zip(value, t[1]))
    return value


def canon_row(row: Sequence[Any], types: Sequence[Tuple], any_order: bool = False) -> Tuple:
    return tuple(canon(v, t, any_order) for v, t in zip(row, types))


def compare_rows(
    actual: Sequence[Sequence[Any]],
    expected: Sequence[Sequence[Any]],
    types: Sequence[Tuple],
    ordered: bool = False,
    any_order: bool = False,
    key_positions: Optional[Sequence[int]] = None,
) -> Optional[str]:
    """None when equal, else a readable difference.

    ``ordered`` with ``key_positions``: multiset equality plus, per key, the same row order
    (a changelog has no global order across keys; -U must precede its +U).
    ``ordered`` without keys: exact list order."""
    a = [canon_row(r, types, any_order) for r in actual]
    e = [canon_row(r, types, any_order) for r in expected]
    ca, ce = collections.Counter(a), collections.Counter(e)
    if ca != ce:
        missing = list((ce - ca).elements())
        extra = list((ca - ce).elements())
        return f"rows differ: missing {_show(missing)}; unexpected {_show(extra)}; actual {_show(a)}"
    if ordered:
        if key_positions is None:
            if a != e:
                return f"row order differs: expected {_show(e)}; actual {_show(a)}"
        else:
            def per_key(rows):
                out: Dict[Any, List] = collections.defaultdict(list)
                for r in rows:
                    out[tuple(r[i] for i in key_positions)].append(r)
                return out

            pa, pe = per_key(a), per_key(e)
            for k in pe:
                if pa.get(k) != pe[k]:
                    return f"order within key {k} differs: expected {_show(pe[k])}; actual {_show(pa.get(k))}"
    return None


def _show(rows: Any) -> str:
    def plain(v):
        if isinstance(v, tuple) and len(v) == 2 and v[0] in ("f32", "f64"):
            return struct.unpack(">f" if v[0] == "f32" else ">d", v[1])[0]
        if isinstance(v, tuple) and len(v) == 2 and v[0] == "map":
            return {"map": [[plain(k), plain(x)] for k, x in v[1]]}
        if isinstance(v, (tuple, list)):
            return [plain(x) for x in v]
        if isinstance(v, bytes):
            return v.hex()
        return v

    return json.dumps(plain(rows), default=str)


def error_matches(expected: str, actual: str) -> Tuple[bool, str]:
    """Whether an error text contains the expected message: whole text (whitespace-normalised),
    else its key part (up to the first ', ' / '. ' / ':' -- a Python traceback may wrap or
    re-word the tail)."""
    norm = lambda s: re.sub(r"\s+", " ", s or "").strip()  # noqa: E731
    e, a = norm(expected), norm(actual)
    if e and e in a:
        return True, "full message"
    if e.rstrip(".") and e.rstrip(".") in a:
        return True, "full message (without final period)"
    key = re.split(r",\s|\.\s|:\s", e, maxsplit=1)[0].rstrip(".")
    if len(key) >= 12 and key in a:
        return True, f"key part {key!r}"
    return False, ""


# =====================================================================================
# Options
# =====================================================================================

#: Paimon options that describe storage, writer resources or engine-side jobs rather than what
#: a pk_table stores or emits; they are dropped (with a note) before the options reach pk_table.
PHYSICAL_OPTIONS: Dict[str, str] = {
    "file.format": "storage file format (pk_table stores parquet)",
    "changelog-producer.compaction-interval": "Flink compaction timer (every pk_table commit is a full compaction)",
    "local-merge-buffer-size": "Flink local-merge buffer (a memory setting; merging is the same)",
    "write-buffer-spillable": "writer memory setting",
    "write-buffer-size": "writer memory setting",
    "write-only": "disables writer compaction (pk_table compacts every commit)",
    "sink.key-only-deletes.enabled": "Flink sink option; the key-only -D rows are committed as given (NULL values)",
    "commit.force-compact": "forces a compaction per commit (every pk_table commit is one)",
    "deletion-vectors.enabled": (
        "merge-on-write file layout; logical results are identical (snapshot ids are mapped, see rules)"
    ),
    "deletion-vectors.bitmap64": "deletion-vector bitmap format",
    "deletion-vectors.merge-on-read": "read-side visibility of level-0 files",
    "delete.force-produce-changelog": "a DELETE is always a -D commit in pk_table, so its changelog is always produced",
    "changelog-producer.lookup-wait": "Flink commit/compaction scheduling",
    "num-sorted-run.compaction-trigger": "compaction scheduling",
    "num-sorted-run.stop-trigger": "compaction scheduling",
    "target-file-size": "file sizing",
    "snapshot.num-retained.min": "snapshot expiration",
    "snapshot.num-retained.max": "snapshot expiration",
    "dynamic-bucket.target-row-num": "dynamic bucket sizing",
    "table-read.sequence-number.enabled": "read option of $audit_log (_SEQUENCE_NUMBER column)",
    "force-lookup": "lookup compaction (results identical; snapshot ids mapped)",
}


def _engine(options: Dict[str, str]) -> str:
    return options.get("merge-engine", "deduplicate")


def expand_options(table_options: Dict[str, str]) -> Tuple[List[Tuple[str, Dict[str, str]]], List[str]]:
    """``'a | b'`` parameterised options -> [(label, options)], notes.

    ``'x (<v> only)'`` keeps ``x`` only in variants where another option has value ``v``;
    other parenthesised remarks are dropped into the notes."""
    notes: List[str] = []
    axes: List[Tuple[str, List[Tuple[str, Optional[str]]]]] = []
    for key, raw in table_options.items():
        raw = str(raw)
        remark = None
        m = re.match(r"^(.*?)\s*\((.*)\)\s*$", raw, re.S)
        value = raw
        if m:
            value, remark = m.group(1).strip(), m.group(2).strip()
        cond = None
        if remark and re.search(r"\bsic\b|not a recognised key", remark):
            notes.append(f"option '{key}' not passed: {remark} -- Paimon ignores unknown keys, lakerank "
                         "rejects them")
            continue
        if remark:
            mm = re.fullmatch(r"([\w.\-]+) only", remark)
            if mm:
                cond = mm.group(1)
            elif not re.fullmatch(r"same expectations", remark):
                notes.append(f"option {key}: remark ({remark})")
        alts = [a.strip() for a in value.split("|")] if "|" in value else [value.strip()]
        axes.append((key, [(a, cond) for a in alts]))
    variants: List[Tuple[str, Dict[str, str]]] = []
    multi = [k for k, alts in axes if len(alts) > 1]
    for combo in itertools.product(*[alts for _, alts in axes]):
        opts = {k: v for (k, _), (v, _c) in zip(axes, combo)}
        for (k, _), (_v, c) in zip(axes, combo):
            if c is not None and c not in opts.values():
                del opts[k]
        label = ",".join(f"{k}={opts[k]}" for k in multi if k in opts)
        variants.append((label, opts))
    # variants that differ only in physical options collapse
    seen, out = set(), []
    for label, opts in variants:
        key = tuple(sorted((k, v) for k, v in opts.items() if k not in PHYSICAL_OPTIONS))
        if key in seen:
            continue
        seen.add(key)
        out.append((label, opts))
    if len(out) < len(variants):
        notes.append("variants differing only in physical options run once")
    if len(out) == 1:
        out = [("", out[0][1])]
    else:
        # recompute labels from the axes that still differ
        diff = [k for k in multi if len({o.get(k) for _, o in out}) > 1]
        out = [(",".join(f"{k}={o[k]}" for k in diff if k in o) or label, o) for label, o in out]
    return out, notes


_KERNEL_PROBE: Dict[Tuple[str, str], bool] = {}


def kernel_accepts(key: str, value: str) -> Optional[bool]:
    """Whether lakerank's option parser (python_udfs/paimon/validation.py) accepts ``key=value`` on
    its own (None when the parser cannot be imported)."""
    if (key, value) in _KERNEL_PROBE:
        return _KERNEL_PROBE[(key, value)]
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    try:
        from python_udfs.paimon.errors import PaimonOptionError
        from python_udfs.paimon.validation import parse_options
    except Exception:  # noqa: BLE001 - kernel not written yet / broken
        return None
    try:
        parse_options({key: value}, [("k", "int"), ("v", "int")], ["k"], [])
        ok = True
    except PaimonOptionError:
        ok = False
    except Exception:  # noqa: BLE001
        ok = False
    _KERNEL_PROBE[(key, value)] = ok
    return ok


def lakerank_options(options: Dict[str, str]) -> Tuple[Dict[str, str], List[str]]:
    """The options handed to pk_table (verbatim Paimon keys) and notes on the dropped ones.

    Physical options (PHYSICAL_OPTIONS) are passed verbatim when lakerank's option parser accepts
    them, else dropped with a note; keys Paimon itself ignores (misspelt, marked 'sic' in the
    vector) are dropped; ``primary-key`` becomes pk_table's ``primary_key`` config."""
    out, notes = {}, []
    for k, v in options.items():
        v = str(v)
        if k == "primary-key":
            continue  # pk_table's primary_key config
        if re.search(r"\(sic\b", v):
            notes.append(f"option '{k}' not passed: not a Paimon option key, Paimon ignores it "
                         "(lakerank rejects unknown keys)")
            continue
        if k in PHYSICAL_OPTIONS:
            if kernel_accepts(k, v):
                out[k] = v
                notes.append(f"option '{k}'='{v}' passed (no logical effect: {PHYSICAL_OPTIONS[k]})")
            else:
                notes.append(f"option '{k}'='{v}' not passed (not accepted by lakerank's option parser): "
                             f"{PHYSICAL_OPTIONS[k]}")
            continue
        out[k] = v
    return out, notes


# =====================================================================================
# Capabilities of the materialization (read from its source, so the plan follows it)
# =====================================================================================


def _grep(pattern: str, dirs: Iterable[pathlib.Path], exts=(".sql", ".py")) -> bool:
    rx = re.compile(pattern)
    for d in dirs:
        if not d.exists():
            continue
        for p in d.rglob("*"):
            if p.suffix in exts and p.is_file():
                try:
                    if rx.search(p.read_text(encoding="utf-8", errors="replace")):
                        return True
                except OSError:
                    continue
    return False


@dataclass(frozen=True)
class Capabilities:
    full_compaction_var: bool
    immutable_option_check: bool

    @staticmethod
    def code_dirs(root: pathlib.Path) -> List[pathlib.Path]:
        """Where the materialization's code lives; each must exist (a moved folder would
        silently turn features off and skip vectors)."""
        dirs = [root / "lakerank_lib" / "macros", root / "adapter", root / "python_udfs"]
        missing = [str(d) for d in dirs if not d.is_dir()]
        if missing:
            raise FileNotFoundError(f"paimon_vectors: code folders not found: {missing}")
        return dirs

    @staticmethod
    def detect(root: pathlib.Path = ROOT) -> "Capabilities":
        return Capabilities(
            full_compaction_var=_grep(r"lakerank_full_compaction", Capabilities.code_dirs(root)),
            immutable_option_check=_grep(r"Cannot change", Capabilities.code_dirs(root)),
        )


# =====================================================================================
# Plans
# =====================================================================================


@dataclass
class RunCommit:
    """One ``dbt run`` of the model (one commit). ``rows`` = [[kind, v...]], or ``input_sql``
    (a SELECT over ``{{ this }}``) for DELETE/UPDATE."""

    index: str
    rows: List[List[Any]]
    options: Dict[str, str]
    schema: Schema
    full_compaction: bool = False
    input_sql: Optional[str] = None
    expect_error: Optional[str] = None
    label: str = ""
    marker: Optional[int] = None  # commit ordinal after this run (None for runs expected to fail)

    @property
    def is_assertion(self) -> bool:
        return self.expect_error is not None


@dataclass
class Check:
    """A comparison. ``sql`` may contain ``{{REL}}``, ``{{CHANGES:a:b}}``, ``{{AS_OF:m}}``
    (``a``, ``b``, ``m`` are commit markers resolved to snapshot ids at run time)."""

    index: str
    what: str
    sql: str
    expected: List[List[Any]]
    ordered: bool = False
    any_order: bool = False
    key_positions: Optional[List[int]] = None
    expect_error: Optional[str] = None
    drop_columns: int = 0  # trailing actual columns to ignore
    prefix_rows: Optional[str] = None  # a second SQL whose rows are prepended (stream full start)


@dataclass
class Skipped:
    index: str
    what: str
    reason: str
    assertion: bool


@dataclass
class Plan:
    vector_id: str
    label: str  # sub-case / variant label ("" for the whole vector)
    model: str
    schema: Schema
    options: Dict[str, str]
    primary_key: List[str]
    partition_by: List[str]
    order_column: Optional[str]
    steps: List[Any] = field(default_factory=list)  # RunCommit | Check
    skipped: List[Skipped] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    unmappable: Optional[str] = None

    @property
    def mapped_assertions(self) -> int:
        return sum(1 for s in self.steps if isinstance(s, Check) or (isinstance(s, RunCommit) and s.is_assertion))

    @property
    def skipped_assertions(self) -> List[Skipped]:
        return [s for s in self.skipped if s.assertion]

    @property
    def title(self) -> str:
        return self.vector_id + (f"[{self.label}]" if self.label else "")


def platform(vector: Dict[str, Any]) -> str:
    src = vector.get("source", "")
    if "paimon-flink" in src:
        return "flink"
    if "paimon-spark" in src:
        return "spark"
    if "paimon-core" in src:
        return "core"
    if src.startswith("docs/"):
        return "docs"
    return "other"


def _model_name(vector_id: str, label_idx: int) -> str:
    base = "v_" + re.sub(r"[^a-z0-9]+", "_", vector_id.lower()).strip("_")
    return base + (f"_{label_idx}" if label_idx else "")


def two_snapshots_per_commit(options: Dict[str, str], plat: str) -> bool:
    producer = options.get("changelog-producer", "none")
    return (
        producer == "lookup"
        or options.get("deletion-vectors.enabled") == "true"
        or _engine(options) == "first-row"
        or options.get("force-lookup") == "true"
        or options.get("commit.force-compact") == "true"
        or (producer == "full-compaction" and plat in ("flink", "docs"))
    )


def commit_of_snapshot(snapshot: int, options: Dict[str, str], plat: str) -> int:
    """Paimon snapshot id -> lakerank commit ordinal (see the module docstring)."""
    if not two_snapshots_per_commit(options, plat):
        return snapshot
    if snapshot % 2 == 0:
        return snapshot // 2
    c = (snapshot + 1) // 2
    return c - 1 if options.get("deletion-vectors.enabled") == "true" else c


_DELETE = re.compile(r"^\s*DELETE\s+FROM\s+(\S+)\s+WHERE\s+(.+?)\s*;?\s*$", re.I | re.S)
_UPDATE = re.compile(r"^\s*UPDATE\s+(\S+)\s+SET\s+(.+?)\s+WHERE\s+(.+?)\s*;?\s*$", re.I | re.S)
_ALTER_SET = re.compile(r"^\s*ALTER\s+TABLE\s+(\S+)\s+SET\s+(?:TBLPROPERTIES\s*)?\((.*)\)\s*;?\s*$", re.I | re.S)
_ALTER_MODIFY = re.compile(r"^\s*ALTER\s+TABLE\s+(\S+)\s+MODIFY\s+(\S+)\s+(.+?)\s*;?\s*$", re.I | re.S)
_KV = re.compile(r"'([^']*)'\s*=\s*'([^']*)'")
_HINT = re.compile(r"/\*\+\s*OPTIONS\s*\((.*?)\)\s*\*/", re.I | re.S)


class Planner:
    def __init__(self, vector: Dict[str, Any], schema: Schema, options: Dict[str, str], label: str,
                 model: str, caps: Capabilities, order_column: Optional[str], exact_commits: bool):
        self.v = vector
        self.plat = platform(vector)
        self.caps = caps
        self.schema = schema
        self.paimon_options = dict(options)  # as Paimon sees them (for rules)
        self.options, notes = lakerank_options(options)
        self.plan = Plan(vector["id"], label, model, schema, dict(self.options), list(schema.primary_key),
                         list(schema.partition_by), order_column)
        self.plan.notes.extend(notes)
        self.order_column = order_column
        self.exact_commits = exact_commits
        producer = self.options.get("changelog-producer", "none")
        self.explicit_fc = producer == "full-compaction" and "full-compaction.delta-commits" not in self.options
        if self.explicit_fc and self.plat in ("flink", "docs"):
            self.options["full-compaction.delta-commits"] = "1"
            self.plan.options = dict(self.options)
            self.plan.notes.append(
                "Flink compacts fully after every commit with changelog-producer=full-compaction: "
                "'full-compaction.delta-commits'='1' passed")
            self.explicit_fc = False
        self.pending: List[List[Any]] = []
        self.pending_compact = False
        self.commits = 0  # commit marker
        self.commit_info: Dict[int, Dict[str, Any]] = {}  # marker -> {compacted, fc_unfaithful, partition_drop}
        self.last_compaction = 0
        self.stream: Optional[Dict[str, Any]] = None
        self.last_check = 0
        self.diverged: Optional[str] = None
        self.tags: set = set()
        self.any_commit = False
        self.refers_to_snapshots = self._refers_to_snapshots(vector)

    # ---------------------------------------------------------------- helpers
    @staticmethod
    def _refers_to_snapshots(vector) -> bool:
        text = json.dumps(vector)
        return bool(re.search(r"snapshot-id|VERSION AS OF|incremental|paimon_incremental", text, re.I))

    def skip(self, index: str, what: str, reason: str, assertion: bool, diverge: bool = False) -> None:
        self.plan.skipped.append(Skipped(index, what, reason, assertion))
        if diverge and not self.diverged:
            self.diverged = f"step {index} ({what}) was not executed: {reason}"

    def cols_sql(self, schema: Optional[Schema] = None) -> str:
        return ", ".join(quote(c.name) for c in (schema or self.schema).columns)

    def add_commit(self, index: str, rows: List[List[Any]], *, input_sql: Optional[str] = None,
                   expect_error: Optional[str] = None, label: str = "", options: Optional[Dict[str, str]] = None,
                   partition_drop: bool = False) -> Optional[RunCommit]:
        full = self.pending_compact
        self.pending_compact = False
        rc = RunCommit(index, rows, dict(options if options is not None else self.options), self.schema,
                       full_compaction=full and self.explicit_fc and self.caps.full_compaction_var,
                       input_sql=input_sql, expect_error=expect_error, label=label)
        if expect_error is None:
            self.commits += 1
            rc.marker = self.commits
            compacted = (not self.explicit_fc) or full
            self.commit_info[self.commits] = {
                "compacted": compacted,
                "fc_unfaithful": self.explicit_fc and not self.caps.full_compaction_var and not full,
                "fc_var_missing": self.explicit_fc and full and not self.caps.full_compaction_var,
                "partition_drop": partition_drop,
            }
            if compacted:
                self.last_compaction = self.commits
            self.any_commit = True
        self.plan.steps.append(rc)
        return rc

    def flush(self, index: str, each_row: bool = False) -> None:
        rows, self.pending = self.pending, []
        if not rows:
            return
        if each_row:
            keys = [self.key_of(r) for r in rows]
            if len(set(keys)) == len(keys) and not self.refers_to_snapshots and not self.exact_commits:
                self.plan.notes.append(
                    f"step {index}: commit_each_row over {len(rows)} distinct keys run as one commit "
                    "(keys merge independently; PAIMON_VECTORS_EXACT_COMMITS=1 runs one commit per row)")
                self.add_commit(index, rows, label="insert (commit_each_row, coalesced)")
            else:
                for i, r in enumerate(rows):
                    self.add_commit(f"{index}.{i}", [r], label="insert (commit_each_row)")
            return
        self.add_commit(index, rows, label="insert")

    def key_of(self, row: List[Any]) -> Tuple:
        pos = [i for i, c in enumerate(self.schema.columns) if c.name in self.schema.primary_key]
        return tuple(json.dumps(row[1 + i]) for i in pos)

    # ---------------------------------------------------------------- queries
    def _rewrite_table(self, sql: str) -> Optional[str]:
        m = re.search(r"\bFROM\s+(`[^`]+`|[A-Za-z_][\w$.]*)", sql, re.I)
        if not m:
            return None
        return sql[: m.start(1)] + REL + sql[m.end(1):]

    def _expand_star(self, sql: str) -> str:
        return re.sub(r"^\s*SELECT\s+\*\s+FROM\b", lambda m: f"SELECT {self.cols_sql()} FROM", sql, flags=re.I)

    def _unnest(self, sql: str) -> str:
        # Flink: FROM t, UNNEST(arr) AS so(a, b) -> Spark: FROM t LATERAL VIEW inline(arr) so AS a, b
        m = re.search(r"FROM\s+(\S+)\s*,\s*UNNEST\((\w+)\)\s+AS\s+(\w+)\s*\(([^)]*)\)", sql, re.I)
        if not m:
            return sql
        repl = f"FROM {m.group(1)} LATERAL VIEW inline({m.group(2)}) {m.group(3)} AS {m.group(4)}"
        return sql[: m.start()] + repl + sql[m.end():]

    def plain_query_sql(self, q: str) -> Optional[str]:
        sql = self._unnest(q)
        sql = self._rewrite_table(sql)
        if sql is None:
            return None
        return self._expand_star(sql)

    def query(self, index: str, step: Dict[str, Any]) -> None:
        q = step["query"].strip()
        what = f"query {q}"
        expected = step.get("expected", step.get("expected_any_order"))
        if self.diverged:
            return self.skip(index, what, self.diverged, True)
        if not re.match(r"^\s*SELECT\b", q, re.I):
            return self.skip(index, what, "not a SQL query (reader API call with pushed-down predicate)", True)
        if not isinstance(expected, list):
            return self.skip(index, what, f"expected result is a prose description ({expected!r})", True)
        if re.search(r"\$audit_log", q, re.I) and "paimon_incremental" not in q:
            return self.skip(index, what,
                             "batch $audit_log is Paimon's merged rows with their stored kinds and uncompacted -D "
                             "tombstones, not a changelog; lakerank_lib.audit_log is the changelog and every commit "
                             "drops tombstones", True)
        system_tables = r"\$(binlog|snapshots|files|manifests|schemas|options|tags|branches|partitions|buckets)\b"
        if re.search(system_tables, q, re.I):
            return self.skip(index, what, "Paimon system table without a lakerank equivalent", True)
        any_order = step.get("array_order") == "any" or "expected_any_order" in step \
            or "any order" in (step.get("note") or "")
        ordered = bool(step.get("ordered"))
        m = re.search(r"paimon_incremental_query\(\s*'([^']*)'\s*,\s*'([^']*)'\s*,\s*'([^']*)'\s*\)", q, re.I)
        if m:
            return self.incremental(index, what, m, expected, ordered, any_order)
        if re.search(r"paimon_incremental|TIMESTAMP\s+AS\s+OF|FOR\s+SYSTEM_TIME", q, re.I):
            return self.skip(index, what, "timestamp / tag based read (no timestamps or tags in lakerank)", True)
        hints = {}
        hm = _HINT.search(q)
        if hm:
            hints = dict(_KV.findall(hm.group(1)))
            q = (q[: hm.start()] + q[hm.end():]).strip()
        vm = re.search(r"\s+VERSION\s+AS\s+OF\s+('?)([^'\s]+)\1", q, re.I)
        as_of: Optional[int] = None
        if vm:
            if vm.group(1):
                return self.skip(index, what, f"VERSION AS OF '{vm.group(2)}' reads a tag (no tags in lakerank)", True)
            as_of = int(vm.group(2))
            q = q[: vm.start()] + q[vm.end():]
        if hints:
            extra = set(hints) - {"scan.snapshot-id", "scan.mode"}
            mode = hints.get("scan.mode", "from-snapshot-full")
            if extra or mode not in ("from-snapshot-full", "from-snapshot", "default"):
                return self.skip(index, what,
                                 f"read options {hints} (only scan.snapshot-id is mapped, to lakerank_lib.as_of)", True)
            if "scan.snapshot-id" in hints:
                as_of = int(hints["scan.snapshot-id"])
        sql = self.plain_query_sql(q)
        if sql is None:
            return self.skip(index, what, "no FROM <table> to rewrite", True)
        if as_of is not None:
            commit = commit_of_snapshot(as_of, self.paimon_options, self.plat)
            if commit < 0 or commit > self.commits:
                return self.skip(index, what,
                                 f"snapshot {as_of} maps to commit {commit}, outside 0..{self.commits}", True)
            sql = sql.replace(REL, "{{AS_OF:%d}}" % commit)
            what += f"  [snapshot {as_of} -> after commit #{commit}]"
        self.plan.steps.append(Check(index, what, sql, expected, ordered=ordered, any_order=any_order))

    def incremental(self, index, what, m, expected, ordered, any_order) -> None:
        table, start, end = m.group(1), m.group(2), m.group(3)
        if not (start.isdigit() and end.isdigit()):
            return self.skip(index, what, "incremental read between tags (tags are not mapped; between tags Paimon "
                                          "diffs the two snapshots)", True)
        a = commit_of_snapshot(int(start), self.paimon_options, self.plat) if int(start) else 0
        b = commit_of_snapshot(int(end), self.paimon_options, self.plat)
        audit = "$audit_log" in table
        cols = self.cols_sql()
        if audit:
            sql = f"SELECT rowkind, {cols} FROM {{{{CHANGES:{a}:{b}}}}} AS ch"
        else:
            sql = f"SELECT {cols} FROM {{{{CHANGES:{a}:{b}}}}} AS ch WHERE rowkind IN ('+I', '+U')"
        self.plan.steps.append(Check(index, what + f"  [lakerank_lib.changes(commits {a}..{b}]]", sql, expected,
                                     ordered=ordered, any_order=any_order))

    # ---------------------------------------------------------------- streams / changelog
    def stream_query(self, index: str, step: Dict[str, Any]) -> None:
        q = step["stream_query"]
        started = step.get("started", "")
        audit = bool(re.search(r"\$audit_log", q))
        start = self.commits
        full_at = None
        hm = _HINT.search(q)
        if hm:
            hints = dict(_KV.findall(hm.group(1)))
            if hints.get("scan.mode") == "from-snapshot-full" and "scan.snapshot-id" in hints:
                full_at = commit_of_snapshot(int(hints["scan.snapshot-id"]), self.paimon_options, self.plat)
                start = full_at
            else:
                self.stream = {"skip": f"streaming read options {hints} are not mapped"}
                return
        elif not re.search(r"before the first write", started, re.I) and self.commits > 0:
            full_at = self.commits  # default latest-full: current snapshot as +I, then changes
        self.stream = {"audit": audit, "start": start, "full_at": full_at, "query": q,
                       "closed_after_first": "closed after the first" in started, "checks": 0}
        self.last_check = start

    def expected_changelog(self, index: str, step: Dict[str, Any]) -> None:
        expected = step["expected_changelog"]
        what = "expected_changelog " + json.dumps(expected)[:120]
        if self.diverged:
            return self.skip(index, what, self.diverged, True)
        scope = step.get("scope", "")
        if self.stream is None and not scope:
            return self.skip(index, what, "changelog check without a stream or scope", True)
        if self.stream is not None and "skip" in self.stream:
            return self.skip(index, what, self.stream["skip"], True)
        if self.stream is not None and self.stream["closed_after_first"] and self.stream["checks"] >= 1:
            return self.skip(index, what, "the stream was closed", True)
        if self.stream is None or "latest snapshot" in scope:
            a, b = max(self.commits - 1, 0), self.commits
            if "latest snapshot" not in scope:
                a = self.last_check
        else:
            a, b = self.last_check, self.commits
        full_at = self.stream.get("full_at") if self.stream else None
        producer = self.options.get("changelog-producer", "none")
        rows = [list(r) for r in expected]
        fmt = step.get("row_format", "")
        if fmt.startswith("[flink_row_kind"):
            if any(r[0] != "+I" for r in rows):
                return self.skip(index, what, "Flink row kind other than +I on an $audit_log stream", True)
            rows = [r[1:] for r in rows]
        # Flink's ChangelogNormalize: -U/+U on a changelog-producer=none table
        if producer == "none" and self.plat == "flink" and not (self.stream or {}).get("audit") \
                and any(r[0] == "-U" for r in rows):
            return self.skip(index, what, "Flink's ChangelogNormalize operator turns the raw upsert stream of a "
                                          "changelog-producer=none table into -U/+U (Flink-only; lakerank_lib.changes "
                                          "gives Paimon's per-commit delta, Spark semantics)", True)
        # full-compaction with explicit compactions: the changelog of a window is only Paimon's
        # when every commit in it (and since the last compaction before it) is mapped faithfully
        lo = a
        while lo > 0 and not self.commit_info.get(lo, {}).get("compacted", True):
            lo -= 1
        for c in range(max(lo, 1), b + 1):
            info = self.commit_info.get(c, {})
            if info.get("fc_unfaithful") or info.get("fc_var_missing"):
                return self.skip(index, what, "changelog-producer=full-compaction with explicit full compactions "
                                              "needs the dbt var lakerank_full_compaction (not implemented in "
                                              "lakerank_lib/macros/materializations/pk_table/): "
                                              "without it every commit "
                                              "produces the lookup changelog", True)
        for c in range(a + 1, b + 1):
            if self.commit_info.get(c, {}).get("partition_drop"):
                return self.skip(index, what, "a DELETE on partition columns only is a partition drop in Paimon "
                                              "(no -D changelog without delete.force-produce-changelog)", True)
        n = len(rows[0]) - 1 if rows else len(self.schema.columns)
        if n > len(self.schema.columns) or any(len(r) - 1 != n for r in rows):
            return self.skip(index, what, "changelog rows do not match the schema", True)
        cols = ", ".join(quote(c.name) for c in self.schema.columns[:n])
        sql = f"SELECT rowkind, {cols} FROM {{{{CHANGES:{a}:{b}}}}} AS ch"
        prefix = None
        if full_at is not None and self.stream and self.stream["checks"] == 0:
            prefix = f"SELECT '+I' AS rowkind, {cols} FROM {{{{AS_OF:{full_at}}}}} AS snap"
        key_pos = [1 + i for i, c in enumerate(self.schema.columns[:n]) if c.name in self.schema.primary_key]
        any_order = step.get("array_order") == "any" or bool(
            re.search(r"any order|InAnyOrder", (step.get("note") or "") + " " + (self.v.get("notes") or "")))
        ordered = bool(step.get("ordered"))
        note = (f"  [lakerank_lib.changes(commits {a}..{b}]"
                + (f", after as_of({full_at}) as +I" if prefix else "") + "]")
        if n < len(self.schema.columns):
            note += f" (first {n} columns compared)"
        self.plan.steps.append(Check(index, what + note, sql, rows, ordered=ordered, any_order=any_order,
                                     key_positions=key_pos if ordered else None, prefix_rows=prefix))
        if self.stream is not None:
            self.stream["checks"] += 1
        self.last_check = b

    # ---------------------------------------------------------------- statements
    def statement(self, index: str, step: Dict[str, Any]) -> None:
        st = step["statement"].strip()
        err = step.get("expected_error")
        what = f"statement {st}"
        if self.diverged:
            return self.skip(index, what, self.diverged, bool(err))
        body = re.sub(r"\s+--.*$", "", st, flags=re.M).strip()
        if re.search(r"createTag|create_tag", body):
            m = re.search(r"(?:createTag\(|create_tag\(\s*'[^']*'\s*,\s*)'([^']*)'", body)
            self.tags.add(m.group(1) if m else body)
            return self.skip(index, what, "tags are not part of lakerank (no data change)", bool(err))
        if re.match(r"^CALL\s+sys\.compact\b", body, re.I):
            if self.explicit_fc:
                if self.caps.full_compaction_var:
                    self.pending_compact = True
                    self.add_commit(index, [], label="CALL sys.compact -> run with var lakerank_full_compaction")
                    return None
                self.skip(index, what, "full compaction with changelog needs the dbt var lakerank_full_compaction "
                                       "(not implemented in lakerank_lib/macros/materializations/pk_table/)", False)
                return None
            self.plan.notes.append(f"step {index}: CALL sys.compact is a no-op (every pk_table commit is a full "
                                   "compaction that drops tombstones)")
            return None
        if body.lower() == "preparecommit":
            if err is None:
                return self.flush(index)
            rows, self.pending = self.pending, []
            self.add_commit(index, rows, expect_error=err, label="commit expected to fail")
            return None
        m = _DELETE.match(body)
        if m:
            return self.delete(index, what, m.group(2), err)
        m = _UPDATE.match(body)
        if m:
            return self.update(index, what, m.group(2), m.group(3), err)
        m = _ALTER_SET.match(body)
        if m:
            return self.alter_set(index, what, dict(_KV.findall(m.group(2))), err)
        m = _ALTER_MODIFY.match(body)
        if m:
            if self.any_commit or err:
                return self.skip(index, what, "schema evolution after data was written is not supported by pk_table "
                                              "(its layout is fixed; --full-refresh rebuilds)", bool(err), diverge=True)
            try:
                col = self.schema.column(m.group(2).strip("`"))
                col.type = parse_type(m.group(3))
            except SchemaError as exc:
                return self.skip(index, what, f"cannot map type change: {exc}", False, diverge=True)
            self.plan.notes.append(f"step {index}: {body} before any write -> column type {spark_type(col.type)}")
            return None
        if re.match(r"^CREATE\s+TABLE\b", body, re.I) and err:
            kv = dict(_KV.findall(body))
            if not kv:
                return self.skip(index, what, "cannot read the options of the CREATE TABLE", True)
            opts = dict(self.options)
            opts.update(kv)
            self.add_commit(index, [], expect_error=err, options=opts, label="run with invalid options")
            return None
        if re.match(r"^INSERT\s+OVERWRITE\b", body, re.I):
            return self.skip(index, what, "INSERT OVERWRITE (partition/table overwrite) is not a pk_table commit",
                             bool(err), diverge=True)
        if re.match(r"^INSERT\s+INTO\b", body, re.I) and err and re.search(r"not null", err, re.I):
            self.pending = []
            return self.skip(index, what, "NOT NULL enforcement: pk_table columns come from the model's SELECT "
                                          "and are nullable; no NOT NULL constraint exists", True)
        if re.match(r"^SELECT\b", body, re.I) and err:
            return self.select_error(index, what, body, err)
        verb = " ".join(body.split()[:2]).upper()
        return self.skip(index, what, f"statement not mapped ({verb} ...)", bool(err), diverge=not err)

    def select_error(self, index, what, body, err) -> None:
        hm = _HINT.search(body)
        hints = dict(_KV.findall(hm.group(1))) if hm else {}
        if set(hints) == {"scan.snapshot-id"}:
            snap = int(hints["scan.snapshot-id"])
            commit = commit_of_snapshot(snap, self.paimon_options, self.plat) if snap > 0 else snap
            sql = f"SELECT {self.cols_sql()} FROM {{{{AS_OF:{commit}}}}} AS t"
            self.plan.steps.append(Check(index, what, sql, [], expect_error=err))
            return None
        return self.skip(index, what, f"read options {hints} have no lakerank equivalent", True)

    def delete(self, index, what, cond, err) -> None:
        engine = _engine(self.paimon_options)
        o = self.paimon_options
        if engine == "first-row" or (
            engine == "partial-update" and o.get("partial-update.remove-record-on-delete") != "true"
            and not o.get("partial-update.remove-record-on-sequence-group")
        ) or (engine == "aggregation" and o.get("aggregation.remove-record-on-delete") != "true"):
            return self.skip(index, what, f"DELETE on a {engine} table without remove-record-on-delete rewrites data "
                                          "files (row-level delete, no -D record); pk_table has no such operation",
                             bool(err), diverge=True)
        if self.pending:
            self.flush(index + ".pre")
        cols = self.cols_sql() + (f", {quote(self.order_column)}" if self.order_column else "")
        sql = f"select {cols}, '-D' as rowkind from {{{{ this }}}} where {cond}"
        refs = {w.lower() for w in re.findall(r"[A-Za-z_]\w*", cond)}
        names = {c.name.lower() for c in self.schema.columns}
        partition_cols = {p.lower() for p in self.schema.partition_by}
        partition_drop = bool(self.schema.partition_by) and (refs & names) <= partition_cols \
            and self.paimon_options.get("delete.force-produce-changelog") != "true"
        self.add_commit(index, [], input_sql=sql, expect_error=err, label=f"DELETE WHERE {cond} -> -D commit",
                        partition_drop=partition_drop)

    def update(self, index, what, sets, cond, err) -> None:
        if _engine(self.paimon_options) != "deduplicate":
            return self.skip(index, what, "UPDATE on a non-deduplicate table is not mapped", bool(err), diverge=True)
        assigns = {}
        for part in _split_top(sets, ","):
            k, _, v = part.partition("=")
            assigns[k.strip().strip("`").lower()] = v.strip()
        exprs = [f"cast({assigns[c.name.lower()]} as {c.spark}) as {quote(c.name)}" if c.name.lower() in assigns
                 else quote(c.name) for c in self.schema.columns]
        if self.order_column:
            exprs.append(quote(self.order_column))
        sql = f"select {', '.join(exprs)}, '+U' as rowkind from {{{{ this }}}} where {cond}"
        self.add_commit(index, [], input_sql=sql, expect_error=err, label="UPDATE -> +U commit")

    def alter_set(self, index, what, kv: Dict[str, str], err) -> None:
        if err:
            if all(k in ("ignore-delete", "ignore-update-before") for k in kv) and not self.caps.immutable_option_check:
                return self.skip(index, what, "pk_table does not check that ignore-delete / ignore-update-before "
                                              "cannot go from true to false (no 'Cannot change' check in the "
                                              "materialization or python_udfs/paimon/validation.py)", True)
            opts = dict(self.options)
            opts.update(kv)
            self.add_commit(index, [], expect_error=err, options=opts, label=f"run with altered options {kv}")
            return None
        for k, v in kv.items():
            if k == "bucket" or k == "primary-key":
                return self.skip(index, what, f"changing '{k}' changes the table layout (pk_table refuses without "
                                              "--full-refresh)", False, diverge=True)
            if k in PHYSICAL_OPTIONS:
                self.plan.notes.append(f"step {index}: ALTER SET '{k}'='{v}' is a no-op ({PHYSICAL_OPTIONS[k]})")
                self.paimon_options[k] = v
                continue
            self.options[k] = v
            self.paimon_options[k] = v
            self.plan.notes.append(f"step {index}: ALTER SET '{k}'='{v}' -> option of the following commits")

    # ---------------------------------------------------------------- driver
    def build(self, steps: List[Dict[str, Any]]) -> Plan:
        ncols = len(self.schema.columns)
        for i, step in enumerate(steps):
            idx = str(i)
            try:
                self.step(idx, step)
            except UnsupportedValue as exc:
                self.pending = []
                self.skip(idx, _describe(step), f"value not mappable: {exc}", False, diverge=True)
        if self.pending:
            self.plan.notes.append("rows inserted but never committed are ignored")
        assert ncols == len(self.schema.columns)
        return self.plan

    def step(self, idx: str, step: Dict[str, Any]) -> None:
        if "insert" in step:
            if self.diverged:
                return None
            rows = [list(r) for r in step["insert"]]
            for r in rows:
                if len(r) - 1 != len(self.schema.columns):
                    raise UnsupportedValue(f"row {r} has {len(r) - 1} values for {len(self.schema.columns)} columns")
                for v, c in zip(r[1:], self.schema.columns):
                    literal(v, c.type)  # validate now
            if step.get("derived"):
                self.plan.notes.append(f"step {idx}: insert rows derived by the researcher (see vector notes)")
            self.pending.extend(rows)
            if step.get("commit_each_row"):
                self.flush(idx, each_row=True)
            return None
        if "commit" in step:
            if not self.diverged:
                self.flush(idx)
            return None
        if "compact" in step:
            if str(step["compact"]).lower() == "full":
                if self.explicit_fc:
                    self.pending_compact = True
                else:
                    self.plan.notes.append(f"step {idx}: full compaction is what every pk_table commit does")
            return None
        if "statement" in step:
            return self.statement(idx, step)
        if "query" in step:
            return self.query(idx, step)
        if "stream_query" in step:
            return self.stream_query(idx, step)
        if "expected_changelog" in step:
            return self.expected_changelog(idx, step)
        if set(step) <= META_STEP_KEYS:
            return None
        assertion = any(k.startswith("expected") for k in step)
        self.skip(idx, _describe(step), f"unknown step kind {sorted(step)}", assertion, diverge=not assertion)
        return None


#: Step keys that carry no action or assertion.
META_STEP_KEYS = frozenset({"comment", "note", "notes", "description", "label", "title", "explanation", "source"})


def _describe(step: Dict[str, Any]) -> str:
    for k in ("query", "statement", "stream_query", "insert", "expected_changelog"):
        if k in step:
            return f"{k} {json.dumps(step[k])[:100]}"
    return json.dumps(step)[:100]


# =====================================================================================
# Vector -> plans -> classification
# =====================================================================================


@dataclass
class Classification:
    vector_id: str
    engine: str
    level: str
    platform: str
    status: str
    reason: str
    plans: List[Plan]
    notes: List[str]

    @property
    def mapped(self) -> int:
        return sum(p.mapped_assertions for p in self.plans)

    @property
    def skipped(self) -> int:
        return sum(len(p.skipped_assertions) for p in self.plans)


def _sub_cases(steps: List[Dict[str, Any]]) -> List[Tuple[str, List[Dict[str, Any]]]]:
    cases = [s for s in steps if "case" in s and isinstance(s.get("steps"), list)]
    if cases and len(cases) == len(steps):
        return [(str(s["case"]), s["steps"]) for s in cases]
    return [("", steps)]


def _truncate_for_rows(schema: Schema, steps: List[Dict[str, Any]]) -> Tuple[Schema, Optional[str]]:
    """Rows with fewer values than the schema (constant columns omitted by the researcher):
    keep the first N columns."""
    lens = set()

    def walk(ss):
        for s in ss:
            if "insert" in s:
                for r in s["insert"]:
                    lens.add(len(r) - 1)
            if isinstance(s.get("steps"), list):
                walk(s["steps"])

    walk(steps)
    if not lens:
        return schema, None
    if len(lens) > 1:
        raise SchemaError(f"insert rows of different widths {sorted(lens)}")
    n = lens.pop()
    if n == len(schema.columns):
        return schema, None
    if n > len(schema.columns):
        raise SchemaError(f"rows have {n} values, schema {len(schema.columns)} columns")
    kept = {c.name for c in schema.columns[:n]}
    if not set(schema.primary_key + schema.partition_by) <= kept:
        raise SchemaError("omitted columns include key or partition columns")
    dropped = [c.name for c in schema.columns[n:]]
    return schema.truncated(n), (f"rows list only the first {n} columns; "
                                 f"omitted constant columns {dropped} are not created")


def classify_vector(vector: Dict[str, Any], caps: Optional[Capabilities] = None,
                    order_column: Optional[str] = None, exact_commits: Optional[bool] = None) -> Classification:
    caps = caps or Capabilities.detect()
    if order_column is None:
        order_column = os.environ.get("PAIMON_VECTORS_ORDER_COLUMN") or None
    if exact_commits is None:
        exact_commits = os.environ.get("PAIMON_VECTORS_EXACT_COMMITS", "") not in ("", "0")
    vid, level = vector["id"], vector.get("level", "")
    base = dict(vector_id=vid, engine=vector.get("engine", ""), level=level, platform=platform(vector))
    if level in KERNEL_LEVELS:
        return Classification(**base, status=KERNEL,
                              reason="covered by the kernel tests (tests/unit/test_paimon_kernel.py)",
                              plans=[], notes=[])
    if level not in TABLE_LEVELS:
        return Classification(**base, status=UNMAPPABLE, reason=f"level {level!r} is not a table-level vector",
                              plans=[], notes=[])
    try:
        schema = parse_schema(vector["schema"], {k: str(v) for k, v in vector.get("table_options", {}).items()})
        schema, trunc_note = _truncate_for_rows(schema, vector["steps"])
    except SchemaError as exc:
        return Classification(**base, status=UNMAPPABLE, reason=f"schema: {exc}", plans=[], notes=[])
    if schema.append_table:
        return Classification(**base, status=UNMAPPABLE,
                              reason="append table (no primary key): pk_table is a primary-key table",
                              plans=[], notes=[])
    if "rowkind" in [c.lower() for c in schema.names] or "_bucket" in [c.lower() for c in schema.names]:
        return Classification(**base, status=UNMAPPABLE,
                              reason="a column named rowkind/_bucket is reserved by pk_table",
                              plans=[], notes=[])
    variants, vnotes = expand_options({k: str(v) for k, v in vector.get("table_options", {}).items()})
    cases = _sub_cases(vector["steps"])
    plans: List[Plan] = []
    n = 0
    for vlabel, opts in variants:
        for clabel, steps in cases:
            label = "; ".join(x for x in (clabel, vlabel) if x)
            sch = Schema([Column(c.name, c.type, c.not_null) for c in schema.columns], list(schema.primary_key),
                         list(schema.partition_by), list(schema.notes))
            planner = Planner(vector, sch, opts, label, _model_name(vid, n), caps, order_column, exact_commits)
            n += 1
            if trunc_note:
                planner.plan.notes.append(trunc_note)
            plan = planner.build(steps)
            plan.notes[:0] = [x for x in sch.notes]
            plans.append(plan)
    mapped = sum(p.mapped_assertions for p in plans)
    skipped = [s for p in plans for s in p.skipped_assertions]
    if mapped == 0:
        reasons = sorted({s.reason for p in plans for s in p.skipped if not s.reason.startswith("step ")}) \
            or sorted({s.reason for p in plans for s in p.skipped}) or ["no assertions"]
        for p in plans:
            p.unmappable = "; ".join(reasons)
        return Classification(**base, status=UNMAPPABLE, reason="; ".join(reasons), plans=plans, notes=vnotes)
    if skipped:
        roots = sorted({s.reason for s in skipped if not s.reason.startswith("step ")}
                       | {s.reason.split(": ", 1)[-1] for s in skipped if s.reason.startswith("step ")})
        return Classification(**base, status=PARTIAL,
                              reason=f"{len(skipped)} assertion(s) skipped: " + "; ".join(roots),
                              plans=plans, notes=vnotes)
    return Classification(**base, status=PASS_FULL, reason="", plans=plans, notes=vnotes)


def classify_all(data: Optional[Dict[str, Any]] = None, caps: Optional[Capabilities] = None) -> List[Classification]:
    data = data or load_vectors()
    caps = caps or Capabilities.detect()
    return [classify_vector(v, caps) for v in data["vectors"]]


# =====================================================================================
# The document
# =====================================================================================


def render_doc(classes: List[Classification], caps: Capabilities, data: Dict[str, Any]) -> str:
    counts = collections.Counter(c.status for c in classes)
    lines = [
        "# Paimon test vectors against lakerank's `pk_table`",
        "",
        "Generated by `python3 tests/support/paimon_vectors.py --write-doc` from",
        f"`{VECTORS.relative_to(ROOT)}` (Paimon `{data.get('paimon_commit', '?')}`, tests/data/README.md); "
        "do not edit by hand.",
        "Tests: `tests/functional/test_paimon_vectors.py` runs mapped plans through real `dbt run`s",
        "(one run = one commit) and compares with the vector's expectations: every plan of a vector the kernel",
        "tests do not replay, and a set covering every Spark-side feature of the others; the rest replay through",
        "the kernel's table simulator (`tests/unit/test_paimon_kernel.py`), which must check each of their assertions",
        "(the test module's docstring).",
        "",
        "## Summary",
        "",
        "| classification | vectors |",
        "|---|---|",
        f"| pass-full (every assertion mapped) | {counts[PASS_FULL]} |",
        f"| partial (some assertions skipped, reasons below) | {counts[PARTIAL]} |",
        f"| unmappable (no assertion mapped) | {counts[UNMAPPABLE]} |",
        "| kernel (merge-function / field-aggregator unit vectors: covered by the kernel tests, "
        f"tests/unit/test_paimon_kernel.py) | {counts[KERNEL]} |",
        f"| **total** | {len(classes)} |",
        "",
        f"Mapped assertions: {sum(c.mapped for c in classes)}; skipped assertions: {sum(c.skipped for c in classes)}.",
        "",
        "Materialization capabilities detected when this was generated:",
        "- dbt var `lakerank_full_compaction` (explicit full compaction with changelog): "
        + ("implemented" if caps.full_compaction_var
           else "**not implemented** in lakerank_lib/macros/materializations/pk_table/"),
        f"- immutable `ignore-delete` / `ignore-update-before` check (\"Cannot change ... from true to false.\"): "
        f"{'implemented' if caps.immutable_option_check else '**not implemented**'}",
        "",
        "## Mapping rules",
        "",
        "- Each commit is a `dbt run -s <model>` whose SELECT is a `VALUES` list cast to the schema types plus a",
        "  `rowkind` column; arrival order = the VALUES order (pk_table's default scan order, no stored `order_by`",
        "  column; `PAIMON_VECTORS_ORDER_COLUMN=_ord` passes an explicit `order_by` column instead).",
        "- Schemas: Flink/Spark types -> Spark (`VARCHAR(n)`/`CHAR` -> string, `MULTISET<X>` -> `map<x,int>`,",
        "  `ROW<..>` -> struct, `NOT NULL` not enforced); rows listing fewer values than the schema keep the first N "
        "columns.",
        "- `DELETE FROM t WHERE c` -> a commit of `select <cols>, '-D' as rowkind from t where c`; `UPDATE` on",
        "  deduplicate -> the same with `+U`; `ALTER TABLE .. SET` -> options of later commits (physical options are",
        "  no-ops); `ALTER TABLE .. MODIFY` before any write -> column type; `CALL sys.compact` / `compact: full` ->",
        "  the dbt var `lakerank_full_compaction` when the producer is full-compaction, otherwise a no-op (every",
        "  commit is a full compaction).",
        "- Batch queries: the table name -> `lakerank.<model>`, `*` -> the schema columns (no `_bucket`);",
        "  `scan.snapshot-id` / `VERSION AS OF n` -> `lakerank_lib.as_of`; `paimon_incremental_query(t, a, b)` ->",
        "  `lakerank_lib.changes` (plain table: +I/+U rows only).",
        "- Snapshot ids: with lookup compaction (lookup producer, deletion vectors, first-row, force-lookup) or a",
        "  compaction in every commit (Flink full-compaction, commit.force-compact) commit c writes snapshots 2c-1",
        "  (APPEND) and 2c (COMPACT); 2c = state after commit c; 2c-1 = after commit c, or after c-1 with deletion",
        "  vectors (an APPEND snapshot exposes only compacted data). Otherwise snapshot n = commit n.",
        "- Streams: `expected_changelog` after a `stream_query` = `lakerank_lib.changes(rel, <last checked commit>,",
        "  <current commit>)` (rowkind + columns), order-insensitive; `ordered` checks the order within each key.",
        "  A stream started after writes (or `from-snapshot-full`) first emits `lakerank_lib.as_of` rows as +I.",
        "- Flink with `changelog-producer=full-compaction` compacts after every commit ->",
        "  `'full-compaction.delta-commits'='1'` is passed.",
        "- Values: DECIMAL as strings with scale, DATE `yyyy-MM-dd`, TIMESTAMP `yyyy-MM-ddTHH:mm:ss`, MAP as an",
        "  entry set, ROW as a list, FLOAT compared as float32 bits, DOUBLE as float64 bits.",
        "- Expected errors: the dbt run must fail and its message contain the text (or its key part, up to the",
        "  first `, ` / `. ` / `: `, when a traceback re-words the tail).",
        "",
        "## Running",
        "",
        "`python3 -m pytest -q tests/functional/test_paimon_vectors.py -p no:cacheprovider -x` (one JVM; one",
        "`LAKERANK_HOME` shared by all plans, each with its own model). Switches:",
        "`PAIMON_VECTORS_SHARED_HOME=0` (a fresh home per plan: ~13 s more per plan),",
        "`PAIMON_VECTORS_EXACT_COMMITS=1` (never coalesce `commit_each_row`),",
        "`PAIMON_VECTORS_ORDER_COLUMN=_ord` (explicit `order_by` column; it is stored and takes part in merges,",
        "e.g. pu-16 then fails option validation: a partial-update default aggregate needs a sequence group for "
        "`_ord`).",
        "",
        "## Vectors",
        "",
        "| id | engine | platform | level | classification | mapped / skipped assertions |",
        "|---|---|---|---|---|---|",
    ]
    for c in classes:
        lines.append(f"| {c.vector_id} | {_md(c.engine)} | {c.platform} | {c.level} | {c.status} "
                     f"| {c.mapped} / {c.skipped} |")
    lines += ["", "## Details", ""]
    for c in classes:
        lines.append(f"### {c.vector_id} — {c.status}")
        lines.append("")
        lines.append(f"engine `{c.engine}`, {c.platform}, level `{c.level}`")
        if c.status in (UNMAPPABLE, KERNEL, PARTIAL):
            lines.append(f"- {c.status}: {_md(c.reason)}")
        for note in c.notes:
            lines.append(f"- note: {note}")
        if c.status != KERNEL:
            for p in c.plans:
                head = f"- plan `{p.model}`" + (f" ({p.label})" if p.label else "") + \
                    f": {p.mapped_assertions} mapped, {len(p.skipped_assertions)} skipped assertion(s); " \
                    f"options {json.dumps(p.options, sort_keys=True)}"
                lines.append(head)
                for s in p.skipped:
                    kind = "assertion" if s.assertion else "step"
                    lines.append(f"  - skipped {kind} #{s.index} `{_md(s.what)}`: {_md(s.reason)}")
                for n in p.notes:
                    lines.append(f"  - {_md(n)}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _md(s: str) -> str:
    s = s.replace("|", "\\|").replace("\n", " ")
    return s if len(s) < 300 else s[:297] + "..."


def doc_status_table(text: str) -> Dict[str, str]:
    """vector id -> classification, read back from the doc's table."""
    out = {}
    for m in re.finditer(r"^\| ([^|\s]+) \| .* \| (pass-full|partial|unmappable|kernel) \| \d+ / \d+ \|$", text, re.M):
        out[m.group(1).strip()] = m.group(2)
    return out


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write-doc", action="store_true", help=f"write {DOC_PATH.relative_to(ROOT)}")
    ap.add_argument("--show", metavar="ID", help="print the plans of one vector")
    args = ap.parse_args(argv)
    data = load_vectors()
    caps = Capabilities.detect()
    classes = [classify_vector(v, caps) for v in data["vectors"]]
    if args.show:
        for c in classes:
            if c.vector_id == args.show:
                print(c.status, c.reason)
                for p in c.plans:
                    print(f"== {p.title} model={p.model} options={p.options} pk={p.primary_key} parts={p.partition_by}")
                    print("   columns:", [(col.name, col.spark) for col in p.schema.columns])
                    for s in p.steps:
                        print("  ", s)
                    for s in p.skipped:
                        print("   SKIP", s)
                    for n in p.notes:
                        print("   NOTE", n)
        return 0
    if args.write_doc:
        DOC_PATH.write_text(render_doc(classes, caps, data), encoding="utf-8")
        print(f"wrote {DOC_PATH}")
    counts = collections.Counter(c.status for c in classes)
    print(", ".join(f"{k}: {counts[k]}" for k in (PASS_FULL, PARTIAL, UNMAPPABLE, KERNEL)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
