"""Validation of a primary-key table's Paimon options, step by step (Paimon's
``SchemaValidation``), into a typed :class:`python_udfs.paimon.spec.MergeSpec`.

:func:`validate_options` runs the ``validate_*`` steps in a fixed order, so the first invalid
option found is the one named; each step raises :class:`PaimonOptionError` (``.key`` = the
offending option key) and returns what it validated. :func:`parse_options` is the same as
the spec's plain form (``MergeSpec.as_dict()``), what the adapter and the merge kernel use.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from python_udfs.paimon.errors import PaimonOptionError
from python_udfs.paimon.field_options import (
    validate_aggregate_functions,
    validate_field_options,
)
from python_udfs.paimon.options import (
    CHANGELOG_PRODUCERS,
    ENGINES,
    IGNORE_DELETE_KEYS,
    Options,
    Table,
    as_str,
    check_columns_exist,
    classify_keys,
    parse_bool,
    parse_enum,
    parse_int,
    split_list,
)
from python_udfs.paimon.spark_types import CONSTRUCTED_TYPES, STRING_TYPES, parse_type
from python_udfs.paimon.spec import MergeSpec, SequenceGroup

__all__ = [
    "parse_options",
    "validate_bucket",
    "validate_changelog_producer",
    "validate_delete_conflicts",
    "validate_delete_options",
    "validate_ignore_delete",
    "validate_options",
    "validate_row_dedup_ignore",
    "validate_rowkind_field",
    "validate_sequence_field",
    "validate_sequence_groups",
    "validate_table",
]


def parse_options(
    options: Mapping[str, Any],
    columns: Sequence[Tuple[str, str]],
    primary_key: Sequence[str],
    partition_by: Sequence[str] = (),
) -> Dict[str, Any]:
    """:func:`validate_options` in the spec's plain form (``MergeSpec.as_dict()``)."""
    return validate_options(options, columns, primary_key, partition_by).as_dict()


def validate_options(
    options: Mapping[str, Any],
    columns: Sequence[Tuple[str, str]],
    primary_key: Sequence[str],
    partition_by: Sequence[str] = (),
) -> MergeSpec:
    """Validate Paimon table ``options`` of a primary-key table; the typed spec.

    ``columns`` are ``(name, Spark simple type)`` pairs in table order.  Raises
    :class:`PaimonOptionError` (``.key`` = offending option key) on any invalid option.
    """
    table = validate_table(columns, primary_key, partition_by)
    opts: Dict[str, str] = {str(k): as_str(v) for k, v in options.items()}
    keys = classify_keys(opts)
    engine = parse_enum("merge-engine", opts["merge-engine"], ENGINES) if "merge-engine" in opts else "deduplicate"
    producer = (
        parse_enum("changelog-producer", opts["changelog-producer"], CHANGELOG_PRODUCERS)
        if "changelog-producer" in opts
        else "none"
    )
    ignore_delete = validate_ignore_delete(opts)
    ignore_update_before = _bool_option(opts, "ignore-update-before")
    row_dedup = _bool_option(opts, "changelog-producer.row-deduplicate")
    row_dedup_ignore = validate_row_dedup_ignore(opts, table)
    bucket, bucket_key = validate_bucket(opts, table)
    sequence_fields, seq_descending = validate_sequence_field(opts, engine, table)
    rowkind_field = validate_rowkind_field(opts, table)
    delta_commits = validate_changelog_producer(opts, engine, producer)
    remove_on_delete, remove_on_seq_group, agg_remove_on_delete, ignored = validate_delete_options(opts, engine)
    validate_field_options(opts, keys.field_options, engine, table)
    groups = validate_sequence_groups(keys.sequence_groups, engine, table)
    validate_delete_conflicts(
        opts, engine, ignore_delete, remove_on_delete, remove_on_seq_group, agg_remove_on_delete, groups,
        keys.field_options,
    )
    fields = validate_aggregate_functions(opts, engine, table, keys.field_options, sequence_fields, groups)
    return MergeSpec(
        engine=engine,
        primary_key=table.primary_key,
        partition_by=table.partition_by,
        bucket=bucket,
        bucket_key=bucket_key,
        cross_partition_update=_cross_partition(table),
        sequence_fields=sequence_fields,
        seq_descending=seq_descending,
        ignore_delete=ignore_delete,
        ignore_update_before=ignore_update_before,
        rowkind_field=rowkind_field,
        remove_record_on_delete=remove_on_delete,
        remove_record_on_sequence_group=remove_on_seq_group,
        aggregation_remove_record_on_delete=agg_remove_on_delete,
        groups=groups,
        fields=fields,
        changelog_producer=producer,
        lookup_compaction=producer == "lookup",
        delta_commits=delta_commits,
        row_dedup=row_dedup,
        row_dedup_ignore=row_dedup_ignore,
        value_columns=tuple(n for n in table.names if n not in table.primary_key),
        columns=table.columns,
        column_types=table.types,
        ignored=keys.ignored + ignored,
    )


