"""Validation and normalisation of Apache Paimon primary-key table options.

The option catalogue and how one option's value is read. :mod:`python_udfs.paimon.validation`
turns a ``pk_table``'s Paimon option map (keys spelled exactly as Paimon spells them) into a
typed :class:`python_udfs.paimon.spec.MergeSpec`, whose ``as_dict()`` (plain, JSON-serialisable)
:mod:`python_udfs.paimon.merge` executes.  The rules are written out in
docs/paimon_semantics.md (read at Paimon commit ``5dacde51``), which the modules cite by anchor.

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
  ``partial-update`` table) are accepted without effect and listed in the spec's ``ignored``;
* physical / tuning options that do not change the logical result (``file.format``,
  ``write-buffer-size``, ``deletion-vectors.*``, ``compaction.*`` …) are accepted without effect
  and listed in the spec's ``ignored``.

Functions Spark cannot express (``hll_sketch``, ``theta_sketch``, ``rbm32``, ``rbm64``: they
need the DataSketches / RoaringBitmap binary formats) are rejected.  ``count`` is not a Paimon
aggregate function at this commit and gets Paimon's unknown-function error
(docs/paimon_semantics.md#aggregate-functions).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Mapping, Sequence, Tuple

from python_udfs.paimon.errors import PaimonOptionError

__all__ = [
    "OptionKeys",
    "Options",
    "Table",
    "classify_keys",
    "AGGREGATE_FUNCTIONS",
    "BINARY_SKETCH_FUNCTIONS",
    "CHANGELOG_PRODUCERS",
    "ENGINES",
    "FIELD_SUFFIXES",
    "IGNORE_DELETE_KEYS",
    "NULL_STRATEGIES",
    "SCALAR_KEYS",
    "SEQUENCE_GROUP_SUFFIX",
    "SUFFIX_FUNCTIONS",
    "as_str",
    "check_columns_exist",
    "check_function_name",
    "is_no_effect",
    "normalise_function",
    "parse_bool",
    "parse_enum",
    "parse_int",
    "split_list",
]

ENGINES = ("deduplicate", "partial-update", "aggregation", "first-row")
CHANGELOG_PRODUCERS = ("none", "input", "lookup", "full-compaction")
NULL_STRATEGIES = ("merge", "ignore", "error")

#: Aggregate functions lakerank executes (docs/paimon_semantics.md#aggregate-functions); aliases map to the
#: canonical name.
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

IGNORE_DELETE_KEYS = (
    "ignore-delete",
    "first-row.ignore-delete",
    "deduplicate.ignore-delete",
    "partial-update.ignore-delete",
)

SCALAR_KEYS = frozenset(
    {
        "merge-engine",
        "sequence.field",
        "sequence.field.sort-order",
        *IGNORE_DELETE_KEYS,
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
FIELD_SUFFIXES = (
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
SEQUENCE_GROUP_SUFFIX = ".sequence-group"

#: Which per-field options make sense for which function (anything else fails loudly).
SUFFIX_FUNCTIONS = {
    "distinct": ("collect", "listagg"),
    "list-agg-delimiter": ("listagg",),
    "nested-key": ("nested_update", "nested_partial_update"),
    "nested-sequence-field": ("nested_update",),
    "nested-key-null-strategy": ("nested_update", "nested_partial_update"),
    "count-limit": ("nested_update",),
    "ts-field": ("merge_map_with_keytime",),
}


def as_str(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def split_list(value: str) -> List[str]:
    return [p.strip() for p in value.split(",")]


def parse_bool(key: str, value: str) -> bool:
    v = value.strip().lower()
    if v == "true":
        return True
    if v == "false":
        return False
    raise PaimonOptionError(key, f"Option '{key}' must be 'true' or 'false' but was '{value}'.")


def parse_enum(key: str, value: str, allowed: Sequence[str]) -> str:
    v = value.strip().lower()
    if v not in allowed:
        raise PaimonOptionError(
            key,
            f"Could not parse value '{value}' for key '{key}'. Expected one of: {', '.join(allowed)}.",
        )
    return v


def parse_int(key: str, value: str) -> int:
    try:
        return int(value.strip())
    except ValueError:
        raise PaimonOptionError(key, f"Option '{key}' must be an integer but was '{value}'.") from None


def is_no_effect(key: str) -> bool:
    return key in _NO_EFFECT_KEYS or key.startswith(_NO_EFFECT_PREFIXES)


def normalise_function(name: str) -> str:
    n = name.strip()
    return _FUNCTION_ALIASES.get(n, n)


def check_function_name(key: str, field: str, fn: str) -> None:
    """Unknown / inexpressible aggregate functions (docs/paimon_semantics.md#aggregate-functions)."""
    if fn in BINARY_SKETCH_FUNCTIONS:
        raise PaimonOptionError(
            key,
            f"Aggregate function '{fn}' (field {field}) cannot be expressed by lakerank: it needs the "
            "DataSketches/RoaringBitmap binary formats, which stock Spark does not provide",
        )
    if fn not in AGGREGATE_FUNCTIONS:
        raise PaimonOptionError(key, f"Use unsupported aggregation: {fn} or spell aggregate function incorrectly!")


def check_columns_exist(key: str, names: Iterable[str], columns: Sequence[str], what: str) -> None:
    for n in names:
        if n not in columns:
            raise PaimonOptionError(key, f"{what} '{n}' of option '{key}' can not be found in table schema.")


# ------------------------------------------------------------------------------------------
# The table and its option keys
# ------------------------------------------------------------------------------------------

Options = Mapping[str, str]


@dataclass(frozen=True)
class Table:
    """The table the options are for: columns in table order, primary key, partition."""

    columns: Tuple[Tuple[str, str], ...]
    primary_key: Tuple[str, ...]
    partition_by: Tuple[str, ...]

    @property
    def names(self) -> List[str]:
        return [n for n, _ in self.columns]

    @property
    def types(self) -> Dict[str, str]:
        return dict(self.columns)


@dataclass(frozen=True)
class OptionKeys:
    """The option keys sorted by kind (:func:`classify_keys`)."""

    ignored: Tuple[str, ...]
    field_options: Mapping[str, Mapping[str, str]]  # field -> suffix -> value
    sequence_groups: Tuple[Tuple[str, Tuple[str, ...], Tuple[str, ...]], ...]  # (key, seq, fields)


def classify_keys(opts: Options) -> OptionKeys:
    """Every key is a scalar option, a no-effect one, a sequence group or a per-field option;
    an unknown key fails (before any value is read)."""
    ignored: List[str] = []
    field_opts: Dict[str, Dict[str, str]] = {}
    groups: List[Tuple[str, Tuple[str, ...], Tuple[str, ...]]] = []
    for key, value in opts.items():
        if key in SCALAR_KEYS:
            continue
        if is_no_effect(key):
            ignored.append(key)
            continue
        if key.startswith("fields.") and key.endswith(SEQUENCE_GROUP_SUFFIX):
            seq = split_list(key[len("fields.") : -len(SEQUENCE_GROUP_SUFFIX)])
            protected = split_list(value)
            if not all(seq) or not all(protected):
                raise PaimonOptionError(key, f"Option '{key}' = '{value}' contains an empty field name.")
            groups.append((key, tuple(seq), tuple(protected)))
            continue
        if key.startswith("fields."):
            rest = key[len("fields.") :]
            for suffix in FIELD_SUFFIXES:
                if rest.endswith("." + suffix) and len(rest) > len(suffix) + 1:
                    field_opts.setdefault(rest[: -len(suffix) - 1], {})[suffix] = value
                    break
            else:
                raise PaimonOptionError(key, f"Unknown Paimon table option '{key}'.")
            continue
        raise PaimonOptionError(key, f"Unknown Paimon table option '{key}'.")
    return OptionKeys(tuple(ignored), field_opts, tuple(groups))
