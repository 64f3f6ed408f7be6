"""One value column's aggregator options (docs/paimon_semantics.md#aggregate-functions): function / type
compatibility and the ``fields.<field>.*`` options, validated into a :class:`python_udfs.paimon.spec.FieldSpec`."""

from __future__ import annotations

from typing import AbstractSet, Any, Dict, Mapping, Optional, Sequence, Tuple

from python_udfs.paimon.errors import PaimonOptionError
from python_udfs.paimon.options import (
    FIELD_SUFFIXES,
    NULL_STRATEGIES,
    SUFFIX_FUNCTIONS,
    Options,
    Table,
    as_str,
    check_function_name,
    normalise_function,
    parse_bool,
    parse_enum,
    parse_int,
    split_list,
)
from python_udfs.paimon.spark_types import (
    NUMERIC_TYPES,
    ORDERED_TYPES,
    display_type,
    parse_type,
)
from python_udfs.paimon.spec import FieldSpec, SequenceGroup

__all__ = [
    "check_function_type",
    "field_settings",
    "validate_aggregate_functions",
    "validate_field",
    "validate_field_options",
]


def check_function_type(key: str, field: str, fn: str, type_str: str) -> None:
    """Function / column type compatibility (docs/paimon_semantics.md#aggregate-functions, 'column types')."""
    t = parse_type(type_str)
    shown = display_type(type_str)
    if fn in ("sum", "product"):
        if t.name not in NUMERIC_TYPES:
            raise PaimonOptionError(
                key, f"Data type for {fn} column must be 'NumericType' but was '{shown}' (field {field})."
            )
    elif fn in ("max", "min"):
        if t.name not in ORDERED_TYPES:
            raise PaimonOptionError(
                key, f"Data type for {fn} column must be a comparable atomic type but was '{shown}' (field {field})."
            )
    elif fn == "listagg":
        if t.name != "string":
            raise PaimonOptionError(
                key,
                f"Data type for list agg column must be STRING (unbounded VARCHAR), but was {shown} "
                f"(field {field}).",
            )
    elif fn in ("bool_and", "bool_or"):
        if t.name != "boolean":
            raise PaimonOptionError(
                key, f"Data type for {fn} column must be 'BooleanType' but was '{shown}' (field {field})."
            )
    elif fn == "collect":
        if t.name != "array":
            raise PaimonOptionError(
                key, f"Data type for collect column must be 'Array' but was '{shown}' (field {field})."
            )
    elif fn == "merge_map":
        if t.name != "map":
            raise PaimonOptionError(
                key, f"Data type of merge map column must be 'MAP' but was '{shown}' (field {field})."
            )
    elif fn == "merge_map_with_keytime":
        if t.name != "map":
            raise PaimonOptionError(key, f"Data type for field '{field}' must be 'MAP' but was '{shown}'")
        if t.value is None or t.value.name != "struct":
            raise PaimonOptionError(key, f"Value type of MAP for field '{field}' must be ROW but was '{shown}'")
        if len(t.value.fields) < 2:
            raise PaimonOptionError(
                key, f"ROW type for field '{field}' must have at least 2 fields, but found {len(t.value.fields)}"
            )
    elif fn in ("nested_update", "nested_partial_update"):
        if t.name != "array" or t.element is None or t.element.name != "struct":
            raise PaimonOptionError(
                key, f"Data type for nested table column must be 'Array<Row>' but was '{shown}' (field {field})."
            )


def validate_field(
    field: str,
    type_str: str,
    fn: Optional[str],
    options: Optional[Mapping[str, Any]] = None,
    *,
    fn_key: Optional[str] = None,
) -> FieldSpec:
    """Validated aggregator settings of one field (docs/paimon_semantics.md#aggregation).

    ``fn`` is the aggregate function (``None``: no aggregator); the field's
    ``fields.<field>.*`` options are read from ``options``.  ``fn_key`` is the option key that
    chose ``fn`` (named in errors).
    """
    opts = {str(k): as_str(v) for k, v in (options or {}).items()}
    prefix = f"fields.{field}."
    fn_key = fn_key or f"{prefix}aggregate-function"
    if fn is not None:
        fn = normalise_function(fn)
        check_function_name(fn_key, field, fn)
        check_function_type(fn_key, field, fn, type_str)
    given = {s: opts[prefix + s] for s in FIELD_SUFFIXES if s != "aggregate-function" and prefix + s in opts}
    settings = _validate_suffixes(field, fn, given)
    if fn in ("nested_update", "nested_partial_update"):
        settings.update(_validate_nested(field, type_str, fn, given))
    if fn == "merge_map_with_keytime":
        settings["ts_field"] = _validate_ts_field(field, type_str, given)
    return FieldSpec(fn=fn, type=str(type_str), **settings)


