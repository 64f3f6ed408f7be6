"""The spike's checks against DuckDB (spike_batch_floor.py, spike_cold.py): the batch's
changes applied to the state the spike started from, against DuckDB's re-rank of every
event (the state's and the batch's)."""

from __future__ import annotations

import pathlib


def want_ranks(con, state: pathlib.Path, out: pathlib.Path) -> None:
    """Table `want`: every live contract's rank, re-ranked by DuckDB from every event."""
    con.execute("set threads = 2")
    con.execute(f"""
        create or replace temp table want as
        with ev as (
            select op, project_id, contract_id, sign_time, op_ts from read_parquet('{state}/events')
            union all
            select op, project_id, contract_id, sign_time, op_ts from read_parquet('{out}/batch_events/*.parquet')
        ),
        last as (select contract_id, arg_max(op, op_ts) as op, arg_max(project_id, op_ts) as project_id,
                        arg_max(sign_time, op_ts) as sign_time from ev group by contract_id)
        select project_id, contract_id, sign_time,
               dense_rank() over (partition by project_id order by sign_time) as asc_rn
        from last where op <> '-D'
    """)


def differs(con, a: str, b: str) -> tuple[int, int]:
    """Rows of `a` not in `b`, and of `b` not in `a` (bags)."""
    return con.execute(f"select (select count(*) from (select * from {a} except all select * from {b})),"
                       f" (select count(*) from (select * from {b} except all select * from {a}))").fetchone()


def offsets_view(state: pathlib.Path, parts: str) -> str:
    """The offsets view's ranks after the offsets changes in `parts` (step 3's JSON images)."""
    loc = f"""
        select contract_id, project_id, sign_time, block, local_rn from read_parquet('{state}/loc')
        where contract_id not in (select key from {parts} where part = 'loc')
        union all
        select key, cast(json_extract(img, '$.project_id') as bigint),
               cast(json_extract_string(img, '$.sign_time') as timestamp),
               cast(json_extract_string(img, '$.block') as timestamp),
               cast(json_extract(img, '$.local_rn') as bigint)
        from {parts} where part = 'loc' and rowkind in ('+I', '+U')"""
    off = f"""
        select project_id, block, block_offset from read_parquet('{state}/off') as o
        where not exists (select 1 from {parts} as c where c.part = 'off' and c.key = o.project_id
                          and cast(json_extract_string(c.img, '$.block') as timestamp) = o.block)
        union all
        select key, cast(json_extract_string(img, '$.block') as timestamp),
               cast(json_extract(img, '$.block_offset') as bigint)
        from {parts} where part = 'off' and rowkind in ('+I', '+U')"""
    return (f"(select l.project_id, l.contract_id, l.sign_time, l.local_rn + o.block_offset "
            f"from ({loc}) l join ({off}) o using (project_id, block))")


def check_offsets(con, state: pathlib.Path, out: pathlib.Path) -> dict:
    """Step 3's offsets changes applied to the state: the view's ranks against `want`."""
    parts = f"read_parquet('{out}/offset_changes/*/*.parquet', hive_partitioning = true)"
    missing, unexpected = differs(con, "want", offsets_view(state, parts))
    rows = con.execute(f"select count(*) from {parts} where rowkind in ('+I', '+U')").fetchone()[0]
    return {"rows_written": rows, "missing": missing, "unexpected": unexpected,
            "exact": missing == 0 and unexpected == 0}


def check(state: pathlib.Path, out: pathlib.Path, offsets: bool) -> dict:
    """The old fact with the batch's fct changes applied, against DuckDB's re-rank of every
    event; 1b's changes against 1's; and the offsets view's ranks and the per-contract
    changelog's replay against it, when measured."""
    import duckdb

    con = duckdb.connect()
    want_ranks(con, state, out)
    changes = f"read_parquet('{out}/results/part=fct/*.parquet')"
    got = f"""(
        select project_id, contract_id, sign_time, asc_rn from read_parquet('{state}/fct')
        where contract_id not in (select key from {changes})
        union all
        select cast(json_extract(img, '$.project_id') as bigint), key,
               cast(json_extract_string(img, '$.sign_time') as timestamp), cast(json_extract(img, '$.asc_rn') as bigint)
        from {changes} where rowkind in ('+I', '+U'))"""
    missing, unexpected = differs(con, "want", got)
    changed = con.execute(f"select count(*) from {changes} where rowkind in ('+I', '+U')").fetchone()[0]
    ingest_differs = sum(differs(con, f"read_parquet('{out}/changes/*.parquet')",
                                 f"read_parquet('{out}/changes_b/*.parquet')"))
    result = {"fct_rows_written": changed, "missing": missing, "unexpected": unexpected,
              "ingest_1b_rows_differing": ingest_differs,
              "exact": missing == 0 and unexpected == 0 and ingest_differs == 0}
    if offsets:
        result["offsets"] = found = check_offsets(con, state, out)
        cl = f"read_parquet('{out}/offset_changelog/*.parquet')"
        replayed = f"""(
            select project_id, contract_id, sign_time, asc_rn from read_parquet('{state}/fct')
            where contract_id not in (select contract_id from {cl} where rowkind in ('-U', '-D'))
            union all
            select project_id, contract_id, sign_time, asc_rn from {cl} where rowkind in ('+I', '+U'))"""
        cm, cu = differs(con, "want", replayed)
        found.update(changelog_rows=con.execute(f"select count(*) from {cl}").fetchone()[0],
                     changelog_missing=cm, changelog_unexpected=cu)
        result["exact"] = result["exact"] and found["exact"] and cm == 0 and cu == 0
    return result
