"""Field aggregators over collections (docs/paimon_semantics.md#aggregate-functions): ``collect``, ``merge_map``,
``merge_map_with_keytime``, ``nested_update``, ``nested_partial_update``."""

from __future__ import annotations

import math
from typing import Any, Dict, Hashable, List, Mapping, Optional, Tuple

from python_udfs.paimon.errors import PaimonMergeError
from python_udfs.paimon.field_aggregator import FieldAggregator, NullSafeAggregator
from python_udfs.paimon.values import (
    canonical,
    compare_sequences,
    map_items,
    struct_get,
    struct_values,
)

__all__ = ["CollectAgg", "MergeMapAgg", "MergeMapWithKeyTimeAgg", "NestedPartialUpdateAgg", "NestedUpdateAgg"]


class CollectAgg(FieldAggregator):
    """``collect``: array concatenation, ``distinct`` set union; retract removes one occurrence
    per retracted element (docs/paimon_semantics.md#aggregate-functions)."""

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


class MergeMapAgg(NullSafeAggregator):
    """``merge_map``: map union, incoming value wins; retract removes the retracted keys."""

    name = "merge_map"

    def combine(self, acc: Any, value: Any) -> Any:
        merged: Dict[Hashable, Tuple[Any, Any]] = {}
        for k, v in map_items(acc) + map_items(value):
            merged[canonical(k, self.type.key)] = (k, v)
        return list(merged.values())

    def _retract(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return acc
        removed = {canonical(k, self.type.key) for k, _ in map_items(value)}
        return [(k, v) for k, v in map_items(acc) if canonical(k, self.type.key) not in removed]


class MergeMapWithKeyTimeAgg(FieldAggregator):
    """``merge_map_with_keytime``: per key keep the ROW with the greater ts (compared as strings);
    a NULL ROW removes the key, a NULL ts entry is skipped (docs/paimon_semantics.md#aggregate-functions)."""

    name = "merge_map_with_keytime"

    def __init__(self, settings: Mapping[str, Any]):
        super().__init__(settings)
        row_t = self.type.value
        assert row_t is not None and row_t.name == "struct"
        self.row_type = row_t
        self.ts_field = self.settings.get("ts_field") or row_t.fields[-1][0]

    def _ts(self, row: Any) -> Any:
        return struct_get(row, self.row_type, self.ts_field)

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None:
            return value
        if value is None:
            return acc
        result: Dict[Hashable, Tuple[Any, Any]] = {}
        for k, v in map_items(acc):
            result[canonical(k, self.type.key)] = (k, v)
        for k, row in map_items(value):
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


class NestedAggBase(FieldAggregator):
    def __init__(self, settings: Mapping[str, Any]):
        super().__init__(settings)
        row_t = self.type.element
        assert row_t is not None and row_t.name == "struct"
        self.row_type = row_t
        self.nested_key: List[str] = list(self.settings.get("nested_key") or [])
        self.null_strategy = str(self.settings.get("null_strategy") or "merge")

    def _key(self, row: Any) -> Tuple[Any, ...]:
        t = self.row_type
        return tuple(canonical(struct_get(row, t, k), t.field_type(k)) for k in self.nested_key)

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


class NestedUpdateAgg(NestedAggBase):
    """``nested_update``: upsert ARRAY<ROW> elements by nested key, or append without key;
    NULL elements dropped; ``count-limit``; ``nested-sequence-field``
    (docs/paimon_semantics.md#aggregate-functions)."""

    name = "nested_update"

    def __init__(self, settings: Mapping[str, Any]):
        super().__init__(settings)
        seq = self.settings.get("nested_seq")
        self.nested_seq: List[str] = [s for s in str(seq).split(",") if s] if seq else []
        limit = self.settings.get("count_limit")
        self.count_limit: Optional[int] = None if limit is None else int(limit)

    def _seq(self, row: Any) -> List[Any]:
        return [struct_get(row, self.row_type, s) for s in self.nested_seq]

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


class NestedPartialUpdateAgg(NestedAggBase):
    """``nested_partial_update``: rows with the same nested key are partially updated
    (non-NULL fields overwrite) (docs/paimon_semantics.md#aggregate-functions)."""

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
            for n, v in zip(self.row_type.field_names, struct_values(r, self.row_type)):
                if v is not None:
                    target[n] = v
        return list(merged.values())
