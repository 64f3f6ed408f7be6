"""Apache Paimon primary-key merge semantics in pure Python (stdlib only).

Executes a spec produced by :func:`python_udfs.paimon.options.parse_options` on the records of
one primary key.  Section numbers (``§2.3`` …) refer to ``PAIMON_SEMANTICS.md``.

Data model
----------
* A *row* is a ``dict`` column -> value, values as pyarrow's ``to_pylist()`` yields them: int,
  float, ``decimal.Decimal``, str, bytes, ``datetime.date`` / ``datetime.datetime``, bool, ``list``
  for ARRAY, ``dict`` for STRUCT, a ``list`` of ``(key, value)`` tuples for MAP (maps are returned
  in that form too).
* A *record* is ``(kind, row)`` with ``kind`` one of ``'+I'``, ``'-U'``, ``'+U'``, ``'-D'``
  (§0.1); ``+I``/``+U`` are *add* kinds, ``-U``/``-D`` *retract* kinds.

Entry points
------------
:func:`write_filter` (§0.8), :func:`merge_order` (§0.3), :func:`merge_pass` (§0.5, §2),
:func:`commit_key` (one commit of one key: pre-merge, merge with the stored row, changelog, §3),
and the field aggregators :func:`agg` / :func:`retract` / :class:`FieldAggregator` (§2.4).

Deliberate deviation: after a ``-D`` that removes the whole row (``partial-update.remove-record-on-delete``,
``partial-update.remove-record-on-sequence-group``, ``aggregation.remove-record-on-delete``) Paimon's
merge buffer is re-initialised with the delete record's own values, so a later add record of the
same merge pass inherits them until a full compaction drops the tombstone (§2.3 quirk, §6.1).
lakerank instead *resets to empty* (values and aggregator state), i.e. behaves as if the tombstone
had already been compacted away; the tombstone itself still carries the delete record's values.
"""

from __future__ import annotations

import decimal
import math
import struct
import unicodedata
from functools import cmp_to_key
from typing import Any, Callable, Dict, Hashable, List, Mapping, Optional, Sequence, Tuple

from python_udfs.paimon.options import INTEGRAL_TYPES, SparkType, parse_type

__all__ = [
    "ADD_KINDS",
    "RETRACT_KINDS",
    "FieldAggregator",
    "PaimonArithmeticError",
    "PaimonMergeError",
    "agg",
    "commit_key",
    "compare_sequences",
    "make_aggregator",
    "merge_order",
    "merge_pass",
    "retract",
    "write_filter",
]

Row = Dict[str, Any]
Record = Tuple[str, Row]

ADD_KINDS = frozenset({"+I", "+U"})
RETRACT_KINDS = frozenset({"-U", "-D"})
ALL_KINDS = ADD_KINDS | RETRACT_KINDS


class PaimonMergeError(ValueError):
    """A record Paimon's merge functions refuse (same message as Paimon's exception)."""


class PaimonArithmeticError(ArithmeticError):
    """Numeric overflow / division error where Paimon raises ``ArithmeticException``."""


FIRST_ROW_RETRACT_MESSAGE = (
    "By default, First row merge engine can not accept DELETE/UPDATE_BEFORE records.\n"
    "You can config 'ignore-delete' to ignore the DELETE/UPDATE_BEFORE records."
)
PARTIAL_UPDATE_RETRACT_MESSAGE = "\n".join(
    [
        "By default, Partial update can not accept delete records, you can choose one of the following solutions:",
        "1. Configure 'ignore-delete' to ignore delete records.",
        "2. Configure 'partial-update.remove-record-on-delete' to remove the whole row when receiving delete records.",
        "3. Configure 'sequence-group's to retract partial columns. Also configure "
        "'partial-update.remove-record-on-sequence-group' to remove the whole row when receiving deleted records "
        "of `specified sequence group`.",
    ]
)


def _is_add(kind: str) -> bool:
    return kind in ADD_KINDS


# ------------------------------------------------------------------------------------------
# Value helpers: comparison, canonical forms, numeric types
# ------------------------------------------------------------------------------------------


def _cmp(a: Any, b: Any) -> int:
    return (a > b) - (a < b)


