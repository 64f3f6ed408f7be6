"""The benchmark's exactness check: `fct_contract_rank` of a home, and the yardstick's rank
tables, against DuckDB computing the same ranks from the home's landed files (scripts/bench.py)."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]
ORDER = {"dense_rank": "sign_time", "rank": "sign_time", "row_number": "sign_time, contract_id"}


def check_exact(home: pathlib.Path, rank_function: str = "dense_rank", others: list[str] = ()) -> dict:
    """{"rows", "got_rows", "missing", "unexpected", "exact"} of lakerank.fct_contract_rank,
    with the same for each table of `others` (same columns) under its name, and "exact" over all."""
    import duckdb
    from pyspark.sql import SparkSession

    export = home / "bench_export"
    shutil.rmtree(export, ignore_errors=True)
    builder = SparkSession.builder.enableHiveSupport().master("local[2]")
    for k, v in spark_conf(home).items():
        builder = builder.config(k, v)
    spark = builder.config("spark.sql.timestampType", "TIMESTAMP_NTZ").getOrCreate()
    # Hive's partition-filter fallback on the `_`-named partition columns logs a WARN with a
    # stack trace per read (harmless: the adapter's session sets the same fallback).
    spark.sparkContext.setLogLevel("ERROR")
    tables = ["fct_contract_rank", *others]
    for table in tables:
        spark.sql(f"select project_id, contract_id, cast(sign_time as string) as sign_time, asc_rn "
                  f"from lakerank.{table}").write.parquet(str(export / table))
    spark.stop()
    con = duckdb.connect()
    landing = home / "landing" / "contracts"
    con.execute(f"""
        create temp table want as
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
        )
        select project_id, contract_id, sign_time,
               {rank_function}() over (partition by project_id order by {ORDER[rank_function]}) as asc_rn
        from last where op <> '-D'
    """)
    out = {}
    for table in tables:
        want_rows, got_rows, missing, unexpected = con.execute(f"""
            with got as (select * from read_parquet('{export / table}/*.parquet'))
            select
                (select count(*) from want) as want_rows,
                (select count(*) from got) as got_rows,
                (select count(*) from (select * from want except select * from got)) as missing,
                (select count(*) from (select * from got except select * from want)) as unexpected
        """).fetchone()
        out[table] = {"rows": want_rows, "got_rows": got_rows, "missing": missing, "unexpected": unexpected,
                      "exact": missing == 0 and unexpected == 0 and want_rows == got_rows}
    shutil.rmtree(export, ignore_errors=True)
    result = dict(out["fct_contract_rank"])
    result.update({t: out[t] for t in others})
    result["exact"] = all(v["exact"] for v in out.values())
    return result


def check_exact_apart(home: pathlib.Path, rank_function: str, others: list[str], env: dict) -> dict:
    """check_exact in a process (and JVM) of its own with ``env``: the shared target's session
    needs S3A's jars on a new JVM's class path."""
    import subprocess

    proc = subprocess.run([sys.executable, __file__, str(home), rank_function, *others], env=env, check=True,
                          capture_output=True, text=True)
    return json.loads(proc.stdout.splitlines()[-1])


def spark_conf(home: pathlib.Path) -> dict:
    """The home's own settings; on the shared target (LAKERANK_TARGET=shared, the environment
    of scripts/bench_shared.py) the profile's shared target's, rendered from that environment
    as dbt renders it."""
    from dbt.adapters.lakerank.serve import profile_spark_conf
    from dbt.adapters.lakerank.session import home_spark_conf, session_spark_conf

    if os.environ.get("LAKERANK_TARGET") != "shared":
        return home_spark_conf(str(home))
    return session_spark_conf(str(home), profile_spark_conf(str(ROOT), "shared"))

if __name__ == "__main__":
    # python3 scripts/bench_oracle.py HOME RANK_FUNCTION [TABLE ...]: check_exact's result as
    # JSON, in a process (and JVM) of its own: the shared target's needs S3A on its class path.
    print(json.dumps(check_exact(pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3:])))