def _bool_option(opts: Options, key: str) -> bool:
    return parse_bool(key, opts[key]) if key in opts else False


def _cross_partition(table: Table) -> bool:
    return not set(table.partition_by) <= set(table.primary_key)


# ------------------------------------------------------------------------------------------
# The steps, in validate_options' order
# ------------------------------------------------------------------------------------------


def validate_table(
    columns: Sequence[Tuple[str, str]], primary_key: Sequence[str], partition_by: Sequence[str]
) -> Table:
    """Column types parse, names are unique, primary key and partition columns exist."""
    cols = tuple((str(n), str(t)) for n, t in columns)
    names = [n for n, _ in cols]
    for n, t in cols:
        try:
            parse_type(t)
        except ValueError as exc:
            raise PaimonOptionError("columns", f"Column {n}: {exc}") from None
    if len(set(names)) != len(names):
        raise PaimonOptionError("columns", f"Duplicate column names in {names}.")
    pk = [str(c) for c in primary_key]
    partition = [str(c) for c in partition_by]
    if not pk:
        raise PaimonOptionError("primary-key", "A primary-key table needs at least one 'primary-key' column.")
    check_columns_exist("primary-key", pk, names, "Primary key column")
    if len(set(pk)) != len(pk):
        raise PaimonOptionError("primary-key", f"Primary key {pk} lists a column twice.")
    check_columns_exist("partition", partition, names, "Partition column")
    return Table(cols, tuple(pk), tuple(partition))


def validate_ignore_delete(opts: Options) -> bool:
    """``ignore-delete`` and its engine-prefixed spellings must agree (docs/paimon_semantics.md#write-filters)."""
    ignore_delete = False
    seen_key: Optional[str] = None
    for key in IGNORE_DELETE_KEYS:
        if key in opts:
            v = parse_bool(key, opts[key])
            if seen_key is None:
                ignore_delete, seen_key = v, key
            elif v != ignore_delete:
                raise PaimonOptionError(key, f"Option '{key}' contradicts '{seen_key}'.")
    return ignore_delete


def validate_row_dedup_ignore(opts: Options, table: Table) -> Tuple[str, ...]:
    key = "changelog-producer.row-deduplicate-ignore-fields"
    if key not in opts:
        return ()
    ignore = [f for f in split_list(opts[key]) if f]
    check_columns_exist(key, ignore, table.names, "Field")
    return tuple(ignore)


def validate_bucket(opts: Options, table: Table) -> Tuple[int, Tuple[str, ...]]:
    """``primary-key`` / ``partition`` options agree with the model's; ``bucket`` and
    ``bucket-key``; a cross-partition update needs the dynamic bucket."""
    pk, partition = list(table.primary_key), list(table.partition_by)
    for key, configured in (("primary-key", pk), ("partition", partition)):
        if key in opts:
            given = [c for c in split_list(opts[key]) if c]
            if given != configured:
                raise PaimonOptionError(
                    key, f"Option '{key}' = '{opts[key]}' disagrees with the configured {key} {configured}."
                )
    bucket = parse_int("bucket", opts["bucket"]) if "bucket" in opts else -1
    if bucket == 0 or bucket < -1:
        raise PaimonOptionError(
            "bucket", f"Option 'bucket' must be -1 (dynamic) or a positive number of buckets but was {bucket}."
        )
    if _cross_partition(table) and bucket != -1:
        raise PaimonOptionError(
            "bucket",
            "You should use dynamic bucket (bucket = -1) mode in cross partition update case "
            f"(Primary key constraint {pk} not include all partition fields {partition}).",
        )
    if "bucket-key" not in opts:
        return bucket, tuple(c for c in pk if c not in partition) or tuple(pk)
    bucket_key = [c for c in split_list(opts["bucket-key"]) if c]
    check_columns_exist("bucket-key", bucket_key, table.names, "Bucket key")
    if not bucket_key or not set(bucket_key) <= set(pk) - set(partition):
        raise PaimonOptionError(
            "bucket-key",
            f"Bucket key {bucket_key} must be a non-empty subset of the primary key {pk} "
            f"without partition columns {partition}.",
        )
    return bucket, tuple(bucket_key)


