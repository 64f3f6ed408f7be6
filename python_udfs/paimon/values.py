"""Values as the merge kernel sees them (pyarrow's ``to_pylist()`` forms): comparison, SQL
equality, and Java's numeric rules (integer overflow, float32, DECIMAL re-scaling)."""

from __future__ import annotations

import decimal
import math
import struct
import unicodedata
from typing import Any, Hashable, List, Mapping, Optional, Sequence, Tuple

from python_udfs.paimon.errors import PaimonArithmeticError
from python_udfs.paimon.spark_types import SparkType, parse_type

__all__ = [
    "DECIMAL_CONTEXT",
    "canonical",
    "check_int",
    "compare_sequences",
    "divide_float",
    "f32",
    "is_blank",
    "map_items",
    "struct_get",
    "struct_values",
    "to_decimal",
    "values_equal",
]


def _cmp(a: Any, b: Any) -> int:
    return (a > b) - (a < b)


def compare_sequences(xs: Sequence[Any], ys: Sequence[Any], descending: bool = False) -> int:
    """Compare two sequence tuples field by field; NULL is the smallest value (docs/paimon_semantics.md#merge-order).

    ``descending`` reverses only the non-null comparisons (docs/paimon_semantics.md#descending-order).
    """
    for a, b in zip(xs, ys):
        if a is None and b is None:
            continue
        if a is None:
            return -1
        if b is None:
            return 1
        c = _cmp(a, b)
        if c:
            return -c if descending else c
    return 0


def map_items(value: Any) -> List[Tuple[Any, Any]]:
    """A MAP value (list of pairs, or a dict) as a list of ``(key, value)`` tuples."""
    if isinstance(value, Mapping):
        return list(value.items())
    return [(k, v) for k, v in value]


def struct_get(value: Any, struct_t: SparkType, name: str) -> Any:
    if isinstance(value, Mapping):
        return value.get(name)
    return value[struct_t.field_names.index(name)]


def struct_values(value: Any, struct_t: SparkType) -> List[Any]:
    if isinstance(value, Mapping):
        return [value.get(n) for n in struct_t.field_names]
    return list(value)


def canonical(value: Any, t: Optional[SparkType]) -> Hashable:
    """A hashable form of ``value`` with SQL value equality (map entry order ignored)."""
    if value is None:
        return None
    name = t.name if t is not None else None
    if name == "map":
        assert t is not None
        return ("map", frozenset((canonical(k, t.key), canonical(v, t.value)) for k, v in map_items(value)))
    if name == "struct":
        assert t is not None
        return ("struct", tuple(canonical(v, ft) for v, (_, ft) in zip(struct_values(value, t), t.fields)))
    if name == "array":
        assert t is not None
        return ("array", tuple(canonical(v, t.element) for v in value))
    if isinstance(value, (list, tuple)):
        return ("array", tuple(canonical(v, None) for v in value))
    if isinstance(value, dict):
        return ("struct", tuple((k, canonical(v, None)) for k, v in value.items()))
    if isinstance(value, bytearray):
        return bytes(value)
    return value


def values_equal(a: Any, b: Any, type_str: Optional[str]) -> bool:
    """SQL value equality of two values of a column type."""
    t = parse_type(type_str) if type_str else None
    return canonical(a, t) == canonical(b, t)


_INT_RANGES = {
    "tinyint": (-(2**7), 2**7 - 1),
    "smallint": (-(2**15), 2**15 - 1),
    "int": (-(2**31), 2**31 - 1),
    "bigint": (-(2**63), 2**63 - 1),
}


def check_int(value: int, t: SparkType, op: str) -> int:
    lo, hi = _INT_RANGES[t.name]
    if not lo <= value <= hi:
        raise PaimonArithmeticError(f"{t.name.upper()} overflow in {op}: result {value} is out of range [{lo}, {hi}]")
    return value


def f32(x: float) -> float:
    """Round a Python float to IEEE float32 (Java ``float`` arithmetic)."""
    try:
        return struct.unpack("f", struct.pack("f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


DECIMAL_CONTEXT = decimal.Context(prec=200, rounding=decimal.ROUND_HALF_UP, traps=[decimal.InvalidOperation])


def to_decimal(value: decimal.Decimal, t: SparkType) -> Optional[decimal.Decimal]:
    """Re-scale to the column scale (HALF_UP); NULL when the precision overflows.

    Mirrors Paimon's ``Decimal.fromBigDecimal(bd, precision, scale)``.
    """
    scale = t.scale or 0
    q = value.quantize(decimal.Decimal(1).scaleb(-scale), context=DECIMAL_CONTEXT)
    digits = len(q.as_tuple().digits) if q != 0 else 1
    if digits > (t.precision or 38):
        return None
    return q


def divide_float(a: float, b: float) -> float:
    if b == 0:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _is_java_whitespace(ch: str) -> bool:
    if ch in "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f":
        return True
    return unicodedata.category(ch) in ("Zs", "Zl", "Zp") and ch not in "\u00a0\u2007\u202f"


def is_blank(s: Any) -> bool:
    """Paimon ``StringUtils.isBlank`` (Java ``Character.isWhitespace`` for every character)."""
    return all(_is_java_whitespace(c) for c in str(s))