def field_settings(field: str, type_str: str, fn: Optional[str], options: Optional[Mapping[str, Any]] = None,
                   **kwargs: Optional[str]) -> Dict[str, Any]:
    """:func:`validate_field` in the spec's plain form (``FieldSpec.as_dict()``)::

        {"fn", "type", "ignore_retract", "distinct", "delimiter", "nested_key", "nested_seq",
         "null_strategy", "count_limit", "ts_field"}
    """
    return validate_field(field, type_str, fn, options, **kwargs).as_dict()


def _validate_suffixes(field: str, fn: Optional[str], given: Mapping[str, str]) -> Dict[str, Any]:
    """The scalar per-field options: each applies to ``fn``, its value parses."""
    prefix = f"fields.{field}."
    settings: Dict[str, Any] = {}
    for suffix, value in given.items():
        key = prefix + suffix
        if fn is None:
            raise PaimonOptionError(key, f"Option '{key}' has no effect: field {field} has no aggregate function.")
        allowed = SUFFIX_FUNCTIONS.get(suffix)
        if allowed is not None and fn not in allowed:
            raise PaimonOptionError(
                key, f"Option '{key}' has no effect on aggregate function '{fn}' (only on {', '.join(allowed)})."
            )
        if suffix == "ignore-retract":
            settings["ignore_retract"] = parse_bool(key, value)
        elif suffix == "distinct":
            settings["distinct"] = parse_bool(key, value)
        elif suffix == "list-agg-delimiter":
            settings["delimiter"] = value
        elif suffix == "count-limit":
            limit = parse_int(key, value)
            if limit < 0:
                raise PaimonOptionError(key, f"Option '{key}' must not be negative but was {limit}.")
            settings["count_limit"] = limit
        elif suffix == "nested-key-null-strategy":
            settings["null_strategy"] = parse_enum(key, value, NULL_STRATEGIES)
    return settings


def _validate_nested(field: str, type_str: str, fn: str, given: Mapping[str, str]) -> Dict[str, Any]:
    """``nested-key`` / ``nested-sequence-field`` of a nested_update / nested_partial_update field."""
    prefix = f"fields.{field}."
    row_type = parse_type(type_str).element
    assert row_type is not None
    key = prefix + "nested-key"
    nested_key = [k for k in split_list(given["nested-key"]) if k] if "nested-key" in given else []
    for k in nested_key:
        if row_type.field_type(k) is None:
            raise PaimonOptionError(
                key, f"Nested key field '{k}' of field {field} not found in {display_type(type_str)}."
            )
    if fn == "nested_partial_update" and not nested_key:
        raise PaimonOptionError(
            key, f"Aggregate function 'nested_partial_update' (field {field}) requires option '{key}'."
        )
    if "nested-key-null-strategy" in given and not nested_key:
        raise PaimonOptionError(
            prefix + "nested-key-null-strategy",
            f"Option '{prefix}nested-key-null-strategy' requires '{prefix}nested-key' to be configured.",
        )
    out: Dict[str, Any] = {"nested_key": tuple(nested_key)}
    if "nested-sequence-field" in given:
        seq_key = prefix + "nested-sequence-field"
        if not nested_key:
            raise PaimonOptionError(seq_key, f"Option '{seq_key}' requires '{prefix}nested-key' to be configured.")
        seq = [s for s in split_list(given["nested-sequence-field"]) if s]
        for s in seq:
            if row_type.field_type(s) is None:
                raise PaimonOptionError(
                    seq_key, f"Nested sequence field '{s}' of field {field} not found in {display_type(type_str)}."
                )
        out["nested_seq"] = ",".join(seq) or None
    return out


def _validate_ts_field(field: str, type_str: str, given: Mapping[str, str]) -> str:
    """``ts-field`` of a merge_map_with_keytime field; default the ROW's last field."""
    row_type = parse_type(type_str).value
    assert row_type is not None
    if "ts-field" not in given:
        return row_type.fields[-1][0]
    ts = given["ts-field"].strip()
    if row_type.field_type(ts) is None:
        raise PaimonOptionError(
            f"fields.{field}.ts-field",
            f"Timestamp field '{ts}' not found in ROW type for field '{field}'. "
            f"Available fields: {row_type.field_names}",
        )
    return ts