def _check_sequence_type(key: str, field: str, table: Table) -> None:
    type_str = table.types[field]
    if parse_type(type_str).name in CONSTRUCTED_TYPES:
        raise PaimonOptionError(key, f"Sequence field '{field}' has a non-comparable type {type_str}.")


def validate_sequence_field(opts: Options, engine: str, table: Table) -> Tuple[Tuple[str, ...], bool]:
    """``sequence.field`` and ``sequence.field.sort-order`` (docs/paimon_semantics.md#merge-order)."""
    sequence_fields: List[str] = []
    key = "sequence.field"
    if key in opts:
        if engine == "first-row":
            raise PaimonOptionError(key, "Do not support use sequence field on FIRST_ROW merge engine.")
        sequence_fields = split_list(opts[key])
        for f in sequence_fields:
            if f not in table.names:
                raise PaimonOptionError(key, f"Nonexistent sequence field: '{f}' (option '{key}').")
            _check_sequence_type(key, f, table)
        dupes = sorted({f for f in sequence_fields if sequence_fields.count(f) > 1})
        if dupes:
            raise PaimonOptionError(key, f"Sequence field '{dupes[0]}' is defined repeatedly in '{key}'.")
    seq_descending = False
    key = "sequence.field.sort-order"
    if key in opts:
        seq_descending = parse_enum(key, opts[key], ("ascending", "descending")) == "descending"
        if not sequence_fields:
            raise PaimonOptionError(key, f"Option '{key}' has no effect without 'sequence.field'.")
    return tuple(sequence_fields), seq_descending


def validate_rowkind_field(opts: Options, table: Table) -> Optional[str]:
    """``rowkind.field`` (docs/paimon_semantics.md#write-filters): an existing STRING column."""
    key = "rowkind.field"
    if key not in opts:
        return None
    field = opts[key].strip()
    if field not in table.names:
        raise PaimonOptionError(key, f"Row kind field '{field}' of option '{key}' can not be found in table schema.")
    if parse_type(table.types[field]).name not in STRING_TYPES:
        raise PaimonOptionError(
            key, f"Row kind field '{field}' must be a STRING column but is {table.types[field]}."
        )
    return field


def validate_changelog_producer(opts: Options, engine: str, producer: str) -> int:
    """The producer fits the engine (docs/paimon_semantics.md#first-row, #changelog-producers);
    ``full-compaction.delta-commits``."""
    if engine == "first-row" and producer not in ("none", "lookup"):
        raise PaimonOptionError(
            "changelog-producer", "Only support 'none' and 'lookup' changelog-producer on FIRST_ROW merge engine"
        )
    key = "full-compaction.delta-commits"
    if key not in opts:
        return 1
    delta_commits = parse_int(key, opts[key])
    if delta_commits <= 0:
        raise PaimonOptionError(key, f"Option '{key}' must be a positive integer but was {delta_commits}.")
    if producer == "lookup":
        raise PaimonOptionError(key, f"Option '{key}' can not be used with changelog-producer 'lookup'.")
    if producer != "full-compaction":
        raise PaimonOptionError(
            key, f"Option '{key}' only has an effect with changelog-producer 'full-compaction' (is '{producer}')."
        )
    return delta_commits


