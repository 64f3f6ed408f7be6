"""Paimon's merge functions (Paimon ``mergetree/compact``, docs/paimon_semantics.md#merge-engines): one class
per merge engine, each folding one key's records of one merge pass with ``reset`` / ``add`` / ``result``.

Deliberate deviation: after a ``-D`` that removes the whole row (``partial-update.remove-record-on-delete``,
``partial-update.remove-record-on-sequence-group``, ``aggregation.remove-record-on-delete``) Paimon's
merge buffer is re-initialised with the delete record's own values, so a later add record of the
same merge pass inherits them until a full compaction drops the tombstone
(docs/paimon_semantics.md#delete-reset).
lakerank instead *resets to empty* (values and aggregator state), i.e. behaves as if the tombstone
had already been compacted away; the tombstone itself still carries the delete record's values.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Tuple

from python_udfs.paimon.aggregators import make_aggregator
from python_udfs.paimon.errors import PaimonMergeError
from python_udfs.paimon.field_aggregator import FieldAggregator
from python_udfs.paimon.values import compare_sequences

__all__ = [
    "ADD_KINDS",
    "ALL_KINDS",
    "FIRST_ROW_RETRACT_MESSAGE",
    "MERGE_FUNCTIONS",
    "RETRACT_KINDS",
    "Aggregate",
    "Deduplicate",
    "FirstRow",
    "MergeFunction",
    "PartialUpdate",
    "Record",
    "Row",
]

Row = Dict[str, Any]
Record = Tuple[str, Row]

ADD_KINDS = frozenset({"+I", "+U"})
RETRACT_KINDS = frozenset({"-U", "-D"})
ALL_KINDS = ADD_KINDS | RETRACT_KINDS

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


class MergeFunction:
    """One merge engine's fold of one key's records (Paimon ``MergeFunction``): ``reset()``
    starts a merge pass, ``add(kind, row)`` folds the next record in merge order, and
    ``result(key_row)`` is the merged ``(kind, row)`` (None when nothing survived), the
    primary key taken from ``key_row`` (the pass's latest record)."""

    def __init__(self, spec: Mapping[str, Any]):
        self.spec = spec
        self.reset()

    def reset(self) -> None:
        raise NotImplementedError

    def add(self, kind: str, in_row: Row) -> None:
        raise NotImplementedError

    def result(self, key_row: Row) -> Optional[Record]:
        raise NotImplementedError

    def with_key(self, values: Mapping[str, Any], key_row: Mapping[str, Any]) -> Row:
        """A full row: primary key from ``key_row``, values from ``values``."""
        pk = self.spec["primary_key"]
        return {name: key_row.get(name) if name in pk else values.get(name) for name, _ in self.spec["columns"]}


class Deduplicate(MergeFunction):
    """deduplicate (docs/paimon_semantics.md#deduplicate): the last record wins, its kind kept; ignore-delete
    skips retracts."""

    def reset(self) -> None:
        self.latest: Optional[Record] = None

    def add(self, kind: str, in_row: Row) -> None:
        if self.spec.get("ignore_delete") and kind not in ADD_KINDS:
            return
        self.latest = (kind, in_row)

    def result(self, key_row: Row) -> Optional[Record]:
        return None if self.latest is None else (self.latest[0], dict(self.latest[1]))


class FirstRow(MergeFunction):
    """first-row (docs/paimon_semantics.md#first-row): the first add record; retracts are refused unless
    ignore-delete."""

    def reset(self) -> None:
        self.first: Optional[Record] = None

    def add(self, kind: str, in_row: Row) -> None:
        if kind in RETRACT_KINDS:
            if self.spec.get("ignore_delete"):
                return
            raise PaimonMergeError(FIRST_ROW_RETRACT_MESSAGE)
        if self.first is None:
            self.first = (kind, dict(in_row))

    def result(self, key_row: Row) -> Optional[Record]:
        return self.first


class PartialUpdate(MergeFunction):
    """partial-update (Paimon ``PartialUpdateMergeFunction``, docs/paimon_semantics.md#partial-update)."""

    def __init__(self, spec: Mapping[str, Any]):
        self.groups = [(list(g["seq"]), list(g["fields"])) for g in spec.get("groups") or []]
        grouped = {f for seq, fs in self.groups for f in seq + fs}
        self.ungrouped = [c for c in spec["value_columns"] if c not in grouped]
        self.aggregators: Dict[str, Optional[FieldAggregator]] = {
            f: make_aggregator(s) for f, s in spec["fields"].items()
        }
        self.remove_on_group = set(spec.get("remove_record_on_sequence_group") or [])
        super().__init__(spec)

    def reset(self) -> None:
        self.row: Row = {}
        self.meet_insert = False
        self.tombstone: Optional[Row] = None
        for a in self.aggregators.values():
            if a is not None:
                a.reset()

    def _remove_row(self, delete_row: Row) -> None:
        # Reset to empty (not Paimon's re-initialisation with the -D values, docs/paimon_semantics.md#delete-reset);
        # the tombstone carries the delete record's values.
        self.reset()
        self.tombstone = dict(delete_row)

    def add(self, kind: str, in_row: Row) -> None:
        self.tombstone = None
        if kind in RETRACT_KINDS:
            self._retract(kind, in_row)
            return
        self.meet_insert = True
        if not self.groups:
            for f in self.spec["value_columns"]:  # non-NULL overwrite (docs/paimon_semantics.md#partial-update)
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
            return  # -U has no effect (docs/paimon_semantics.md#partial-update, pu-20)
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

    def result(self, key_row: Row) -> Optional[Record]:
        if self.tombstone is not None:
            return "-D", self.tombstone
        return ("+I" if self.meet_insert else "-D"), self.with_key(self.row, key_row)


class Aggregate(MergeFunction):
    """aggregation (Paimon ``AggregateMergeFunction``, docs/paimon_semantics.md#aggregation): add -> agg,
    retract -> retract; result kind always ``+I`` unless the last record removed the row
    (``aggregation.remove-record-on-delete``)."""

    def __init__(self, spec: Mapping[str, Any]):
        self.aggregators = {f: make_aggregator(spec["fields"][f]) for f in spec["value_columns"]}
        super().__init__(spec)

    def reset(self) -> None:
        self.row: Row = {}
        self.tombstone: Optional[Row] = None
        for a in self.aggregators.values():
            if a is not None:
                a.reset()

    def add(self, kind: str, in_row: Row) -> None:
        if kind == "-D" and self.spec.get("aggregation_remove_record_on_delete"):
            # Reset to empty instead of Paimon's re-initialisation with the -D values
            # (docs/paimon_semantics.md#delete-reset).
            self.reset()
            self.tombstone = dict(in_row)
            return
        self.tombstone = None
        is_retract = kind in RETRACT_KINDS
        for f, a in self.aggregators.items():
            assert a is not None, f"aggregation field {f} without aggregate function"
            acc, value = self.row.get(f), in_row.get(f)
            self.row[f] = a.retract(acc, value) if is_retract else a.agg(acc, value)

    def result(self, key_row: Row) -> Optional[Record]:
        if self.tombstone is not None:
            return "-D", self.tombstone
        return "+I", self.with_key(self.row, key_row)


MERGE_FUNCTIONS = {
    "deduplicate": Deduplicate,
    "first-row": FirstRow,
    "partial-update": PartialUpdate,
    "aggregation": Aggregate,
}
