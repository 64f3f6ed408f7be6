"""The field aggregator contract (Paimon ``FieldAggregator``, docs/paimon_semantics.md#aggregation) and its
null-safe form."""

from __future__ import annotations

from typing import Any, Mapping

from python_udfs.paimon.errors import PaimonMergeError
from python_udfs.paimon.spark_types import parse_type

__all__ = ["NOT_RETRACTABLE_MESSAGE", "FieldAggregator", "NullSafeAggregator"]

NOT_RETRACTABLE_MESSAGE = (
    "Aggregate function '{name}' does not support retraction, If you allow this function to ignore retraction "
    "messages, you can configure 'fields.${{field_name}}.ignore-retract'='true'."
)


class FieldAggregator:
    """One field's aggregate function (Paimon ``FieldAggregator``), stateful per merge pass.

    ``agg(acc, in)`` folds an add record in, ``retract(acc, in)`` a retract record (``-U``/``-D``),
    ``agg_reversed(acc, in) = agg(in, acc)`` folds in a record older than the accumulator (used by
    partial-update sequence groups, docs/paimon_semantics.md#sequence-groups).  ``reset()`` starts a new key /
    merge pass.
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
        """Retract ``value``; ``fields.<f>.ignore-retract`` keeps the accumulator
        (docs/paimon_semantics.md#aggregation)."""
        if self.ignore_retract:
            return acc
        return self._retract(acc, value)

    def _retract(self, acc: Any, value: Any) -> Any:
        raise PaimonMergeError(NOT_RETRACTABLE_MESSAGE.format(name=self.name))


class NullSafeAggregator(FieldAggregator):
    """An aggregate function that keeps the other side when either side is NULL and
    ``combine``-s two non-NULL values."""

    def agg(self, acc: Any, value: Any) -> Any:
        if acc is None or value is None:
            return value if acc is None else acc
        return self.combine(acc, value)

    def combine(self, acc: Any, value: Any) -> Any:
        raise NotImplementedError
