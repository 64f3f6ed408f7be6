"""The field aggregators (Paimon ``mergetree/compact/aggregate``; docs/paimon_semantics.md#aggregate-functions):
the scalar ones here, the collection ones in :mod:`python_udfs.paimon.collection_aggregators`, and
the factory :func:`make_aggregator` over both."""

from __future__ import annotations

import decimal
from typing import Any, Callable, Dict, List, Mapping, Optional

from python_udfs.paimon.collection_aggregators import (
    CollectAgg,
    MergeMapAgg,
    MergeMapWithKeyTimeAgg,
    NestedPartialUpdateAgg,
    NestedUpdateAgg,
)
from python_udfs.paimon.errors import PaimonArithmeticError, PaimonMergeError
from python_udfs.paimon.field_aggregator import FieldAggregator, NullSafeAggregator
from python_udfs.paimon.spark_types import INTEGRAL_TYPES
from python_udfs.paimon.values import (
    DECIMAL_CONTEXT,
    check_int,
    divide_float,
    f32,
    is_blank,
    to_decimal,
)

__all__ = ["agg", "make_aggregator", "retract"]


class SumAgg(NullSafeAggregator):
    """``sum``: null-safe add; retract ``acc - in``, ``acc=null -> -in``
    (docs/paimon_semantics.md#aggregate-functions)."""

    name = "sum"

    def _add(self, a: Any, b: Any, sign: int) -> Any:
        t = self.type
        if t.name == "decimal":
            raw = DECIMAL_CONTEXT.add(a, b) if sign > 0 else DECIMAL_CONTEXT.subtract(a, b)
            return to_decimal(raw, t)
        if t.name in INTEGRAL_TYPES:
            return check_int(a + b if sign > 0 else a - b, t, self.name)
        if t.name == "float":
            return f32(a + b if sign > 0 else a - b)
        return a + b if sign > 0 else a - b

    def combine(self, acc: Any, value: Any) -> Any:
        return self._add(acc, value, 1)

    def _retract(self, acc: Any, value: Any) -> Any:
        if value is None:
            return acc
        if acc is None:
            t = self.type
            if t.name == "decimal":
                return to_decimal(-value, t)
            if t.name in INTEGRAL_TYPES:
                return check_int(-value, t, self.name)
            return -value
        return self._add(acc, value, -1)


