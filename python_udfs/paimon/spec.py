"""The validated spec of a primary-key table (what :mod:`python_udfs.paimon.validation` builds).

:class:`MergeSpec` is typed and frozen; :meth:`MergeSpec.as_dict` is its plain form (dicts,
lists, str, int, bool, None) — the one the adapter hands to the ``pk_table`` macros, that
is shipped to executors as JSON and that :mod:`python_udfs.paimon.merge` executes::

    engine                      'deduplicate' | 'partial-update' | 'aggregation' | 'first-row'
    primary_key, partition_by   [column, ...]
    bucket                      int (-1 = one dynamic bucket, > 0 fixed buckets)
    bucket_key                  [column, ...]
    cross_partition_update      bool (PK does not contain every partition column)
    sequence_fields             [column, ...]           ('sequence.field', docs/paimon_semantics.md#merge-order)
    seq_descending              bool                    ('sequence.field.sort-order')
    ignore_delete, ignore_update_before                 bool (docs/paimon_semantics.md#write-filters)
    rowkind_field               column | None
    remove_record_on_delete     bool ('partial-update.remove-record-on-delete', docs/paimon_semantics.md#partial-update)
    remove_record_on_sequence_group  [sequence field, ...]
    aggregation_remove_record_on_delete  bool (docs/paimon_semantics.md#aggregation)
    groups                      [{"seq": [column, ...], "fields": [column, ...]}, ...]
    fields                      {value column: aggregator settings (FieldSpec.as_dict())}
    changelog_producer          'none' | 'input' | 'lookup' | 'full-compaction'
    lookup_compaction           bool (merges go through the merge function even for one record,
                                                        docs/paimon_semantics.md#single-record-shortcut)
    delta_commits               int ('full-compaction.delta-commits', default 1)
    row_dedup, row_dedup_ignore bool, [column, ...]
    value_columns               non-PK columns in table order
    columns                     [[name, spark type], ...] in table order
    column_types                {name: spark type}
    ignored                     [option key, ...] accepted without effect
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Tuple

__all__ = ["FieldSpec", "MergeSpec", "SequenceGroup"]


def _plain(value: Any) -> Any:
    """A dataclass / tuple / mapping as plain dicts and lists, fields in declaration order."""
    if dataclasses.is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class FieldSpec:
    """One value column's aggregator settings (docs/paimon_semantics.md#aggregation); ``fn`` None: no aggregate
    function."""

    fn: Optional[str]
    type: str
    ignore_retract: bool = False
    distinct: bool = False
    delimiter: str = ","
    nested_key: Tuple[str, ...] = ()
    nested_seq: Optional[str] = None  # comma-separated
    null_strategy: str = "merge"
    count_limit: Optional[int] = None
    ts_field: Optional[str] = None

    def as_dict(self) -> Dict[str, Any]:
        return _plain(self)


@dataclass(frozen=True)
class SequenceGroup:
    """``fields.<seq>.sequence-group = <fields>`` (docs/paimon_semantics.md#sequence-groups)."""

    seq: Tuple[str, ...]
    fields: Tuple[str, ...]


@dataclass(frozen=True)
class MergeSpec:
    """A primary-key table's validated Paimon options (the layout in the module doc)."""

    engine: str
    primary_key: Tuple[str, ...]
    partition_by: Tuple[str, ...]
    bucket: int
    bucket_key: Tuple[str, ...]
    cross_partition_update: bool
    sequence_fields: Tuple[str, ...]
    seq_descending: bool
    ignore_delete: bool
    ignore_update_before: bool
    rowkind_field: Optional[str]
    remove_record_on_delete: bool
    remove_record_on_sequence_group: Tuple[str, ...]
    aggregation_remove_record_on_delete: bool
    groups: Tuple[SequenceGroup, ...]
    fields: Mapping[str, FieldSpec]
    changelog_producer: str
    lookup_compaction: bool
    delta_commits: int
    row_dedup: bool
    row_dedup_ignore: Tuple[str, ...]
    value_columns: Tuple[str, ...]
    columns: Tuple[Tuple[str, str], ...]
    column_types: Mapping[str, str]
    ignored: Tuple[str, ...]

    def as_dict(self) -> Dict[str, Any]:
        """The plain form (module doc): what Jinja, the JSON wire and the merge kernel read."""
        return _plain(self)
