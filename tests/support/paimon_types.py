"""Paimon test vectors, their types and schemas: Flink/Spark type strings and schema strings as
Spark column types (paimon_vectors.py has the whole mapping)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

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