def compare_sequences(xs: Sequence[Any], ys: Sequence[Any], descending: bool = False) -> int:
    """Compare two sequence tuples field by field; NULL is the smallest value (§1).

    ``descending`` reverses only the non-null comparisons (§1 [code], §6.2).
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


def _map_items(value: Any) -> List[Tuple[Any, Any]]:
    """A MAP value (list of pairs, or a dict) as a list of ``(key, value)`` tuples."""
    if isinstance(value, Mapping):
        return list(value.items())
    return [(k, v) for k, v in value]


def _struct_get(value: Any, struct_t: SparkType, name: str) -> Any:
    if isinstance(value, Mapping):
        return value.get(name)
    return value[struct_t.field_names.index(name)]


def _struct_values(value: Any, struct_t: SparkType) -> List[Any]:
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
        return ("map", frozenset((canonical(k, t.key), canonical(v, t.value)) for k, v in _map_items(value)))
    if name == "struct":
        assert t is not None
        return ("struct", tuple(canonical(v, ft) for v, (_, ft) in zip(_struct_values(value, t), t.fields)))
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


def _check_int(value: int, t: SparkType, op: str) -> int:
    lo, hi = _INT_RANGES[t.name]
    if not lo <= value <= hi:
        raise PaimonArithmeticError(f"{t.name.upper()} overflow in {op}: result {value} is out of range [{lo}, {hi}]")
    return value


def _f32(x: float) -> float:
    """Round a Python float to IEEE float32 (Java ``float`` arithmetic)."""
    try:
        return struct.unpack("f", struct.pack("f", x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


_DECIMAL_CONTEXT = decimal.Context(prec=200, rounding=decimal.ROUND_HALF_UP, traps=[decimal.InvalidOperation])


def _to_decimal(value: decimal.Decimal, t: SparkType) -> Optional[decimal.Decimal]:
    """Re-scale to the column scale (HALF_UP); NULL when the precision overflows.

    Mirrors Paimon's ``Decimal.fromBigDecimal(bd, precision, scale)``.
    """
    scale = t.scale or 0
    q = value.quantize(decimal.Decimal(1).scaleb(-scale), context=_DECIMAL_CONTEXT)
    digits = len(q.as_tuple().digits) if q != 0 else 1
    if digits > (t.precision or 38):
        return None
    return q


def _divide_float(a: float, b: float) -> float:
    if b == 0:
        if a == 0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


def _is_java_whitespace(ch: str) -> bool:
    if ch in "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f":
        return True
    return unicodedata.category(ch) in ("Zs", "Zl", "Zp") and ch not in "\u00a0\u2007\u202f"


def _is_blank(s: Any) -> bool:
    """Paimon ``StringUtils.isBlank`` (Java ``Character.isWhitespace`` for every character)."""
    return all(_is_java_whitespace(c) for c in str(s))


# ------------------------------------------------------------------------------------------
# Field aggregators (§2.4)
# ------------------------------------------------------------------------------------------

NOT_RETRACTABLE_MESSAGE = (
    "Aggregate function '{name}' does not support retraction, If you allow this function to ignore retraction "
    "messages, you can configure 'fields.${{field_name}}.ignore-retract'='true'."
)


class FieldAggregator:
    """One field's aggregate function (Paimon ``FieldAggregator``), stateful per merge pass.

    ``agg(acc, in)`` folds an add record in, ``retract(acc, in)`` a retract record (``-U``/``-D``),
    ``agg_reversed(acc, in) = agg(in, acc)`` folds in a record older than the accumulator (used by
    partial-update sequence groups, §2.3 rule 3).  ``reset()`` starts a new key / merge pass.
    """

    name = "?"

    def __init__(self, settings: Mapping[str, Any]):
        self.settings = dict(settings)
        self.type = parse_type(self.settings["type"])
        self.ignore_retract = bool(self.settings.get("ignore_retract", False))

    def reset(self) -> None:
        """Forget per-pass state (first_value's 'initialized' flag)."""

    def agg(self, acc: Any, value: Any) -> Any:
        raise NotImplementedError

    def agg_reversed(self, acc: Any, value: Any) -> Any:
        return self.agg(value, acc)

    def retract(self, acc: Any, value: Any) -> Any:
        """Retract ``value``; ``fields.<f>.ignore-retract`` keeps the accumulator (§2.4)."""
        if self.ignore_retract:
            return acc
        return self._retract(acc, value)

    def _retract(self, acc: Any, value: Any) -> Any:
        raise PaimonMergeError(NOT_RETRACTABLE_MESSAGE.format(name=self.name))


class _SumAgg(FieldAggregator):
    """``sum``: null-safe add; retract ``acc - in``, ``acc=null -> -in`` (§2.4)."""

    name = "sum"

    def _combine(self, a: Any, b: Any, sign: int) -> Any:
        t = self.type
        if t.name == "decimal":
            raw = _DECIMAL_CONTEXT.add(a, b) if sign > 0 else _DECIMAL_CONTEXT.subtract(a, b)
            return _to_decimal(raw, t)
        if t.name in INTEGRAL_TYPES:
            return _check_int(a + b if sign > 0 else a - b, t, self.name)
        if t.name == "float":
            return _f32(a + b if sign > 0 else a - b)
        return a + b if sign > 0 else a - b

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return value if acc is None else acc
        return self._combine(acc, value, 1)

    def _retract(self, acc: Any, value: Any) -> Any:
        if value is None:
            return acc
        if acc is None:
            t = self.type
            if t.name == "decimal":
                return _to_decimal(-value, t)
            if t.name in INTEGRAL_TYPES:
                return _check_int(-value, t, self.name)
            return -value
        return self._combine(acc, value, -1)


class _ProductAgg(FieldAggregator):
    """``product``: null-safe multiply, DECIMAL re-scaled at every step; retract divides (§2.4)."""

    name = "product"

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return value if acc is None else acc
        t = self.type
        if t.name == "decimal":
            return _to_decimal(_DECIMAL_CONTEXT.multiply(acc, value), t)
        if t.name in INTEGRAL_TYPES:
            return _check_int(acc * value, t, self.name)
        if t.name == "float":
            return _f32(acc * value)
        return acc * value

    def _retract(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return acc
        t = self.type
        if t.name == "decimal":
            if value == 0:
                raise PaimonArithmeticError("Division by zero")
            ctx = _DECIMAL_CONTEXT.copy()
            ctx.traps[decimal.Inexact] = True
            try:
                quotient = ctx.divide(acc, value)
            except decimal.Inexact:
                raise PaimonArithmeticError(
                    "Non-terminating decimal expansion; no exact representable decimal result."
                ) from None
            return _to_decimal(quotient, t)
        if t.name in INTEGRAL_TYPES:
            if value == 0:
                raise PaimonArithmeticError("/ by zero")
            q = abs(acc) // abs(value)  # Java integer division truncates toward zero
            return _check_int(q if (acc >= 0) == (value >= 0) else -q, t, self.name)
        if t.name == "float":
            return _f32(_divide_float(acc, value))
        return _divide_float(acc, value)


class _MaxAgg(FieldAggregator):
    name = "max"

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return value if acc is None else acc
        return value if value > acc else acc


class _MinAgg(FieldAggregator):
    name = "min"

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return value if acc is None else acc
        return value if value < acc else acc


class _LastValueAgg(FieldAggregator):
    """``last_value``: the incoming value, NULL included; retract -> NULL."""

    name = "last_value"

    def agg(self, acc: Any, value: Any) -> Any:
        return value

    def _retract(self, acc: Any, value: Any) -> Any:
        return None


class _LastNonNullValueAgg(FieldAggregator):
    """``last_non_null_value``: ``in ?? acc``; retract: ``in != null ? NULL : acc``."""

    name = "last_non_null_value"

    def agg(self, acc: Any, value: Any) -> Any:
        return acc if value is None else value

    def _retract(self, acc: Any, value: Any) -> Any:
        return acc if value is None else None


class _FirstValueAgg(FieldAggregator):
    """``first_value``: the first value of the merge pass, even NULL (stateful)."""

    name = "first_value"

    def __init__(self, settings: Mapping[str, Any]):
        super().__init__(settings)
        self.initialized = False

    def reset(self) -> None:
        self.initialized = False

    def agg(self, acc: Any, value: Any) -> Any:
        if self.initialized:
            return acc
        self.initialized = True
        return value


class _FirstNonNullValueAgg(_FirstValueAgg):
    """``first_non_null_value``: the first non-NULL value of the merge pass (stateful)."""

    name = "first_non_null_value"

    def agg(self, acc: Any, value: Any) -> Any:
        if not self.initialized and value is not None:
            self.initialized = True
            return value
        return acc


class _ListaggAgg(FieldAggregator):
    """``listagg``: join with the delimiter, blank values skipped; ``distinct`` by whole token."""

    name = "listagg"

    def __init__(self, settings: Mapping[str, Any]):
        super().__init__(settings)
        self.delimiter = str(self.settings.get("delimiter", ","))
        self.distinct = bool(self.settings.get("distinct", False))

    def _tokens(self, s: str) -> List[str]:
        return s.split(self.delimiter) if self.delimiter else s.split()

    def agg(self, acc: Any, value: Any) -> Any:
        if value is None or _is_blank(value):
            return acc
        if acc is None or _is_blank(acc):
            return value
        if not self.distinct:
            return f"{acc}{self.delimiter}{value}"
        existing = set(self._tokens(acc))
        parts = [acc]
        for token in self._tokens(value):
            if _is_blank(token) or token in existing:
                continue
            existing.add(token)
            parts.append(token)
        return self.delimiter.join(parts)


class _BoolAndAgg(FieldAggregator):
    name = "bool_and"

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return value if acc is None else acc
        return bool(acc) and bool(value)


class _BoolOrAgg(FieldAggregator):
    name = "bool_or"

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return value if acc is None else acc
        return bool(acc) or bool(value)


class _CollectAgg(FieldAggregator):
    """``collect``: array concatenation, ``distinct`` set union; retract removes one occurrence
    per retracted element (§2.4)."""

    name = "collect"

    def __init__(self, settings: Mapping[str, Any]):
        super().__init__(settings)
        self.distinct = bool(self.settings.get("distinct", False))
        self.element = self.type.element
        elem_name = self.element.name if self.element is not None else None
        # Paimon de-duplicates both sides for primitive elements (a HashSet); for ROW/ARRAY/MAP/
        # BINARY elements only incoming elements already present are skipped.
        self.primitive = elem_name not in ("array", "map", "struct", "binary")

    def _key(self, element: Any) -> Hashable:
        return canonical(element, self.element)

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None and value is None:
            return None
        if not self.distinct:
            if acc is None or value is None:
                return value if acc is None else acc
            return list(acc) + list(value)
        out: List[Any] = []
        seen = set()
        if self.primitive:
            sources = list(acc or []) + list(value or [])
        else:
            out = list(acc or [])
            seen = {self._key(e) for e in out}
            sources = list(value or [])
        for e in sources:
            k = self._key(e)
            if k not in seen:
                seen.add(k)
                out.append(e)
        return out

    def _retract(self, acc: Any, value: Any) -> Any:
        if acc is None:
            return None
        if value is None:
            return acc
        pending: Dict[Hashable, int] = {}
        for e in value:
            k = self._key(e)
            pending[k] = pending.get(k, 0) + 1
        out = []
        for e in acc:
            k = self._key(e)
            if pending.get(k, 0) > 0:
                pending[k] -= 1
            else:
                out.append(e)
        return out


class _MergeMapAgg(FieldAggregator):
    """``merge_map``: map union, incoming value wins; retract removes the retracted keys."""

    name = "merge_map"

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return value if acc is None else acc
        merged: Dict[Hashable, Tuple[Any, Any]] = {}
        for k, v in _map_items(acc) + _map_items(value):
            merged[canonical(k, self.type.key)] = (k, v)
        return list(merged.values())

    def _retract(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return acc
        removed = {canonical(k, self.type.key) for k, _ in _map_items(value)}
        return [(k, v) for k, v in _map_items(acc) if canonical(k, self.type.key) not in removed]


class _MergeMapWithKeyTimeAgg(FieldAggregator):
    """``merge_map_with_keytime``: per key keep the ROW with the greater ts (compared as strings);
    a NULL ROW removes the key, a NULL ts entry is skipped (§2.4)."""

    name = "merge_map_with_keytime"

    def __init__(self, settings: Mapping[str, Any]):
        super().__init__(settings)
        row_t = self.type.value
        assert row_t is not None and row_t.name == "struct"
        self.row_type = row_t
        self.ts_field = self.settings.get("ts_field") or row_t.fields[-1][0]

    def _ts(self, row: Any) -> Any:
        return _struct_get(row, self.row_type, self.ts_field)

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None:
            return value
        if value is None:
            return acc
        result: Dict[Hashable, Tuple[Any, Any]] = {}
        for k, v in _map_items(acc):
            result[canonical(k, self.type.key)] = (k, v)
        for k, row in _map_items(value):
            ck = canonical(k, self.type.key)
            if row is None:
                result.pop(ck, None)
                continue
            new_ts = self._ts(row)
            if new_ts is None:
                continue
            existing = result.get(ck)
            if existing is None or existing[1] is None or self._ts(existing[1]) is None:
                result[ck] = (k, row)
            elif str(new_ts) > str(self._ts(existing[1])):
                result[ck] = (k, row)
        return list(result.values())


class _NestedAggBase(FieldAggregator):
    def __init__(self, settings: Mapping[str, Any]):
        super().__init__(settings)
        row_t = self.type.element
        assert row_t is not None and row_t.name == "struct"
        self.row_type = row_t
        self.nested_key: List[str] = list(self.settings.get("nested_key") or [])
        self.null_strategy = str(self.settings.get("null_strategy") or "merge")

    def _key(self, row: Any) -> Tuple[Any, ...]:
        t = self.row_type
        return tuple(canonical(_struct_get(row, t, k), t.field_type(k)) for k in self.nested_key)

    def _row_equal_key(self, row: Any) -> Hashable:
        return canonical(row, self.row_type)

    def _keep_key(self, key: Tuple[Any, ...]) -> bool:
        """``fields.<f>.nested-key-null-strategy`` for a key with a NULL component."""
        if all(k is not None for k in key):
            return True
        if self.null_strategy == "ignore":
            return False
        if self.null_strategy == "error":
            raise PaimonMergeError("Nested key contains null values. Primary key fields must not be null.")
        return True


class _NestedUpdateAgg(_NestedAggBase):
    """``nested_update``: upsert ARRAY<ROW> elements by nested key, or append without key;
    NULL elements dropped; ``count-limit``; ``nested-sequence-field`` (§2.4)."""

    name = "nested_update"

    def __init__(self, settings: Mapping[str, Any]):
        super().__init__(settings)
        seq = self.settings.get("nested_seq")
        self.nested_seq: List[str] = [s for s in str(seq).split(",") if s] if seq else []
        limit = self.settings.get("count_limit")
        self.count_limit: Optional[int] = None if limit is None else int(limit)

    def _seq(self, row: Any) -> List[Any]:
        return [_struct_get(row, self.row_type, s) for s in self.nested_seq]

    def _limit(self) -> float:
        return math.inf if self.count_limit is None else self.count_limit

    def agg(self, acc: Any, value: Any) -> Any:
        if value is None:
            return acc
        limit = self._limit()
        if not self.nested_key:
            if acc is None:
                rows: List[Any] = []
            else:
                if len(acc) >= limit:
                    return acc
                rows = [r for r in acc if r is not None]
            budget = limit - (0 if acc is None else len(acc))
            for r in value:
                if budget <= 0:
                    break
                if r is not None:
                    rows.append(r)
                    budget -= 1
            return rows
        merged: Dict[Hashable, Any] = {}
        for source, limit_new in ((acc or [], False), (value, True)):
            for r in source:
                if r is None:
                    continue
                k = self._key(r)
                if not self._keep_key(k):
                    continue
                if k in merged:
                    if not self.nested_seq or compare_sequences(self._seq(r), self._seq(merged[k])) >= 0:
                        merged[k] = r
                elif not limit_new or len(merged) < limit:
                    merged[k] = r
        return list(merged.values())

    def _retract(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return acc
        if not self.nested_key:
            removed = {self._row_equal_key(r) for r in value if r is not None}
            return [r for r in acc if r is not None and self._row_equal_key(r) not in removed]
        kept: Dict[Hashable, Any] = {}
        for r in acc:
            if r is not None:
                kept[self._key(r)] = r
        for r in value:
            if r is not None:
                kept.pop(self._key(r), None)
        return list(kept.values())


class _NestedPartialUpdateAgg(_NestedAggBase):
    """``nested_partial_update``: rows with the same nested key are partially updated
    (non-NULL fields overwrite) (§2.4)."""

    name = "nested_partial_update"

    def agg(self, acc: Any, value: Any) -> Any:
        if value is None:
            return acc
        rows = [r for r in (acc or []) if r is not None] + [r for r in value if r is not None]
        merged: Dict[Hashable, Dict[str, Any]] = {}
        for r in rows:
            k = self._key(r)
            if not self._keep_key(k):
                continue
            target = merged.setdefault(k, {n: None for n in self.row_type.field_names})
            for n, v in zip(self.row_type.field_names, _struct_values(r, self.row_type)):
                if v is not None:
                    target[n] = v
        return list(merged.values())


_AGGREGATORS: Dict[str, Callable[[Mapping[str, Any]], FieldAggregator]] = {
    "sum": _SumAgg,
    "product": _ProductAgg,
    "max": _MaxAgg,
    "min": _MinAgg,
    "last_value": _LastValueAgg,
    "last_non_null_value": _LastNonNullValueAgg,
    "first_value": _FirstValueAgg,
    "first_non_null_value": _FirstNonNullValueAgg,
    "first_not_null_value": _FirstNonNullValueAgg,
    "listagg": _ListaggAgg,
    "bool_and": _BoolAndAgg,
    "bool_or": _BoolOrAgg,
    "collect": _CollectAgg,
    "merge_map": _MergeMapAgg,
    "merge_map_with_keytime": _MergeMapWithKeyTimeAgg,
    "nested_update": _NestedUpdateAgg,
    "nested_partial_update": _NestedPartialUpdateAgg,
}


def make_aggregator(settings: Mapping[str, Any]) -> Optional[FieldAggregator]:
    """A fresh aggregator for one field's settings (``spec['fields'][f]``); None without function."""
    fn = settings.get("fn")
    if fn is None:
        return None
    try:
        factory = _AGGREGATORS[fn]
    except KeyError:
        raise PaimonMergeError(f"Use unsupported aggregation: {fn} or spell aggregate function incorrectly!") from None
    return factory(settings)


def agg(fn_settings: Mapping[str, Any], acc: Any, value: Any) -> Any:
    """One ``agg(acc, in)`` call on a fresh aggregator (§2.4 'agg' column)."""
    aggregator = make_aggregator(fn_settings)
    if aggregator is None:
        raise ValueError("settings without an aggregate function ('fn' is None)")
    return aggregator.agg(acc, value)


def retract(fn_settings: Mapping[str, Any], acc: Any, value: Any) -> Any:
    """One ``retract(acc, in)`` call on a fresh aggregator (§2.4 'retract' column)."""
    aggregator = make_aggregator(fn_settings)
    if aggregator is None:
        raise ValueError("settings without an aggregate function ('fn' is None)")
    return aggregator.retract(acc, value)


# ------------------------------------------------------------------------------------------
# Write filters and merge order (§0.3, §0.8, §1)
# ------------------------------------------------------------------------------------------


def write_filter(spec: Mapping[str, Any], records: Sequence[Record]) -> List[Record]:
    """Apply the write-time filters in Paimon's order (§0.8): ``rowkind.field``, then
    ``ignore-delete`` (drops ``-D`` and ``-U``), ``ignore-update-before`` (drops ``-U``).

    A first-row table without ``ignore-delete`` refuses ``-D``/``-U`` records (§2.2).
    """
    rowkind_field = spec.get("rowkind_field")
    kept: List[Record] = []
    for kind, row in records:
        if rowkind_field:
            raw = row.get(rowkind_field)
            if raw is None:
                raise PaimonMergeError("Row kind cannot be null.")
            kind = str(raw).upper()
            if kind not in ALL_KINDS:
                raise PaimonMergeError(f"Unsupported short string '{raw}' for row kind.")
        elif kind not in ALL_KINDS:
            raise PaimonMergeError(f"Unsupported short string '{kind}' for row kind.")
        if spec.get("ignore_delete") and kind in RETRACT_KINDS:
            continue
        if spec.get("ignore_update_before") and kind == "-U":
            continue
        if spec["engine"] == "first-row" and kind in RETRACT_KINDS:
            raise PaimonMergeError(FIRST_ROW_RETRACT_MESSAGE)
        kept.append((kind, row))
    return kept


def merge_order(spec: Mapping[str, Any], records: Sequence[Record]) -> List[Record]:
    """Records in merge order (§0.3): by ``sequence.field`` values (NULL smallest; descending
    reverses only non-null comparisons), ties in input order (stable sort)."""
    fields = list(spec.get("sequence_fields") or [])
    if not fields:
        return list(records)
    descending = bool(spec.get("seq_descending"))

    def cmp(a: Record, b: Record) -> int:
        return compare_sequences([a[1].get(f) for f in fields], [b[1].get(f) for f in fields], descending)

    return sorted(records, key=cmp_to_key(cmp))


# ------------------------------------------------------------------------------------------
# Merge functions (§2)
# ------------------------------------------------------------------------------------------


def _with_key(spec: Mapping[str, Any], values: Mapping[str, Any], key_row: Mapping[str, Any]) -> Row:
    """A full row: primary key from ``key_row`` (the latest record), values from ``values``."""
    out: Row = {}
    for name, _ in spec["columns"]:
        out[name] = key_row.get(name) if name in spec["primary_key"] else values.get(name)
    return out


def _dedup_pass(spec: Mapping[str, Any], records: Sequence[Record]) -> Optional[Record]:
    """deduplicate (§2.1): the last record wins, its kind kept; ignore-delete skips retracts."""
    if spec.get("ignore_delete"):
        records = [r for r in records if _is_add(r[0])]
    if not records:
        return None
    kind, row = records[-1]
    return kind, dict(row)


def _first_row_pass(spec: Mapping[str, Any], records: Sequence[Record]) -> Optional[Record]:
    """first-row (§2.2): the first add record; retracts are refused unless ignore-delete."""
    first: Optional[Record] = None
    for kind, row in records:
        if kind in RETRACT_KINDS:
            if spec.get("ignore_delete"):
                continue
            raise PaimonMergeError(FIRST_ROW_RETRACT_MESSAGE)
        if first is None:
            first = (kind, dict(row))
    return first


class _PartialUpdateMerge:
    """partial-update (§2.3, Paimon ``PartialUpdateMergeFunction``) for one merge pass."""

    def __init__(self, spec: Mapping[str, Any]):
        self.spec = spec
        self.groups = [(list(g["seq"]), list(g["fields"])) for g in spec.get("groups") or []]
        grouped = {f for seq, fs in self.groups for f in seq + fs}
        self.ungrouped = [c for c in spec["value_columns"] if c not in grouped]
        self.aggregators: Dict[str, Optional[FieldAggregator]] = {
            f: make_aggregator(s) for f, s in spec["fields"].items()
        }
        self.remove_on_group = set(spec.get("remove_record_on_sequence_group") or [])
        self._fresh()

    def _fresh(self) -> None:
        self.row: Row = {}
        self.meet_insert = False
        self.tombstone: Optional[Row] = None
        for a in self.aggregators.values():
            if a is not None:
                a.reset()

    def _remove_row(self, delete_row: Row) -> None:
        # Reset to empty (not Paimon's re-initialisation with the -D values, see module doc / §6.1);
        # the tombstone carries the delete record's values.
        self._fresh()
        self.tombstone = dict(delete_row)

    def add(self, kind: str, in_row: Row) -> None:
        self.tombstone = None
        if kind in RETRACT_KINDS:
            self._retract(kind, in_row)
            return
        self.meet_insert = True
        if not self.groups:
            for f in self.spec["value_columns"]:  # §2.3 "without sequence groups": non-NULL overwrite
                if in_row.get(f) is not None:
                    self.row[f] = in_row[f]
            return
        for seq, fields in self.groups:
            incoming = [in_row.get(s) for s in seq]
            if all(v is None for v in incoming):
                continue  # rule 1: all-NULL group sequence skips the group
            if compare_sequences(incoming, [self.row.get(s) for s in seq]) >= 0:
                for s in seq:  # rule 2: newer (ties count as newer)
                    self.row[s] = in_row.get(s)
                for f in fields:
                    a = self.aggregators.get(f)
                    self.row[f] = in_row.get(f) if a is None else a.agg(self.row.get(f), in_row.get(f))
            else:
                for f in fields:  # rule 3: older record folded in as if it came first
                    a = self.aggregators.get(f)
                    if a is not None:
                        self.row[f] = a.agg_reversed(self.row.get(f), in_row.get(f))
        for f in self.ungrouped:  # rule 4
            a = self.aggregators.get(f)
            if a is not None:
                self.row[f] = a.agg(self.row.get(f), in_row.get(f))
            elif in_row.get(f) is not None:
                self.row[f] = in_row[f]

    def _retract(self, kind: str, in_row: Row) -> None:
        spec = self.spec
        if spec.get("ignore_delete"):
            return
        if self.groups:
            self._retract_groups(kind, in_row)
            return
        if spec.get("remove_record_on_delete"):
            if kind == "-D":
                self._remove_row(in_row)
            return  # -U has no effect (§2.3 table, pu-20)
        raise PaimonMergeError(PARTIAL_UPDATE_RETRACT_MESSAGE)

    def _retract_groups(self, kind: str, in_row: Row) -> None:
        for seq, fields in self.groups:
            incoming = [in_row.get(s) for s in seq]
            if all(v is None for v in incoming):
                continue
            if compare_sequences(incoming, [self.row.get(s) for s in seq]) >= 0:
                if kind == "-D" and self.remove_on_group.intersection(seq):
                    self._remove_row(in_row)
                    return
                for s in seq:
                    self.row[s] = in_row.get(s)
                for f in fields:
                    a = self.aggregators.get(f)
                    self.row[f] = None if a is None else a.retract(self.row.get(f), in_row.get(f))
            else:
                for f in fields:  # an older retract still retracts aggregated fields
                    a = self.aggregators.get(f)
                    if a is not None:
                        self.row[f] = a.retract(self.row.get(f), in_row.get(f))

    def result(self, key_row: Row) -> Record:
        if self.tombstone is not None:
            return "-D", self.tombstone
        return ("+I" if self.meet_insert else "-D"), _with_key(self.spec, self.row, key_row)


def _partial_update_pass(spec: Mapping[str, Any], records: Sequence[Record]) -> Optional[Record]:
    merger = _PartialUpdateMerge(spec)
    for kind, row in records:
        merger.add(kind, row)
    return merger.result(records[-1][1])


def _aggregation_pass(spec: Mapping[str, Any], records: Sequence[Record]) -> Optional[Record]:
    """aggregation (§2.4, Paimon ``AggregateMergeFunction``): add -> agg, retract -> retract;
    result kind always ``+I`` unless the last record removed the row
    (``aggregation.remove-record-on-delete``)."""
    fields = spec["value_columns"]
    aggregators = {f: make_aggregator(spec["fields"][f]) for f in fields}
    row: Row = {}
    tombstone: Optional[Row] = None
    for kind, in_row in records:
        if kind == "-D" and spec.get("aggregation_remove_record_on_delete"):
            # Reset to empty instead of Paimon's re-initialisation with the -D values (§6.1).
            row, tombstone = {}, dict(in_row)
            for a in aggregators.values():
                if a is not None:
                    a.reset()
            continue
        tombstone = None
        is_retract = kind in RETRACT_KINDS
        for f in fields:
            a = aggregators[f]
            assert a is not None, f"aggregation field {f} without aggregate function"
            row[f] = a.retract(row.get(f), in_row.get(f)) if is_retract else a.agg(row.get(f), in_row.get(f))
    if tombstone is not None:
        return "-D", tombstone
    return "+I", _with_key(spec, row, records[-1][1])


_ENGINES: Dict[str, Callable[[Mapping[str, Any], Sequence[Record]], Optional[Record]]] = {
    "deduplicate": _dedup_pass,
    "first-row": _first_row_pass,
    "partial-update": _partial_update_pass,
    "aggregation": _aggregation_pass,
}


def merge_pass(spec: Mapping[str, Any], records: Sequence[Record], shortcut: bool = True) -> Optional[Record]:
    """One merge of one key's ``records`` (already in merge order, §0.3) by the table's engine.

    With ``shortcut`` a lone record is returned unchanged, kind included, without calling the
    merge function (§0.5, ``ReducerMergeFunctionWrapper``).  Returns ``(kind, row)`` or None
    when the merge function yields nothing (e.g. only ignored deletes).
    """
    if not records:
        return None
    if shortcut and len(records) == 1:
        kind, row = records[0]
        return kind, dict(row)
    return _ENGINES[spec["engine"]](spec, records)


# ------------------------------------------------------------------------------------------
# One commit of one key (§0.4, §3)
# ------------------------------------------------------------------------------------------


def _rows_equal_for_dedup(spec: Mapping[str, Any], before: Row, after: Row) -> bool:
    ignore = set(spec.get("row_dedup_ignore") or [])
    for name, type_str in spec["columns"]:
        if name in ignore:
            continue
        if not values_equal(before.get(name), after.get(name), type_str):
            return False
    return True


def lookup_changelog(spec: Mapping[str, Any], before: Optional[Row], after: Optional[Row]) -> List[Record]:
    """Changelog of one key from its before/after values (§3; ``before``/``after`` None = absent).

    first-row emits only ``+I`` for keys never seen before (§2.2).
    """
    if before is None:
        return [("+I", dict(after))] if after is not None else []
    if spec["engine"] == "first-row":
        return []
    if after is None:
        return [("-D", dict(before))]
    if spec.get("row_dedup") and _rows_equal_for_dedup(spec, before, after):
        return []
    return [("-U", dict(before)), ("+U", dict(after))]


def commit_key(
    spec: Mapping[str, Any],
    stored: Optional[Row],
    records: Sequence[Record],
    *,
    lookup_compaction: Optional[bool] = None,
) -> Dict[str, Any]:
    """Apply one commit's ``records`` (arrival order) of one key to its ``stored`` row.

    Returns a dict:

    ``input``      the write-filtered records (changelog-producer ``input``, §3);
    ``premerged``  the commit's own records merged in merge order with the single-record
                   shortcut — what Paimon writes for the key (§0.4a), or None if no record survived
                   the filters;
    ``before``     ``stored``;
    ``after``      the merge of ``[stored as +I, premerged]`` (merge order, stored first on ties),
                   or None when the result kind is ``-U``/``-D``: tombstones are dropped at every
                   commit, i.e. the table behaves as if fully compacted after each commit (§0.6-7);
    ``lookup``     the lookup / full-compaction changelog of the commit (§3).

    ``lookup_compaction`` (default: ``spec['lookup_compaction']``, true for
    ``changelog-producer=lookup``): the merge with the stored row calls the merge function even
    for a single record, as Paimon's lookup compaction does (§0.5 exception).  It matters only
    for a key without stored row, e.g. a lone ``-D`` on an aggregation table becomes ``+I`` with
    retracted values.
    """
    kept = write_filter(spec, records)
    premerged = merge_pass(spec, merge_order(spec, kept), shortcut=True) if kept else None

    if premerged is None:
        after = None if stored is None else dict(stored)
        changelog: List[Record] = []
    else:
        candidates: List[Record] = ([("+I", stored)] if stored is not None else []) + [premerged]
        if lookup_compaction is None:
            lookup_compaction = bool(spec.get("lookup_compaction"))
        merged = merge_pass(spec, merge_order(spec, candidates), shortcut=not lookup_compaction)
        after = merged[1] if merged is not None and _is_add(merged[0]) else None
        changelog = lookup_changelog(spec, stored, after)

    return {
        "input": kept,
        "premerged": premerged,
        "before": stored,
        "after": after,
        "lookup": changelog,
    }