class ProductAgg(NullSafeAggregator):
    """``product``: null-safe multiply, DECIMAL re-scaled at every step; retract divides
    (docs/paimon_semantics.md#aggregate-functions)."""

    name = "product"

    def combine(self, acc: Any, value: Any) -> Any:
        t = self.type
        if t.name == "decimal":
            return to_decimal(DECIMAL_CONTEXT.multiply(acc, value), t)
        if t.name in INTEGRAL_TYPES:
            return check_int(acc * value, t, self.name)
        if t.name == "float":
            return f32(acc * value)
        return acc * value

    def _retract(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return acc
        t = self.type
        if t.name == "decimal":
            if value == 0:
                raise PaimonArithmeticError("Division by zero")
            ctx = DECIMAL_CONTEXT.copy()
            ctx.traps[decimal.Inexact] = True
            try:
                quotient = ctx.divide(acc, value)
            except decimal.Inexact:
                raise PaimonArithmeticError(
                    "Non-terminating decimal expansion; no exact representable decimal result."
                ) from None
            return to_decimal(quotient, t)
        if t.name in INTEGRAL_TYPES:
            if value == 0:
                raise PaimonArithmeticError("/ by zero")
            q = abs(acc) // abs(value)  # Java integer division truncates toward zero
            return check_int(q if (acc >= 0) == (value >= 0) else -q, t, self.name)
        if t.name == "float":
            return f32(divide_float(acc, value))
        return divide_float(acc, value)


class MaxAgg(NullSafeAggregator):
    name = "max"

    def combine(self, acc: Any, value: Any) -> Any:
        return value if value > acc else acc


class MinAgg(NullSafeAggregator):
    name = "min"

    def combine(self, acc: Any, value: Any) -> Any:
        return value if value < acc else acc


class LastValueAgg(FieldAggregator):
    """``last_value``: the incoming value, NULL included; retract -> NULL."""

    name = "last_value"

    def agg(self, acc: Any, value: Any) -> Any:
        return value

    def _retract(self, acc: Any, value: Any) -> Any:
        return None


class LastNonNullValueAgg(FieldAggregator):
    """``last_non_null_value``: ``in ?? acc``; retract: ``in != null ? NULL : acc``."""

    name = "last_non_null_value"

    def agg(self, acc: Any, value: Any) -> Any:
        return acc if value is None else value

    def _retract(self, acc: Any, value: Any) -> Any:
        return acc if value is None else None


class FirstValueAgg(FieldAggregator):
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


class FirstNonNullValueAgg(FirstValueAgg):
    """``first_non_null_value``: the first non-NULL value of the merge pass (stateful)."""

    name = "first_non_null_value"

    def agg(self, acc: Any, value: Any) -> Any:
        if not self.initialized and value is not None:
            self.initialized = True
            return value
        return acc


class ListaggAgg(FieldAggregator):
    """``listagg``: join with the delimiter, blank values skipped; ``distinct`` by whole token."""

    name = "listagg"

    def __init__(self, settings: Mapping[str, Any]):
        super().__init__(settings)
        self.delimiter = str(self.settings.get("delimiter", ","))
        self.distinct = bool(self.settings.get("distinct", False))

    def _tokens(self, s: str) -> List[str]:
        return s.split(self.delimiter) if self.delimiter else s.split()

    def agg(self, acc: Any, value: Any) -> Any:
        if value is None or is_blank(value):
            return acc
        if acc is None or is_blank(acc):
            return value
        if not self.distinct:
            return f"{acc}{self.delimiter}{value}"
        existing = set(self._tokens(acc))
        parts = [acc]
        for token in self._tokens(value):
            if is_blank(token) or token in existing:
                continue
            existing.add(token)
            parts.append(token)
        return self.delimiter.join(parts)


class BoolAndAgg(NullSafeAggregator):
    name = "bool_and"

    def combine(self, acc: Any, value: Any) -> Any:
        return bool(acc) and bool(value)


class BoolOrAgg(NullSafeAggregator):
    name = "bool_or"

    def combine(self, acc: Any, value: Any) -> Any:
        return bool(acc) or bool(value)


_AGGREGATORS: Dict[str, Callable[[Mapping[str, Any]], FieldAggregator]] = {
    "sum": SumAgg,
    "product": ProductAgg,
    "max": MaxAgg,
    "min": MinAgg,
    "last_value": LastValueAgg,
    "last_non_null_value": LastNonNullValueAgg,
    "first_value": FirstValueAgg,
    "first_non_null_value": FirstNonNullValueAgg,
    "first_not_null_value": FirstNonNullValueAgg,
    "listagg": ListaggAgg,
    "bool_and": BoolAndAgg,
    "bool_or": BoolOrAgg,
    "collect": CollectAgg,
    "merge_map": MergeMapAgg,
    "merge_map_with_keytime": MergeMapWithKeyTimeAgg,
    "nested_update": NestedUpdateAgg,
    "nested_partial_update": NestedPartialUpdateAgg,
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
    """One ``agg(acc, in)`` call on a fresh aggregator (docs/paimon_semantics.md#aggregate-functions, 'add')."""
    aggregator = make_aggregator(fn_settings)
    if aggregator is None:
        raise ValueError("settings without an aggregate function ('fn' is None)")
    return aggregator.agg(acc, value)


def retract(fn_settings: Mapping[str, Any], acc: Any, value: Any) -> Any:
    """One ``retract(acc, in)`` call on a fresh aggregator (docs/paimon_semantics.md#aggregate-functions, 'retract')."""
    aggregator = make_aggregator(fn_settings)
    if aggregator is None:
        raise ValueError("settings without an aggregate function ('fn' is None)")
    return aggregator.retract(acc, value)
