"""How a CDC stream reads its lines (:mod:`python_udfs.ingest.cdc_formats`): its change time
(required, or arrival order), its database and table filters and the units of its time fields;
a declared stream's ``stream`` keys, the contracts stream's vars (docs/cdc_formats.md)."""

from __future__ import annotations

import dataclasses
from typing import Mapping, Optional, Sequence, Tuple, Union

from python_udfs.ingest.cdc_times import TIME_UNITS

__all__ = ["CHANGE_TIMES", "CdcOptions", "cdc_options", "filtered", "how_to_declare"]

CHANGE_TIMES = ("required", "arrival")


@dataclasses.dataclass(frozen=True)
class CdcOptions:
    """How a stream reads its CDC lines: ``change_time`` (``required``, or ``arrival``: order by
    commit, file and line), ``database_include``/``table_include`` (Java regular expressions,
    any of which must match the whole name; None: every name), ``units`` (field -> the unit
    of its JSON integers when no schema says it, ``TIME_UNITS``; a field with none declared has
    its integers quarantined), ``scales`` (field -> the scale of its Debezium ``Decimal``
    values when no schema gives it) and ``declare`` (how the
    stream declares arrival order: the quarantine reason of a missing change time names it) and
    ``declare_unit`` (how it declares the unit of an integer sign_time, named likewise)."""
    change_time: str = "required"
    database_include: Optional[Tuple[str, ...]] = None
    table_include: Optional[Tuple[str, ...]] = None
    units: Tuple[Tuple[str, str], ...] = ()
    declare: str = "change_time: arrival"
    declare_unit: str = "units: {sign_time: <unit>}"
    scales: Tuple[Tuple[str, int], ...] = ()

    def unit(self, field: str) -> Optional[str]:
        """The declared unit of ``field``'s JSON integers; None: undeclared (never guessed)."""
        return dict(self.units).get(field)

    def scale(self, field: str) -> Optional[int]:
        """The declared scale of ``field``'s Debezium ``Decimal`` values when no schema wrapper
        gives it (docs/cdc_formats.md, Decimals); None: undeclared."""
        return dict(self.scales).get(field)


def _patterns(value: Union[None, str, Sequence[str]], what: str) -> Optional[Tuple[str, ...]]:
    if value is None or value == "" or value == []:
        return None
    items = [value] if isinstance(value, str) else list(value) if isinstance(value, (list, tuple)) else None
    if not items or not all(isinstance(x, str) and x for x in items):
        raise ValueError(f"{what} must be a name or pattern, or a list of them, got {value!r}")
    return tuple(items)


def cdc_options(change_time=None, database_include=None, table_include=None,
                units: Optional[Mapping[str, str]] = None, declare: str = "change_time: arrival",
                declare_unit: str = "units: {sign_time: <unit>}",
                scales: Optional[Mapping[str, object]] = None) -> CdcOptions:
    """Checked :class:`CdcOptions` (ValueError naming the bad value); None or '' is the default."""
    change_time = change_time or "required"
    if change_time not in CHANGE_TIMES:
        raise ValueError(f"change_time {change_time!r}: allowed values are {', '.join(CHANGE_TIMES)}")
    for field, unit in (units or {}).items():
        if unit not in TIME_UNITS:
            raise ValueError(f"field {field!r}: unit {unit!r}: allowed values are {', '.join(TIME_UNITS)}")
    checked_scales = {}
    for field, scale in (scales or {}).items():
        try:
            checked_scales[field] = int(str(scale).strip())
        except ValueError:
            raise ValueError(f"field {field!r}: scale {scale!r} is not an integer") from None
        if not -38 <= checked_scales[field] <= 38:
            raise ValueError(f"field {field!r}: scale {scale!r} is out of -38..38")
    return CdcOptions(change_time, _patterns(database_include, "database_include"),
                      _patterns(table_include, "table_include"), tuple(sorted((units or {}).items())), declare,
                      declare_unit, tuple(sorted(checked_scales.items())))


def how_to_declare(opts: CdcOptions) -> str:
    """The end of the quarantine reason of a missing change time: how to declare arrival order."""
    return f" (a source that writes none: declare {opts.declare} to order by arrival)"


def filtered(names, opts: CdcOptions):
    """(quarantine reason, skip reason) Columns of the stream's database and table filters over
    ``names`` (the SQL of a message's database and table names, and their labels): a message
    of another database or table is skipped; one that names none, quarantined."""
    from pyspark.sql import functions as F

    missing, other = F.lit(None).cast("string"), F.lit(None).cast("string")
    db, table, db_label, table_label = names
    for sql, label, patterns in ((db, db_label, opts.database_include), (table, table_label, opts.table_include)):
        if patterns is None:
            continue
        name = F.expr(sql)
        match = F.lit(False)
        for p in patterns:  # a Java regular expression matched against the whole name
            match = match | name.rlike(f"^(?:{p})$")
        missing = F.coalesce(missing, F.when(name.isNull(), F.lit(f"missing {label}")))
        other = F.coalesce(other, F.when(name.isNotNull() & ~match, F.lit(f"other {label}")))
    return missing, other
