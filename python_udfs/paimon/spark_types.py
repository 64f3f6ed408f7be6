"""Spark simple type strings (``DataType.simpleString()`` syntax) parsed into :class:`SparkType`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import List, Optional, Tuple

__all__ = [
    "CONSTRUCTED_TYPES",
    "INTEGRAL_TYPES",
    "NUMERIC_TYPES",
    "ORDERED_TYPES",
    "STRING_TYPES",
    "SparkType",
    "display_type",
    "parse_type",
]


@dataclass(frozen=True)
class SparkType:
    """A parsed Spark type (``DataType.simpleString()`` syntax)."""

    name: str
    precision: Optional[int] = None  # decimal
    scale: Optional[int] = None  # decimal
    length: Optional[int] = None  # char / varchar
    element: Optional["SparkType"] = None  # array
    key: Optional["SparkType"] = None  # map
    value: Optional["SparkType"] = None  # map
    fields: Tuple[Tuple[str, "SparkType"], ...] = ()  # struct

    @property
    def field_names(self) -> List[str]:
        return [n for n, _ in self.fields]

    def field_type(self, name: str) -> Optional["SparkType"]:
        for n, t in self.fields:
            if n == name:
                return t
        return None


INTEGRAL_TYPES = frozenset({"tinyint", "smallint", "int", "bigint"})
NUMERIC_TYPES = INTEGRAL_TYPES | {"float", "double", "decimal"}
STRING_TYPES = frozenset({"string", "varchar", "char"})
CONSTRUCTED_TYPES = frozenset({"array", "map", "struct"})
ORDERED_TYPES = NUMERIC_TYPES | STRING_TYPES | {"boolean", "binary", "date", "timestamp", "timestamp_ntz"}

_ALIASES = {
    "integer": "int",
    "long": "bigint",
    "short": "smallint",
    "byte": "tinyint",
    "bool": "boolean",
    "real": "float",
    "dec": "decimal",
    "numeric": "decimal",
    "timestamp_ltz": "timestamp",
}


class _TypeParser:
    def __init__(self, text: str):
        self.text = text
        self.pos = 0

    def fail(self, what: str) -> "ValueError":
        return ValueError(f"cannot parse Spark type '{self.text}': {what} at position {self.pos}")

    def skip_ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self) -> str:
        self.skip_ws()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def expect(self, ch: str) -> None:
        if self.peek() != ch:
            raise self.fail(f"expected '{ch}'")
        self.pos += 1

    def token(self, pattern: str, what: str) -> str:
        self.skip_ws()
        m = re.compile(pattern).match(self.text, self.pos)
        if not m:
            raise self.fail(f"expected {what}")
        self.pos = m.end()
        return m.group(0)

    def word(self) -> str:
        return self.token(r"[A-Za-z_][A-Za-z0-9_]*", "a type name")

    def field_name(self) -> str:
        self.skip_ws()
        if self.peek() == "`":
            end = self.pos + 1
            out = []
            while end < len(self.text):
                if self.text[end] == "`":
                    if self.text[end + 1 : end + 2] == "`":
                        out.append("`")
                        end += 2
                        continue
                    self.pos = end + 1
                    return "".join(out)
                out.append(self.text[end])
                end += 1
            raise self.fail("unterminated quoted field name")
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] not in ":,<>":
            self.pos += 1
        name = self.text[start : self.pos].strip()
        if not name:
            raise self.fail("expected a field name")
        return name

    def integer(self) -> int:
        return int(self.token(r"\d+", "an integer"))

    def parse(self) -> SparkType:
        t = self.type_()
        self.skip_ws()
        if self.pos != len(self.text):
            raise self.fail("trailing characters")
        return t

    def type_(self) -> SparkType:
        name = self.word().lower()
        name = _ALIASES.get(name, name)
        if name == "array":
            self.expect("<")
            element = self.type_()
            self.expect(">")
            return SparkType("array", element=element)
        if name == "map":
            self.expect("<")
            key = self.type_()
            self.expect(",")
            value = self.type_()
            self.expect(">")
            return SparkType("map", key=key, value=value)
        if name == "struct":
            self.expect("<")
            fields: List[Tuple[str, SparkType]] = []
            if self.peek() != ">":
                while True:
                    fname = self.field_name()
                    self.expect(":")
                    fields.append((fname, self.type_()))
                    if self.peek() == ",":
                        self.pos += 1
                        continue
                    break
            self.expect(">")
            return SparkType("struct", fields=tuple(fields))
        if name == "decimal":
            if self.peek() == "(":
                self.pos += 1
                precision = self.integer()
                scale = 0
                if self.peek() == ",":
                    self.pos += 1
                    scale = self.integer()
                self.expect(")")
                return SparkType("decimal", precision=precision, scale=scale)
            return SparkType("decimal", precision=10, scale=0)
        if name in ("char", "varchar"):
            length = None
            if self.peek() == "(":
                self.pos += 1
                length = self.integer()
                self.expect(")")
            return SparkType(name, length=length)
        return SparkType(name)


@lru_cache(maxsize=1024)
def parse_type(type_str: str) -> SparkType:
    """Parse a Spark simple type string such as ``'array<struct<k:int,v:string>>'``."""
    return _TypeParser(str(type_str)).parse()


def display_type(type_str: str) -> str:
    return str(type_str).upper()
