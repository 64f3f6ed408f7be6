"""Apache Paimon primary-key merge semantics in pure Python (stdlib only): one commit of one key.

Executes a spec produced by :func:`python_udfs.paimon.validation.parse_options` (its
``as_dict()``, the form shipped to executors as JSON) on the records of one primary key.
The rules it follows are written out in docs/paimon_semantics.md (cited by anchor).

Data model
----------
* A *row* is a ``dict`` column -> value, values as pyarrow's ``to_pylist()`` yields them: int,
  float, ``decimal.Decimal``, str, bytes, ``datetime.date`` / ``datetime.datetime``, bool, ``list``
  for ARRAY, ``dict`` for STRUCT, a ``list`` of ``(key, value)`` tuples for MAP (maps are returned
  in that form too).
* A *record* is ``(kind, row)`` with ``kind`` one of ``'+I'``, ``'-U'``, ``'+U'``, ``'-D'``
  (docs/paimon_semantics.md#records); ``+I``/``+U`` are *add* kinds, ``-U``/``-D`` *retract* kinds.

Entry points
------------
:func:`write_filter`, :func:`merge_order`, :func:`merge_pass` (the merge functions of
:mod:`python_udfs.paimon.merge_functions`), :func:`commit_key` (one commit of one key: pre-merge,
merge with the stored row, changelog); each cites its section of docs/paimon_semantics.md. The
field aggregators are in :mod:`python_udfs.paimon.aggregators`.
"""

from __future__ import annotations

from functools import cmp_to_key
from typing import Any, Dict, List, Mapping, Optional, Sequence

from python_udfs.paimon.errors import PaimonMergeError
from python_udfs.paimon.merge_functions import (
    ADD_KINDS,
    ALL_KINDS,
    FIRST_ROW_RETRACT_MESSAGE,
    MERGE_FUNCTIONS,
    RETRACT_KINDS,
    Record,
    Row,
)
from python_udfs.paimon.values import compare_sequences, values_equal

__all__ = ["commit_key", "lookup_changelog", "merge_order", "merge_pass", "write_filter"]


def write_filter(spec: Mapping[str, Any], records: Sequence[Record]) -> List[Record]:
    """Apply the write-time filters in Paimon's order (docs/paimon_semantics.md#write-filters):
    ``rowkind.field``, then ``ignore-delete`` (drops ``-D`` and ``-U``), ``ignore-update-before``
    (drops ``-U``).

    A first-row table without ``ignore-delete`` refuses ``-D``/``-U`` records
    (docs/paimon_semantics.md#first-row).
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
    """Records in merge order (docs/paimon_semantics.md#merge-order): by ``sequence.field`` values (NULL
    smallest; descending reverses only non-null comparisons), ties in input order (stable sort)."""
    fields = list(spec.get("sequence_fields") or [])
    if not fields:
        return list(records)
    descending = bool(spec.get("seq_descending"))

    def cmp(a: Record, b: Record) -> int:
        return compare_sequences([a[1].get(f) for f in fields], [b[1].get(f) for f in fields], descending)

    return sorted(records, key=cmp_to_key(cmp))


def merge_pass(spec: Mapping[str, Any], records: Sequence[Record], shortcut: bool = True) -> Optional[Record]:
    """One merge of one key's ``records`` (already in merge order) by the table's engine.

    With ``shortcut`` a lone record is returned unchanged, kind included, without calling the
    merge function (``ReducerMergeFunctionWrapper``, docs/paimon_semantics.md#single-record-shortcut).
    Returns ``(kind, row)`` or None when the merge function yields nothing (e.g. only ignored
    deletes).
    """
    if not records:
        return None
    if shortcut and len(records) == 1:
        kind, row = records[0]
        return kind, dict(row)
    function = MERGE_FUNCTIONS[spec["engine"]](spec)  # reset for this pass
    for kind, row in records:
        function.add(kind, row)
    return function.result(records[-1][1])


# ------------------------------------------------------------------------------------------
# One commit of one key (docs/paimon_semantics.md#where-merges-happen, #changelog-producers)
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
    """Changelog of one key from its before/after values (``before``/``after`` None = absent;
    docs/paimon_semantics.md#changelog-producers).

    first-row emits only ``+I`` for keys never seen before (docs/paimon_semantics.md#first-row).
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

    ``input``      the write-filtered records (changelog-producer ``input``);
    ``premerged``  the commit's own records merged in merge order with the single-record
                   shortcut — what Paimon writes for the key (docs/paimon_semantics.md#where-merges-happen),
                   or None if no record survived the filters;
    ``before``     ``stored``;
    ``after``      the merge of ``[stored as +I, premerged]`` (merge order, stored first on ties),
                   or None when the result kind is ``-U``/``-D``: tombstones are dropped at every
                   commit, i.e. the table behaves as if fully compacted after each commit
                   (docs/paimon_semantics.md#tombstones);
    ``lookup``     the lookup / full-compaction changelog of the commit
                   (docs/paimon_semantics.md#changelog-producers).

    ``lookup_compaction`` (default: ``spec['lookup_compaction']``, true for
    ``changelog-producer=lookup``): the merge with the stored row calls the merge function even
    for a single record, as Paimon's lookup compaction does
    (docs/paimon_semantics.md#single-record-shortcut).  It matters only for a key without stored row, e.g. a
    lone ``-D`` on an aggregation table becomes ``+I`` with retracted values.
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
        after = merged[1] if merged is not None and merged[0] in ADD_KINDS else None
        changelog = lookup_changelog(spec, stored, after)

    return {
        "input": kept,
        "premerged": premerged,
        "before": stored,
        "after": after,
        "lookup": changelog,
    }
