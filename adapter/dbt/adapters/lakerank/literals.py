"""Values as Spark SQL literals: the bindings dbt sends with a statement (a seed's cells)."""

from __future__ import annotations

import datetime as dt
import decimal
import math

from dbt.adapters.spark.session import SessionConnectionWrapper

__all__ = ["BindingWrapper", "sql_literal"]


class BindingWrapper(SessionConnectionWrapper):
    """dbt-spark's session wrapper with each binding (a seed's cells) rendered as the Spark SQL
    literal it stands for: ``None`` is NULL (dbt-spark writes the string 'None', so an empty
    cell became text and a not_null test passed on it), a string has its quotes and
    backslashes escaped, a boolean is TRUE/FALSE and a decimal keeps its digits (dbt-spark
    makes both a float)."""

    @classmethod
    def _fix_binding(cls, value):
        return sql_literal(value)


def sql_literal(value) -> str:
    """``value`` (None, bool, int, float, Decimal, str, date or datetime) as a Spark SQL literal."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, decimal.Decimal):
        return format(value, "f") if value.is_finite() else f"CAST('{value}' AS DOUBLE)"
    if isinstance(value, float):
        return repr(value) + "D" if math.isfinite(value) else f"CAST('{value}' AS DOUBLE)"
    if isinstance(value, dt.datetime):
        return f"TIMESTAMP '{value.strftime('%Y-%m-%d %H:%M:%S.%f')}'"
    if isinstance(value, dt.date):
        return f"DATE '{value.isoformat()}'"
    text = str(value).replace("\\", "\\\\").replace("'", "\\'")
    return f"'{text}'"
