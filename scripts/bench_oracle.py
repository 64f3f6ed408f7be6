"""The benchmark's exactness check: `fct_contract_rank` of a home against DuckDB computing the
same dense ranks from the home's landed files (scripts/bench.py)."""

from __future__ import annotations

import pathlib
import shutil


def check_exact(home: pathlib.Path) -> dict:
    import duckdb
    from pyspark.sql import SparkSession

    from dbt.adapters.lakerank.session import home_spark_conf

    export = home / "bench_export"
    shutil.rmtree(export, ignore_errors=True)
    builder = SparkSession.builder.enableHiveSupport().master("local[2]")
    for k, v in home_spark_conf(str(home)).items():
        builder = builder.config(k, v)
    spark = builder.config("spark.sql.timestampType", "TIMESTAMP_NTZ").getOrCreate()
    # Hive's partition-filter fallback on the `_`-named partition columns logs a WARN with a
    # stack trace per read (harmless: the adapter's session sets the same fallback).
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql("select project_id, contract_id, cast(sign_time as string) as sign_time, asc_rn "
              "from lakerank.fct_contract_rank").write.parquet(str(export))
    spark.stop()
    con = duckdb.connect()
    landing = home / "landing" / "contracts"
    mismatches = con.execute(f"""
        with events as (
            select * from read_json('{landing}/*.jsonl', format = 'newline_delimited',
                columns = {{op: 'varchar', project_id: 'bigint', contract_id: 'bigint',
                           sign_time: 'varchar', amount: 'decimal(18,2)', op_ts: 'varchar'}})
            where op in ('+I', '+U', '-D')
        ),
        last as (
            select contract_id, arg_max(op, op_ts) as op, arg_max(project_id, op_ts) as project_id,
                   arg_max(sign_time, op_ts) as sign_time
            from events group by contract_id
        ),
        want as (
            select project_id, contract_id, sign_time,
                   dense_rank() over (partition by project_id order by sign_time) as asc_rn
            from last where op <> '-D'
        ),
        got as (select * from read_parquet('{export}/*.parquet'))
        select
            (select count(*) from want) as want_rows,
            (select count(*) from got) as got_rows,
            (select count(*) from (select * from want except select * from got)) as missing,
            (select count(*) from (select * from got except select * from want)) as unexpected
    """).fetchone()
    shutil.rmtree(export, ignore_errors=True)
    want_rows, got_rows, missing, unexpected = mismatches
    return {"rows": want_rows, "got_rows": got_rows, "missing": missing, "unexpected": unexpected,
            "exact": missing == 0 and unexpected == 0 and want_rows == got_rows}