def validate_delete_options(opts: Options, engine: str) -> Tuple[bool, Tuple[str, ...], bool, Tuple[str, ...]]:
    """The engine-specific delete options (docs/paimon_semantics.md#partial-update, #aggregation):
    ``(remove_record_on_delete, remove_record_on_sequence_group, aggregation_remove_record_on_delete,
    ignored keys)``; another engine's are accepted without effect (ignored)."""
    ignored: List[str] = []
    remove_on_delete = _bool_option(opts, "partial-update.remove-record-on-delete")
    remove_on_seq_group: Tuple[str, ...] = ()
    if "partial-update.remove-record-on-sequence-group" in opts:
        remove_on_seq_group = tuple(split_list(opts["partial-update.remove-record-on-sequence-group"]))
    agg_remove_on_delete = _bool_option(opts, "aggregation.remove-record-on-delete")
    if engine != "partial-update":
        for key in ("partial-update.remove-record-on-delete", "partial-update.remove-record-on-sequence-group"):
            if key in opts:
                ignored.append(key)
        remove_on_delete, remove_on_seq_group = False, ()
    if engine != "aggregation" and "aggregation.remove-record-on-delete" in opts:
        ignored.append("aggregation.remove-record-on-delete")
        agg_remove_on_delete = False
    return remove_on_delete, remove_on_seq_group, agg_remove_on_delete, tuple(ignored)


def validate_sequence_groups(
    group_opts: Sequence[Tuple[str, Tuple[str, ...], Tuple[str, ...]]], engine: str, table: Table
) -> Tuple[SequenceGroup, ...]:
    """``fields.<seq>.sequence-group`` (docs/paimon_semantics.md#sequence-groups): partial-update only, existing
    non-key columns, each field in at most one group."""
    groups: List[SequenceGroup] = []
    protected_by: Dict[str, str] = {}
    group_seq_fields: List[str] = []
    for key, seq, protected in group_opts:
        if engine != "partial-update":
            raise PaimonOptionError(key, f"Option '{key}' needs merge-engine 'partial-update' (is '{engine}').")
        for f in seq + protected:
            if f not in table.names:
                raise PaimonOptionError(key, f"Field {f} can not be found in table schema (option '{key}').")
            if f in table.primary_key:
                raise PaimonOptionError(key, f"Primary key {f} can not be part of a sequence group (option '{key}').")
        for f in seq:
            if f in group_seq_fields or f in protected_by:
                raise PaimonOptionError(key, f"Field {f} is defined repeatedly by multiple groups: {key}")
            _check_sequence_type(key, f, table)
        for f in protected:
            if f in protected_by or f in group_seq_fields or f in seq or protected.count(f) > 1:
                raise PaimonOptionError(key, f"Field {f} is defined repeatedly by multiple groups: {key}")
            protected_by[f] = key
        group_seq_fields.extend(seq)
        groups.append(SequenceGroup(seq, protected))
    return tuple(groups)


def validate_delete_conflicts(
    opts: Options,
    engine: str,
    ignore_delete: bool,
    remove_on_delete: bool,
    remove_on_seq_group: Sequence[str],
    agg_remove_on_delete: bool,
    groups: Sequence[SequenceGroup],
    field_opts: Mapping[str, Mapping[str, str]],
) -> None:
    """Delete options that contradict each other (docs/paimon_semantics.md#partial-update, #aggregation)."""
    if engine == "partial-update":
        key = "partial-update.remove-record-on-sequence-group"
        if remove_on_delete and ignore_delete:
            raise PaimonOptionError(
                "partial-update.remove-record-on-delete",
                "ignore-delete and partial-update.remove-record-on-delete have conflicting behavior so should "
                "not be enabled at the same time.",
            )
        if key in opts and ignore_delete:
            raise PaimonOptionError(
                key,
                f"ignore-delete and {key} have conflicting behavior so should not be enabled at the same time.",
            )
        if remove_on_delete and groups:
            raise PaimonOptionError(
                "partial-update.remove-record-on-delete",
                "sequence-group and partial-update.remove-record-on-delete have conflicting behavior so should "
                "not be enabled at the same time.",
            )
        group_seq_fields = {f for g in groups for f in g.seq}
        if key in opts and not all(f in group_seq_fields for f in remove_on_seq_group):
            raise PaimonOptionError(
                key, f"field '{opts[key]}' defined in '{key}' option must be part of sequence groups"
            )
    if engine == "aggregation" and agg_remove_on_delete:
        for field, suffixes in field_opts.items():
            key = f"fields.{field}.ignore-retract"
            if "ignore-retract" in suffixes and parse_bool(key, suffixes["ignore-retract"]):
                raise PaimonOptionError(
                    key,
                    f"aggregation.remove-record-on-delete and {key} have conflicting behavior so should not be "
                    "enabled at the same time.",
                )
