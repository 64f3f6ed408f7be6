"""The spike's driver variant (spike_batch_floor.py --driver): Spark only for the scans.

Decision 0004 asked whether a design without Spark's per-job cost for a small batch would
get under Spark's floor: the batch's touched blocks ranked in the driver, Spark reading the
stored rows and writing the changes. Step "offsets: 2+3d" runs the offsets alternative's
statement 2 (the touched blocks' local ranks and the touched projects' offsets, the same
SQL as step 2) but collects its rows into the driver as Arrow instead of writing them,
computes the results there with DuckDB (the same rows as step 3p: the touched blocks ranked
again, the offsets summed again, each table's -/+ images against its old rows), and hands
them back to Spark to write as parquet, partitioned by table. ``check_driver`` compares its
changes with step 3's, value by value.
"""

from __future__ import annotations

import pathlib
import time

from spike_check import differs
from spike_sql import off_new_cte

# The results of statement 3 in DuckDB's dialect, over `inputs` (statement 2's rows), as
# typed columns: part ('loc' or 'off'), rowkind, key and the image's columns.
RESULTS_SQL = """
with
blocks as (select project_id, block from inputs where part = 'blocks'),
chg as (select project_id, block, contract_id, sign_time, amount, local_rn as live from inputs where part = 'chg'),
loc_old as (
    select project_id, contract_id, sign_time, amount, block, local_rn from inputs where part = 'loc_old'
),
off_old as (select project_id, block, positions, block_offset from inputs where part = 'off_old'),
loc_new as (
    select *, dense_rank() over (partition by project_id, block order by sign_time) as local_rn
    from (
        select project_id, contract_id, sign_time, amount, block from loc_old as l
        where not exists (select 1 from chg as c where c.contract_id = l.contract_id)
        union all
        select project_id, contract_id, sign_time, amount, block from chg where live = 1
    )
),
positions as (
    select b.project_id, b.block, coalesce(t.positions, 0) as positions
    from blocks as b left join (
        select project_id, block, max(local_rn) as positions from loc_new group by project_id, block
    ) as t on b.project_id = t.project_id and b.block = t.block
),
{off_new},
loc_diff as (
    select n.contract_id is not null as has_new, o.contract_id is not null as has_old,
           n.project_id as n_project_id, n.contract_id as n_contract_id, n.sign_time as n_sign_time,
           n.amount as n_amount, n.block as n_block, n.local_rn as n_local_rn,
           o.project_id as o_project_id, o.contract_id as o_contract_id, o.sign_time as o_sign_time,
           o.amount as o_amount, o.block as o_block, o.local_rn as o_local_rn
    from loc_new as n full outer join loc_old as o on n.contract_id = o.contract_id
    where not (n.project_id is not distinct from o.project_id and n.sign_time is not distinct from o.sign_time
               and n.amount is not distinct from o.amount and n.local_rn is not distinct from o.local_rn)
),
off_diff as (
    select n.project_id is not null as has_new, o.project_id is not null as has_old,
           n.project_id as n_project_id, n.block as n_block, n.positions as n_positions,
           n.block_offset as n_block_offset,
           o.project_id as o_project_id, o.block as o_block, o.positions as o_positions,
           o.block_offset as o_block_offset
    from off_new as n full outer join off_old as o on n.project_id = o.project_id and n.block = o.block
    where not (n.positions is not distinct from o.positions and n.block_offset is not distinct from o.block_offset)
)
{images}
"""

LOC_COLUMNS = ("project_id", "contract_id", "sign_time", "amount", "block", "local_rn")
OFF_COLUMNS = ("project_id", "block", "positions", "block_offset")
ALL_COLUMNS = ("project_id", "contract_id", "sign_time", "amount", "block", "local_rn", "positions", "block_offset")


def _images() -> str:
    """One row an image: the old one (-U, or -D without a new one), the new one (+U, or +I)."""
    selects = []
    for part, cols, key in (("loc", LOC_COLUMNS, "contract_id"), ("off", OFF_COLUMNS, "project_id")):
        for side, kind, other in (("o", "if(has_new, '-U', '-D')", "has_old"),
                                  ("n", "if(has_old, '+U', '+I')", "has_new")):
            values = ", ".join(f"{side}_{c} as {c}" if c in cols else f"null as {c}" for c in ALL_COLUMNS)
            selects.append(f"select '{part}' as part, {kind} as rowkind, {side}_{key} as key, {values} "
                           f"from {part}_diff where {other}")
    return "\n    union all ".join(selects)


def driver_results(spark, inputs_sql: str, dest: pathlib.Path) -> dict:
    """Statement 2's rows collected as Arrow, the results computed by DuckDB in the driver,
    written back by Spark (parquet partitioned by part); returns the seconds of each part."""
    import duckdb

    t0 = time.time()
    inputs = spark.sql(inputs_sql).toArrow()  # noqa: F841 (DuckDB reads the local by name)
    t1 = time.time()
    con = duckdb.connect()
    con.execute("set threads = 2")
    results = con.sql(RESULTS_SQL.format(off_new=off_new_cte(), images=_images())).to_arrow_table()
    t2 = time.time()
    spark.createDataFrame(results).write.mode("overwrite").partitionBy("part").parquet(str(dest))
    t3 = time.time()
    return {"collect_s": round(t1 - t0, 2), "duckdb_s": round(t2 - t1, 2), "write_s": round(t3 - t2, 2),
            "input_rows": inputs.num_rows, "result_rows": results.num_rows}


def check_driver(con, out: pathlib.Path) -> int:
    """Rows differing (both ways) between step 3's changes (JSON images) and the driver's."""
    spark_rows = f"""(select part, rowkind, key, json_extract(img, '$.contract_id')::bigint as contract_id,
                        json_extract_string(img, '$.sign_time')::timestamp as sign_time,
                        json_extract_string(img, '$.amount')::decimal(18, 2) as amount,
                        json_extract_string(img, '$.block')::timestamp as block,
                        json_extract(img, '$.local_rn')::bigint as local_rn,
                        json_extract(img, '$.positions')::bigint as positions,
                        json_extract(img, '$.block_offset')::double::bigint as block_offset
                 from read_parquet('{out / 'offset_changes'}/*/*.parquet', hive_partitioning = true))"""
    driver_rows = f"""(select part, rowkind, key, contract_id, sign_time::timestamp, amount::decimal(18, 2),
                         block::timestamp, local_rn::bigint, positions::bigint, block_offset::bigint
                  from read_parquet('{out / 'offset_changes_d'}/*/*.parquet', hive_partitioning = true))"""
    return sum(differs(con, spark_rows, driver_rows))
