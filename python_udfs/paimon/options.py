"""Validation and normalisation of Apache Paimon primary-key table options.

:func:`parse_options` turns a ``pk_table``'s Paimon option map (keys spelled exactly as
Paimon spells them) into a plain, JSON-serialisable *spec* that :mod:`python_udfs.paimon.merge`
executes.  Section numbers (``§2.3`` …) refer to ``PAIMON_SEMANTICS.md`` (the shared notes on
Paimon's rules, read at Paimon commit ``5dacde51``).

Design choice — fail loudly
---------------------------
Paimon silently ignores many misspelt or meaningless options: an unknown key such as
``fields.x.aggregation-function`` (vector pu-30 shows Paimon ignores it, so no aggregate is
applied), an aggregate function on a primary-key column (pu-27), an aggregate option on a
``deduplicate`` table.  lakerank rejects all of these with a :class:`PaimonOptionError` naming
the offending key instead, because a silently ignored option is almost always a bug in the
model.  Exceptions, kept because Paimon's own tests rely on them:

* options of another merge engine (``partial-update.remove-record-on-delete`` on a
  ``deduplicate`` table, vector cl-07a; ``aggregation.remove-record-on-delete`` on a
  ``partial-update`` table) are accepted without effect and listed in ``spec["ignored"]``;
* physical / tuning options that do not change the logical result (``file.format``,
  ``write-buffer-size``, ``deletion-vectors.*``, ``compaction.*`` …) are accepted without effect
  and listed in ``spec["ignored"]``.

Functions Spark cannot express (``hll_sketch``, ``theta_sketch``, ``rbm32``, ``rbm64``: they
need the DataSketches / RoaringBitmap binary formats) are rejected.  ``count`` is not a Paimon
aggregate function at this commit (§6.4) and gets Paimon's unknown-function error.

Spec layout (all plain dicts / lists / str / int / bool / None)::

    engine                      'deduplicate' | 'partial-update' | 'aggregation' | 'first-row'
    primary_key, partition_by   [column, ...]
    bucket                      int (-1 = one dynamic bucket, > 0 fixed buckets)
    bucket_key                  [column, ...]
    cross_partition_update      bool (PK does not contain every partition column)
    sequence_fields             [column, ...]           ('sequence.field', §1)
    seq_descending              bool                    ('sequence.field.sort-order')
    ignore_delete, ignore_update_before                 bool (§0.8)
    rowkind_field               column | None
    remove_record_on_delete     bool ('partial-update.remove-record-on-delete', §2.3)
    remove_record_on_sequence_group  [sequence field, ...]
    aggregation_remove_record_on_delete  bool (§2.4)
    groups                      [{"seq": [column, ...], "fields": [column, ...]}, ...]
    fields                      {value column: aggregator settings, see field_settings()}
    changelog_producer          'none' | 'input' | 'lookup' | 'full-compaction'
    lookup_compaction           bool (merges go through the merge function even for one record, §0.5)
    delta_commits               int ('full-compaction.delta-commits', default 1)
    row_dedup, row_dedup_ignore bool, [column, ...]
    value_columns               non-PK columns in table order
    columns                     [[name, spark type], ...] in table order
    column_types                {name: spark type}
    ignored                     [option key, ...] accepted without effect
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

__all__ = [
    "AGGREGATE_FUNCTIONS",
    "PaimonOptionError",
    "SparkType",
    "field_settings",
    "parse_options",
    "parse_type",
]


class PaimonOptionError(ValueError):
    """An invalid Paimon table option; ``key`` is the offending option key."""

    def __init__(self, key: str, message: str):
        self.key = key
        text = message if key in message else f"{message} (option '{key}')"
        super().__init__(text)


# ------------------------------------------------------------------------------------------
# Spark simple type strings
# ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SparkType:
    """A parsed Spark type (``DataType.simpleString()`` syntax)."""

    name: str
    precision: Optional[int] = None  # decimal
    scale: Optional[int] = None  # decimal
    length: Optional[int] = None  # char / varchar
    element: Optional["SparkType"] = None  # array
    key: Optional["SparkType"] = None  # map
    value: Optional["SparkType"] = None  # map
    fields: Tuple[Tuple[str, "SparkType"], ...] = ()  # struct

    @property
    def field_names(self) -> List[str]:
        return [n for n, _ in self.fields]

    def field_type(self, name: str) -> Optional["SparkType"]:
        for n, t in self.fields:
            if n == name:
                return t
        return None


INTEGRAL_TYPES = frozenset({"tinyint", "smallint", "int", "bigint"})
NUMERIC_TYPES = INTEGRAL_TYPES | {"float", "double", "decimal"}
STRING_TYPES = frozenset({"string", "varchar", "char"})
CONSTRUCTED_TYPES = frozenset({"array", "map", "struct"})
ORDERED_TYPES = NUMERIC_TYPES | STRING_TYPES | {"boolean", "binary", "date", "timestamp", "timestamp_ntz"}

_ALIASES = {
    "integer": "int",
    "long": "bigint",
    "short": "smallint",
    "byte": "tinyint",
    "bool": "boolean",
    "real": "float",
    "dec": "decimal",
    "numeric": "decimal",
    "timestamp_ltz": "timestamp",
}


class _TypeParser:
    def __init__(self, text: str):
        self.text = text
        self.pos = 0

    def fail(self, what: str) -> "ValueError":
        return ValueError(f"cannot parse Spark type '{self.text}': {what} at position {self.pos}")

    def skip_ws(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos].isspace():
            self.pos += 1

    def peek(self) -> str:
        self.skip_ws()
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def expect(self, ch: str) -> None:
        if self.peek() != ch:
            raise self.fail(f"expected '{ch}'")
        self.pos += 1

    def word(self) -> str:
        self.skip_ws()
        m = re.compile(r"[A-Za-z_][A-Za-z0-9_]*").match(self.text, self.pos)
        if not m:
            raise self.fail("expected a type name")
        self.pos = m.end()
        return m.group(0)

    def field_name(self) -> str:
        self.skip_ws()
        if self.peek() == "`":
            end = self.pos + 1
            out = []
            while end < len(self.text):
                if self.text[end] == "`":
                    if self.text[end + 1 : end + 2] == "`":
                        out.append("`")
                        end += 2
                        continue
                    self.pos = end + 1
                    return "".join(out)
                out.append(self.text[end])
                end += 1
            raise self.fail("unterminated quoted field name")
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] not in ":,<>":
            self.pos += 1
        name = self.text[start : self.pos].strip()
        if not name:
            raise self.fail("expected a field name")
        return name

    def integer(self) -> int:
        self.skip_ws()
        m = re.compile(r"\d+").match(self.text, self.pos)
        if not m:
            raise self.fail("expected an integer")
        self.pos = m.end()
        return int(m.group(0))

    def parse(self) -> SparkType:
        t = self.type_()
        self.skip_ws()
        if self.pos != len(self.text):
            raise self.fail("trailing characters")
        return t

    def type_(self) -> SparkType:
        name = self.word().lower()
        name = _ALIASES.get(name, name)
        if name == "array":
            self.expect("<")
            element = self.type_()
            self.expect(">")
            return SparkType("array", element=element)
        if name == "map":
            self.expect("<")
            key = self.type_()
            self.expect(",")
            value = self.type_()
            self.expect(">")
            return SparkType("map", key=key, value=value)
        if name == "struct":
            self.expect("<")
            fields: List[Tuple[str, SparkType]] = []
            if self.peek() != ">":
                while True:
                    fname = self.field_name()
                    self.expect(":")
                    fields.append((fname, self.type_()))
                    if self.peek() == ",":
                        self.pos += 1
                        continue
                    break
            self.expect(">")
            return SparkType("struct", fields=tuple(fields))
        if name == "decimal":
            if self.peek() == "(":
                self.pos += 1
                precision = self.integer()
                scale = 0
                if self.peek() == ",":
                    self.pos += 1
                    scale = self.integer()
                self.expect(")")
                return SparkType("decimal", precision=precision, scale=scale)
            return SparkType("decimal", precision=10, scale=0)
        if name in ("char", "varchar"):
            length = None
            if self.peek() == "(":
                self.pos += 1
                length = self.integer()
                self.expect(")")
            return SparkType(name, length=length)
        return SparkType(name)


@lru_cache(maxsize=1024)
def parse_type(type_str: str) -> SparkType:
    """Parse a Spark simple type string such as ``'array<struct<k:int,v:string>>'``."""
    return _TypeParser(str(type_str)).parse()


def _display_type(type_str: str) -> str:
    return str(type_str).upper()


# ------------------------------------------------------------------------------------------
# Option catalogue
# ------------------------------------------------------------------------------------------

ENGINES = ("deduplicate", "partial-update", "aggregation", "first-row")
CHANGELOG_PRODUCERS = ("none", "input", "lookup", "full-compaction")
NULL_STRATEGIES = ("merge", "ignore", "error")

#: Aggregate functions lakerank executes (§2.4 table); aliases map to the canonical name.
AGGREGATE_FUNCTIONS = (
    "sum",
    "product",
    "max",
    "min",
    "last_value",
    "last_non_null_value",
    "first_value",
    "first_non_null_value",
    "listagg",
    "bool_and",
    "bool_or",
    "collect",
    "merge_map",
    "merge_map_with_keytime",
    "nested_update",
    "nested_partial_update",
)
_FUNCTION_ALIASES = {"first_not_null_value": "first_non_null_value"}
#: Paimon functions whose state is a binary sketch / bitmap format stock Spark cannot produce.
BINARY_SKETCH_FUNCTIONS = ("hll_sketch", "theta_sketch", "rbm32", "rbm64")

_IGNORE_DELETE_KEYS = (
    "ignore-delete",
    "first-row.ignore-delete",
    "deduplicate.ignore-delete",
    "partial-update.ignore-delete",
)

_SCALAR_KEYS = frozenset(
    {
        "merge-engine",
        "sequence.field",
        "sequence.field.sort-order",
        *_IGNORE_DELETE_KEYS,
        "ignore-update-before",
        "rowkind.field",
        "partial-update.remove-record-on-delete",
        "partial-update.remove-record-on-sequence-group",
        "fields.default-aggregate-function",
        "aggregation.remove-record-on-delete",
        "changelog-producer",
        "full-compaction.delta-commits",
        "changelog-producer.row-deduplicate",
        "changelog-producer.row-deduplicate-ignore-fields",
        "bucket",
        "bucket-key",
        "primary-key",
        "partition",
    }
)

#: Accepted, recorded in spec["ignored"], no effect on lakerank's logical result.
_NO_EFFECT_KEYS = frozenset(
    {
        "file.format",
        "changelog-producer.compaction-interval",
        "local-merge-buffer-size",
        "write-buffer-spillable",
        "write-buffer-size",
        "deletion-vectors.enabled",
        "deletion-vectors.bitmap64",
        "deletion-vectors.merge-on-read",
        "write-only",
        "sink.key-only-deletes.enabled",
        "delete.force-produce-changelog",
        "lookup-wait",
        "target-file-size",
        "metadata.stats-mode",
    }
)
_NO_EFFECT_PREFIXES = ("compaction.", "snapshot.", "num-sorted-run.", "manifest.")

#: Per-field option suffixes: ``fields.<f>.<suffix>``.
_FIELD_SUFFIXES = (
    "aggregate-function",
    "ignore-retract",
    "distinct",
    "list-agg-delimiter",
    "nested-key",
    "nested-sequence-field",
    "nested-key-null-strategy",
    "count-limit",
    "ts-field",
)
_SEQUENCE_GROUP_SUFFIX = ".sequence-group"

#: Which per-field options make sense for which function (anything else fails loudly).
_SUFFIX_FUNCTIONS = {
    "distinct": ("collect", "listagg"),
    "list-agg-delimiter": ("listagg",),
    "nested-key": ("nested_update", "nested_partial_update"),
    "nested-sequence-field": ("nested_update",),
    "nested-key-null-strategy": ("nested_update", "nested_partial_update"),
    "count-limit": ("nested_update",),
    "ts-field": ("merge_map_with_keytime",),
}


def _as_str(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _split_list(value: str) -> List[str]:
    return [p.strip() for p in value.split(",")]


def _parse_bool(key: str, value: str) -> bool:
    v = value.strip().lower()
    if v == "true":
        return True
    if v == "false":
        return False
    raise PaimonOptionError(key, f"Option '{key}' must be 'true' or 'false' but was '{value}'.")


def _parse_enum(key: str, value: str, allowed: Sequence[str]) -> str:
    v = value.strip().lower()
    if v not in allowed:
        raise PaimonOptionError(
            key,
            f"Could not parse value '{value}' for key '{key}'. Expected one of: {', '.join(allowed)}.",
        )
    return v


def _parse_int(key: str, value: str) -> int:
    try:
        return int(value.strip())
    except ValueError:
        raise PaimonOptionError(key, f"Option '{key}' must be an integer but was '{value}'.") from None


def _no_effect(key: str) -> bool:
    return key in _NO_EFFECT_KEYS or key.startswith(_NO_EFFECT_PREFIXES)


def _normalise_function(name: str) -> str:
    n = name.strip()
    return _FUNCTION_ALIASES.get(n, n)


def _check_function_name(key: str, field: str, fn: str) -> None:
    """Unknown / inexpressible aggregate functions (§2.4)."""
    if fn in BINARY_SKETCH_FUNCTIONS:
        raise PaimonOptionError(
            key,
            f"Aggregate function '{fn}' (field {field}) cannot be expressed by lakerank: it needs the "
            "DataSketches/RoaringBitmap binary formats, which stock Spark does not provide",
        )
    if fn not in AGGREGATE_FUNCTIONS:
        raise PaimonOptionError(key, f"Use unsupported aggregation: {fn} or spell aggregate function incorrectly!")


# ------------------------------------------------------------------------------------------
# Per-field aggregator settings
# ------------------------------------------------------------------------------------------


def _check_function_type(key: str, field: str, fn: str, type_str: str) -> None:
    """Function / column type compatibility (§2.4 table, 'types' column)."""
    t = parse_type(type_str)
    shown = _display_type(type_str)
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


def field_settings(
    field: str,
    type_str: str,
    fn: Optional[str],
    options: Optional[Mapping[str, Any]] = None,
    *,
    fn_key: Optional[str] = None,
) -> Dict[str, Any]:
    """Validated aggregator settings of one field (§2.4).

    ``fn`` is the aggregate function (``None``: no aggregator); the field's
    ``fields.<field>.*`` options are read from ``options``.  ``fn_key`` is the option key that
    chose ``fn`` (named in errors).  Returns::

        {"fn", "type", "ignore_retract", "distinct", "delimiter", "nested_key", "nested_seq",
         "null_strategy", "count_limit", "ts_field"}
    """
    opts = {str(k): _as_str(v) for k, v in (options or {}).items()}
    prefix = f"fields.{field}."
    fn_key = fn_key or f"{prefix}aggregate-function"
    if fn is not None:
        fn = _normalise_function(fn)
        _check_function_name(fn_key, field, fn)
        _check_function_type(fn_key, field, fn, type_str)

    settings: Dict[str, Any] = {
        "fn": fn,
        "type": str(type_str),
        "ignore_retract": False,
        "distinct": False,
        "delimiter": ",",
        "nested_key": [],
        "nested_seq": None,
        "null_strategy": "merge",
        "count_limit": None,
        "ts_field": None,
    }
    given = {s: opts[prefix + s] for s in _FIELD_SUFFIXES if s != "aggregate-function" and prefix + s in opts}
    for suffix, value in given.items():
        key = prefix + suffix
        if fn is None:
            raise PaimonOptionError(key, f"Option '{key}' has no effect: field {field} has no aggregate function.")
        allowed = _SUFFIX_FUNCTIONS.get(suffix)
        if allowed is not None and fn not in allowed:
            raise PaimonOptionError(
                key, f"Option '{key}' has no effect on aggregate function '{fn}' (only on {', '.join(allowed)})."
            )
        if suffix == "ignore-retract":
            settings["ignore_retract"] = _parse_bool(key, value)
        elif suffix == "distinct":
            settings["distinct"] = _parse_bool(key, value)
        elif suffix == "list-agg-delimiter":
            settings["delimiter"] = value
        elif suffix == "count-limit":
            limit = _parse_int(key, value)
            if limit < 0:
                raise PaimonOptionError(key, f"Option '{key}' must not be negative but was {limit}.")
            settings["count_limit"] = limit
        elif suffix == "nested-key-null-strategy":
            settings["null_strategy"] = _parse_enum(key, value, NULL_STRATEGIES)

    t = parse_type(type_str)
    if fn in ("nested_update", "nested_partial_update"):
        row_type = t.element
        assert row_type is not None
        key = prefix + "nested-key"
        nested_key = [k for k in _split_list(given["nested-key"]) if k] if "nested-key" in given else []
        for k in nested_key:
            if row_type.field_type(k) is None:
                raise PaimonOptionError(
                    key, f"Nested key field '{k}' of field {field} not found in {_display_type(type_str)}."
                )
        if fn == "nested_partial_update" and not nested_key:
            raise PaimonOptionError(
                key, f"Aggregate function 'nested_partial_update' (field {field}) requires option '{key}'."
            )
        settings["nested_key"] = nested_key
        if "nested-key-null-strategy" in given and not nested_key:
            raise PaimonOptionError(
                prefix + "nested-key-null-strategy",
                f"Option '{prefix}nested-key-null-strategy' requires '{prefix}nested-key' to be configured.",
            )
        if "nested-sequence-field" in given:
            seq_key = prefix + "nested-sequence-field"
            if not nested_key:
                raise PaimonOptionError(
                    seq_key, f"Option '{seq_key}' requires '{prefix}nested-key' to be configured."
                )
            seq = [s for s in _split_list(given["nested-sequence-field"]) if s]
            for s in seq:
                if row_type.field_type(s) is None:
                    raise PaimonOptionError(
                        seq_key, f"Nested sequence field '{s}' of field {field} not found in {_display_type(type_str)}."
                    )
            settings["nested_seq"] = ",".join(seq) or None
    if fn == "merge_map_with_keytime":
        assert t.value is not None
        if "ts-field" in given:
            ts = given["ts-field"].strip()
            if t.value.field_type(ts) is None:
                raise PaimonOptionError(
                    prefix + "ts-field",
                    f"Timestamp field '{ts}' not found in ROW type for field '{field}'. "
                    f"Available fields: {t.value.field_names}",
                )
            settings["ts_field"] = ts
        else:
            settings["ts_field"] = t.value.fields[-1][0]
    return settings


# ------------------------------------------------------------------------------------------
# parse_options
# ------------------------------------------------------------------------------------------


def _check_columns_exist(key: str, names: Iterable[str], columns: Sequence[str], what: str) -> None:
    for n in names:
        if n not in columns:
            raise PaimonOptionError(key, f"{what} '{n}' of option '{key}' can not be found in table schema.")


def parse_options(
    options: Mapping[str, Any],
    columns: Sequence[Tuple[str, str]],
    primary_key: Sequence[str],
    partition_by: Sequence[str] = (),
) -> Dict[str, Any]:
    """Validate Paimon table ``options`` of a primary-key table and return the normalised spec.

    ``columns`` are ``(name, Spark simple type)`` pairs in table order.  Raises
    :class:`PaimonOptionError` (``.key`` = offending option key) on any invalid option.
    """
    cols: List[Tuple[str, str]] = [(str(n), str(t)) for n, t in columns]
    names = [n for n, _ in cols]
    types = dict(cols)
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
    _check_columns_exist("primary-key", pk, names, "Primary key column")
    if len(set(pk)) != len(pk):
        raise PaimonOptionError("primary-key", f"Primary key {pk} lists a column twice.")
    _check_columns_exist("partition", partition, names, "Partition column")

    opts: Dict[str, str] = {str(k): _as_str(v) for k, v in options.items()}
    ignored: List[str] = []
    field_opts: Dict[str, Dict[str, str]] = {}  # field -> suffix -> value
    group_opts: List[Tuple[str, List[str], List[str]]] = []  # (key, seq fields, protected fields)

    # 1. classify keys (unknown keys fail first) ------------------------------------------
    for key, value in opts.items():
        if key in _SCALAR_KEYS:
            continue
        if _no_effect(key):
            ignored.append(key)
            continue
        if key.startswith("fields.") and key.endswith(_SEQUENCE_GROUP_SUFFIX):
            seq = _split_list(key[len("fields.") : -len(_SEQUENCE_GROUP_SUFFIX)])
            protected = _split_list(value)
            if not all(seq) or not all(protected):
                raise PaimonOptionError(key, f"Option '{key}' = '{value}' contains an empty field name.")
            group_opts.append((key, seq, protected))
            continue
        if key.startswith("fields."):
            rest = key[len("fields.") :]
            for suffix in _FIELD_SUFFIXES:
                if rest.endswith("." + suffix) and len(rest) > len(suffix) + 1:
                    field = rest[: -len(suffix) - 1]
                    field_opts.setdefault(field, {})[suffix] = value
                    break
            else:
                raise PaimonOptionError(key, f"Unknown Paimon table option '{key}'.")
            continue
        raise PaimonOptionError(key, f"Unknown Paimon table option '{key}'.")

    # 2. scalar options -------------------------------------------------------------------
    engine = _parse_enum("merge-engine", opts["merge-engine"], ENGINES) if "merge-engine" in opts else "deduplicate"
    producer = (
        _parse_enum("changelog-producer", opts["changelog-producer"], CHANGELOG_PRODUCERS)
        if "changelog-producer" in opts
        else "none"
    )

    ignore_delete = False
    seen_ignore_key: Optional[str] = None
    for key in _IGNORE_DELETE_KEYS:
        if key in opts:
            v = _parse_bool(key, opts[key])
            if seen_ignore_key is None:
                ignore_delete, seen_ignore_key = v, key
            elif v != ignore_delete:
                raise PaimonOptionError(key, f"Option '{key}' contradicts '{seen_ignore_key}'.")
    ignore_update_before = (
        _parse_bool("ignore-update-before", opts["ignore-update-before"]) if "ignore-update-before" in opts else False
    )
    row_dedup = (
        _parse_bool("changelog-producer.row-deduplicate", opts["changelog-producer.row-deduplicate"])
        if "changelog-producer.row-deduplicate" in opts
        else False
    )
    row_dedup_ignore: List[str] = []
    if "changelog-producer.row-deduplicate-ignore-fields" in opts:
        key = "changelog-producer.row-deduplicate-ignore-fields"
        row_dedup_ignore = [f for f in _split_list(opts[key]) if f]
        _check_columns_exist(key, row_dedup_ignore, names, "Field")

    # 3. primary-key / partition / bucket -------------------------------------------------
    for key, configured in (("primary-key", pk), ("partition", partition)):
        if key in opts:
            given = [c for c in _split_list(opts[key]) if c]
            if given != configured:
                raise PaimonOptionError(
                    key, f"Option '{key}' = '{opts[key]}' disagrees with the configured {key} {configured}."
                )
    bucket = _parse_int("bucket", opts["bucket"]) if "bucket" in opts else -1
    if bucket == 0 or bucket < -1:
        raise PaimonOptionError(
            "bucket", f"Option 'bucket' must be -1 (dynamic) or a positive number of buckets but was {bucket}."
        )
    cross_partition = not set(partition) <= set(pk)
    if cross_partition and bucket != -1:
        raise PaimonOptionError(
            "bucket",
            "You should use dynamic bucket (bucket = -1) mode in cross partition update case "
            f"(Primary key constraint {pk} not include all partition fields {partition}).",
        )
    if "bucket-key" in opts:
        bucket_key = [c for c in _split_list(opts["bucket-key"]) if c]
        _check_columns_exist("bucket-key", bucket_key, names, "Bucket key")
        if not bucket_key or not set(bucket_key) <= set(pk) - set(partition):
            raise PaimonOptionError(
                "bucket-key",
                f"Bucket key {bucket_key} must be a non-empty subset of the primary key {pk} "
                f"without partition columns {partition}.",
            )
    else:
        bucket_key = [c for c in pk if c not in partition] or list(pk)

    # 4. sequence.field (§1) -------------------------------------------------------------
    sequence_fields: List[str] = []
    if "sequence.field" in opts:
        key = "sequence.field"
        if engine == "first-row":
            raise PaimonOptionError(key, "Do not support use sequence field on FIRST_ROW merge engine.")
        sequence_fields = _split_list(opts[key])
        for f in sequence_fields:
            if f not in names:
                raise PaimonOptionError(key, f"Nonexistent sequence field: '{f}' (option '{key}').")
            if parse_type(types[f]).name in CONSTRUCTED_TYPES:
                raise PaimonOptionError(key, f"Sequence field '{f}' has a non-comparable type {types[f]}.")
        dupes = sorted({f for f in sequence_fields if sequence_fields.count(f) > 1})
        if dupes:
            raise PaimonOptionError(key, f"Sequence field '{dupes[0]}' is defined repeatedly in '{key}'.")
    seq_descending = False
    if "sequence.field.sort-order" in opts:
        key = "sequence.field.sort-order"
        seq_descending = _parse_enum(key, opts[key], ("ascending", "descending")) == "descending"
        if not sequence_fields:
            raise PaimonOptionError(key, f"Option '{key}' has no effect without 'sequence.field'.")

    # 5. rowkind.field (§1) ---------------------------------------------------------------
    rowkind_field: Optional[str] = None
    if "rowkind.field" in opts:
        key = "rowkind.field"
        rowkind_field = opts[key].strip()
        if rowkind_field not in names:
            raise PaimonOptionError(
                key, f"Row kind field '{rowkind_field}' of option '{key}' can not be found in table schema."
            )
        if parse_type(types[rowkind_field]).name not in STRING_TYPES:
            raise PaimonOptionError(
                key, f"Row kind field '{rowkind_field}' must be a STRING column but is {types[rowkind_field]}."
            )

    # 6. changelog producer (§2.2, §3) ----------------------------------------------------
    if engine == "first-row" and producer not in ("none", "lookup"):
        raise PaimonOptionError(
            "changelog-producer", "Only support 'none' and 'lookup' changelog-producer on FIRST_ROW merge engine"
        )
    delta_commits = 1
    if "full-compaction.delta-commits" in opts:
        key = "full-compaction.delta-commits"
        delta_commits = _parse_int(key, opts[key])
        if delta_commits <= 0:
            raise PaimonOptionError(key, f"Option '{key}' must be a positive integer but was {delta_commits}.")
        if producer == "lookup":
            raise PaimonOptionError(key, f"Option '{key}' can not be used with changelog-producer 'lookup'.")
        if producer != "full-compaction":
            raise PaimonOptionError(
                key, f"Option '{key}' only has an effect with changelog-producer 'full-compaction' (is '{producer}')."
            )

    # 7. engine-specific delete options (§2.3, §2.4) -----------------------------------------
    def bool_opt(key: str) -> bool:
        return _parse_bool(key, opts[key]) if key in opts else False

    remove_on_delete = bool_opt("partial-update.remove-record-on-delete")
    remove_on_seq_group: List[str] = []
    if "partial-update.remove-record-on-sequence-group" in opts:
        remove_on_seq_group = _split_list(opts["partial-update.remove-record-on-sequence-group"])
    agg_remove_on_delete = bool_opt("aggregation.remove-record-on-delete")
    if engine != "partial-update":
        for key in ("partial-update.remove-record-on-delete", "partial-update.remove-record-on-sequence-group"):
            if key in opts:
                ignored.append(key)
        remove_on_delete, remove_on_seq_group = False, []
    if engine != "aggregation" and "aggregation.remove-record-on-delete" in opts:
        ignored.append("aggregation.remove-record-on-delete")
        agg_remove_on_delete = False

    # 8. field options: columns exist, engine applies, not on the primary key ------------------
    agg_engine = engine in ("aggregation", "partial-update")
    for field, suffixes in field_opts.items():
        for suffix in suffixes:
            key = f"fields.{field}.{suffix}"
            if field not in names:
                raise PaimonOptionError(key, f"Field {field} can not be found in table schema (option '{key}').")
            if not agg_engine:
                raise PaimonOptionError(
                    key, f"Option '{key}' needs merge-engine 'aggregation' or 'partial-update' (is '{engine}')."
                )
            if field in pk:
                raise PaimonOptionError(
                    key, f"Option '{key}' is set on primary key column {field}; primary keys are never aggregated."
                )
    if "fields.default-aggregate-function" in opts and not agg_engine:
        key = "fields.default-aggregate-function"
        raise PaimonOptionError(
            key, f"Option '{key}' needs merge-engine 'aggregation' or 'partial-update' (is '{engine}')."
        )

    # 9. sequence groups (§2.3) -------------------------------------------------------------
    groups: List[Dict[str, List[str]]] = []
    protected_by: Dict[str, str] = {}
    group_seq_fields: List[str] = []
    for key, seq, protected in group_opts:
        if engine != "partial-update":
            raise PaimonOptionError(key, f"Option '{key}' needs merge-engine 'partial-update' (is '{engine}').")
        for f in seq + protected:
            if f not in names:
                raise PaimonOptionError(key, f"Field {f} can not be found in table schema (option '{key}').")
            if f in pk:
                raise PaimonOptionError(key, f"Primary key {f} can not be part of a sequence group (option '{key}').")
        for f in seq:
            if f in group_seq_fields or f in protected_by:
                raise PaimonOptionError(key, f"Field {f} is defined repeatedly by multiple groups: {key}")
            if parse_type(types[f]).name in CONSTRUCTED_TYPES:
                raise PaimonOptionError(key, f"Sequence field '{f}' has a non-comparable type {types[f]}.")
        for f in protected:
            if f in protected_by or f in group_seq_fields or f in seq or protected.count(f) > 1:
                raise PaimonOptionError(key, f"Field {f} is defined repeatedly by multiple groups: {key}")
            protected_by[f] = key
        group_seq_fields.extend(seq)
        groups.append({"seq": list(seq), "fields": list(protected)})

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
        if key in opts and not all(f in group_seq_fields for f in remove_on_seq_group):
            raise PaimonOptionError(
                key, f"field '{opts[key]}' defined in '{key}' option must be part of sequence groups"
            )
    if engine == "aggregation" and agg_remove_on_delete:
        for field, suffixes in field_opts.items():
            key = f"fields.{field}.ignore-retract"
            if "ignore-retract" in suffixes and _parse_bool(key, suffixes["ignore-retract"]):
                raise PaimonOptionError(
                    key,
                    f"aggregation.remove-record-on-delete and {key} have conflicting behavior so should not be "
                    "enabled at the same time.",
                )

    # 10. aggregate functions per value column ------------------------------------------------
    value_columns = [n for n in names if n not in pk]
    default_fn = opts.get("fields.default-aggregate-function")
    if default_fn is not None:
        default_fn = _normalise_function(default_fn)
    chosen: Dict[str, Tuple[Optional[str], Optional[str]]] = {}  # field -> (fn, key that chose it)
    for field in value_columns:
        own = field_opts.get(field, {}).get("aggregate-function")
        own_key = f"fields.{field}.aggregate-function"
        if own is not None and (field in sequence_fields or field in group_seq_fields):
            raise PaimonOptionError(own_key, f"Should not define aggregation on sequence field: '{field}'.")
        fn: Optional[str]
        fn_key: Optional[str]
        if own is not None:
            fn, fn_key = _normalise_function(own), own_key
        elif engine == "aggregation" and field in sequence_fields:
            fn, fn_key = "last_value", None  # §1: sequence fields use last_value in aggregation
        elif engine == "partial-update" and field in group_seq_fields:
            fn, fn_key = None, None  # group sequence fields are versioned, never aggregated
        elif default_fn is not None:
            fn, fn_key = default_fn, "fields.default-aggregate-function"
        elif engine == "aggregation":
            fn, fn_key = "last_non_null_value", None
        else:
            fn, fn_key = None, None
        if engine == "partial-update" and fn is not None and fn != "last_non_null_value" and field not in protected_by:
            raise PaimonOptionError(
                fn_key or own_key, f"Must use sequence group for aggregation functions but not found for field {field}."
            )
        chosen[field] = (fn, fn_key)
    if default_fn is not None:
        _check_function_name("fields.default-aggregate-function", "<default>", default_fn)
    for field in value_columns:
        fn, fn_key = chosen[field]
        if fn is not None:
            _check_function_name(fn_key or f"fields.{field}.aggregate-function", field, fn)

    fields: Dict[str, Dict[str, Any]] = {}
    for field in value_columns:
        fn, fn_key = chosen[field]
        per_field = {f"fields.{field}.{s}": v for s, v in field_opts.get(field, {}).items()}
        fields[field] = field_settings(field, types[field], fn, per_field, fn_key=fn_key)

    return {
        "engine": engine,
        "primary_key": pk,
        "partition_by": partition,
        "bucket": bucket,
        "bucket_key": bucket_key,
        "cross_partition_update": cross_partition,
        "sequence_fields": sequence_fields,
        "seq_descending": seq_descending,
        "ignore_delete": ignore_delete,
        "ignore_update_before": ignore_update_before,
        "rowkind_field": rowkind_field,
        "remove_record_on_delete": remove_on_delete,
        "remove_record_on_sequence_group": remove_on_seq_group,
        "aggregation_remove_record_on_delete": agg_remove_on_delete,
        "groups": groups,
        "fields": fields,
        "changelog_producer": producer,
        "lookup_compaction": producer == "lookup",
        "delta_commits": delta_commits,
        "row_dedup": row_dedup,
        "row_dedup_ignore": row_dedup_ignore,
        "value_columns": value_columns,
        "columns": [[n, t] for n, t in cols],
        "column_types": dict(types),
        "ignored": ignored,
    }
