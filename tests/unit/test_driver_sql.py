"""The Spark SQL the rank pass writes, as DuckDB runs it in the driver (python_udfs/driver_sql.py):
each construct the pipeline's results and check use, translated by sqlglot, gives Spark's answer.
A sqlglot release that translates one of them differently fails here, before any build."""

from __future__ import annotations

import datetime

import duckdb

from python_udfs.driver_sql import to_duckdb


def run(sql: str) -> list:
    con = duckdb.connect()
    con.execute("create table t as select * from (values (1, 10, 'a'), (2, null, 'b'), (3, 10, 'c')) as v(id, x, s)")
    return con.sql(to_duckdb(sql)).fetchall()


def test_month_of_a_timestamp_without_zone():
    assert run("select cast(trunc(cast(timestamp_ntz'2024-03-17 10:00:00' as date), 'MONTH') as timestamp_ntz)"
               " as m") == [(datetime.datetime(2024, 3, 1),)]


def test_left_anti_join_and_null_safe_equality():
    assert run("select t.id, t.x <=> null as no_x from t left anti join (select 3 as id) as u on t.id = u.id"
               " order by t.id") == [(1, False), (2, True)]


def test_window_order_puts_nulls_first_as_spark_does():
    assert run("select id, dense_rank() over (order by x) as r, lead(id) over (order by x, id) as nxt from t"
               " order by id") == [(1, 2, 3), (2, 1, 1), (3, 2, None)]


def test_running_sum_before_the_row_and_range_frame():
    got = run("select id, coalesce(sum(x) over (order by id rows between unbounded preceding and 1 preceding), 0) as s,"
              " count(*) over (order by x range between unbounded preceding and current row) as c from t order by id")
    assert got == [(1, 0, 3), (2, 10, 1), (3, 10, 3)]


def test_json_of_named_columns_and_typed_nulls():
    assert run("select to_json(struct(id, s)) as j, cast(null as timestamp_ntz) as n, cast(x as decimal(18,2)) as d"
               " from t where id = 1") == [('{"id":1,"s":"a"}', None, 10)]


def test_boolean_max_in_having():
    assert run("select s from t group by s having max(x is null) order by s") == [("b",)]