# ------------------------------------------------------------------------------------------
# The value columns of a table (steps of validation.validate_options)
# ------------------------------------------------------------------------------------------


def _needs_aggregating_engine(key: str, engine: str) -> PaimonOptionError:
    return PaimonOptionError(
        key, f"Option '{key}' needs merge-engine 'aggregation' or 'partial-update' (is '{engine}')."
    )


def validate_field_options(
    opts: Options, field_opts: Mapping[str, Mapping[str, str]], engine: str, table: Table
) -> None:
    """Per-field options name existing value columns of an aggregating engine."""
    agg_engine = engine in ("aggregation", "partial-update")
    for field, suffixes in field_opts.items():
        for suffix in suffixes:
            key = f"fields.{field}.{suffix}"
            if field not in table.names:
                raise PaimonOptionError(key, f"Field {field} can not be found in table schema (option '{key}').")
            if not agg_engine:
                raise _needs_aggregating_engine(key, engine)
            if field in table.primary_key:
                raise PaimonOptionError(
                    key, f"Option '{key}' is set on primary key column {field}; primary keys are never aggregated."
                )
    if "fields.default-aggregate-function" in opts and not agg_engine:
        raise _needs_aggregating_engine("fields.default-aggregate-function", engine)


def validate_aggregate_functions(
    opts: Options,
    engine: str,
    table: Table,
    field_opts: Mapping[str, Mapping[str, str]],
    sequence_fields: Sequence[str],
    groups: Sequence[SequenceGroup],
) -> Dict[str, FieldSpec]:
    """Each value column's aggregate function (its own, the sequence field's, the default or
    the engine's) and its validated settings (docs/paimon_semantics.md#merge-order, #sequence-groups,
    #aggregation)."""
    value_columns = [n for n in table.names if n not in table.primary_key]
    group_seq_fields = {f for g in groups for f in g.seq}
    protected = {f for g in groups for f in g.fields}
    default_fn = opts.get("fields.default-aggregate-function")
    if default_fn is not None:
        default_fn = normalise_function(default_fn)
    chosen: Dict[str, Tuple[Optional[str], Optional[str]]] = {}  # field -> (fn, key that chose it)
    for field in value_columns:
        own = field_opts.get(field, {}).get("aggregate-function")
        own_key = f"fields.{field}.aggregate-function"
        if own is not None and (field in sequence_fields or field in group_seq_fields):
            raise PaimonOptionError(own_key, f"Should not define aggregation on sequence field: '{field}'.")
        fn, fn_key = _function_of(engine, field, own, default_fn, sequence_fields, group_seq_fields)
        if engine == "partial-update" and fn is not None and fn != "last_non_null_value" and field not in protected:
            raise PaimonOptionError(
                fn_key or own_key, f"Must use sequence group for aggregation functions but not found for field {field}."
            )
        chosen[field] = (fn, fn_key)
    if default_fn is not None:
        check_function_name("fields.default-aggregate-function", "<default>", default_fn)
    for field, (fn, fn_key) in chosen.items():
        if fn is not None:
            check_function_name(fn_key or f"fields.{field}.aggregate-function", field, fn)
    fields: Dict[str, FieldSpec] = {}
    for field, (fn, fn_key) in chosen.items():
        per_field = {f"fields.{field}.{s}": v for s, v in field_opts.get(field, {}).items()}
        fields[field] = validate_field(field, table.types[field], fn, per_field, fn_key=fn_key)
    return fields

def _function_of(
    engine: str,
    field: str,
    own: Optional[str],
    default_fn: Optional[str],
    sequence_fields: Sequence[str],
    group_seq_fields: AbstractSet[str],
) -> Tuple[Optional[str], Optional[str]]:
    """``(function, option key that chose it)`` of one value column."""
    if own is not None:
        return normalise_function(own), f"fields.{field}.aggregate-function"
    if engine == "aggregation" and field in sequence_fields:
        return "last_value", None  # sequence fields use last_value (docs/paimon_semantics.md#aggregation)
    if engine == "partial-update" and field in group_seq_fields:
        return None, None  # group sequence fields are versioned, never aggregated
    if default_fn is not None:
        return default_fn, "fields.default-aggregate-function"
    if engine == "aggregation":
        return "last_non_null_value", None
    return None, None
