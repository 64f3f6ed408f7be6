"""The adapter's bindings (a seed's cells) as Spark SQL literal texts; test_temporal_macros.py
loads such cells through a real `dbt seed` and reads them back from Spark."""

import datetime as dt
from decimal import Decimal

import pytest

from dbt.adapters.lakerank.literals import sql_literal


@pytest.mark.parametrize("value, literal", [
    (None, "NULL"),
    (True, "TRUE"),
    (False, "FALSE"),
    (42, "42"),
    (Decimal("12.50"), "12.50"),
    (Decimal("1E-3"), "0.001"),
    (Decimal("NaN"), "CAST('NaN' AS DOUBLE)"),
    (0.5, "0.5D"),
    (float("inf"), "CAST('inf' AS DOUBLE)"),
    ("None", "'None'"),
    ("it's a \\ backslash", "'it\\'s a \\\\ backslash'"),
    (dt.date(2024, 2, 29), "DATE '2024-02-29'"),
    (dt.datetime(2024, 3, 4, 10, 0, 0, 123456), "TIMESTAMP '2024-03-04 10:00:00.123456'"),
])
def test_each_binding_is_the_literal_of_its_value(value, literal):
    assert sql_literal(value) == literal
