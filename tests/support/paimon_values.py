"""Paimon test vectors, their values: SQL literals of a vector's rows, and values normalised for
comparison with what Spark returns (paimon_vectors.py has the rules)."""

from __future__ import annotations

import collections
import datetime as _dt
import decimal
import json
import re
import struct
from typing import Any, Dict, List, Optional, Sequence, Tuple

from paimon_types import Column, SchemaError, spark_type

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
