#!/usr/bin/env python3
"""Spark's own floor for one batch (issue 51, step 5; docs/decisions/0004-one-commit-per-batch.md).

The rank core of one micro-batch as the fewest Spark statements we know, each reading its
inputs once, run in one warm SparkSession outside dbt, on the state lakerank keeps, written
as parquet; beside it, in the same session, the columnar re-rank of every event (the
yardstick of scripts/bench.py) and that re-rank plus its changelog.

State (built once, with DuckDB, from the bench's history distribution: 50,000 projects, a
fifth of the contracts in 100 large ones, sign times over three years; every contract one
`+I`): the ingest's per-contract state, the fact (`fct`: ranks, `mem_rn`, `base_max_rn`,
sorted by project and segment), the zipper (`dim`: one version per project and distinct sign
time), the accumulation (`acc`), and the yardstick's columnar event table; each a compacted
parquet base (the best case for lakerank: no merge-on-read changes to apply). The batch is the
bench's (`BatchMaker`: 2 % late, 1 % updates with moves, 0.5 % deletes, 1 % duplicates).

Statements of the batch (dense_rank, day segments; each writes one parquet directory):
  1. ingest: the batch's lines, each contract's last event, joined with the stored state;
     writes each effective contract's before and after image (the changelog and state delta);
  2. inputs: the touched projects (`touched_from`: the earliest segment a before or after
     image touches) and their rows of fct (from `touched_from`), dim (the version in force at
     `touched_from` and after) and acc, staged once;
  3. results: the touched tails re-ranked, their zipper versions and accumulation rows, and
     each table's changes against its old rows (-U/+U, +I, -D), written as one parquet
     partitioned by table: what the three audit partitions hold.
  1b. the ingest again, with the state read under a literal list of the batch's ids that can be
     stored (up to the highest stored id; the others are new), from a copy of the state in row
     groups of 10,000 rows, so that Parquet's statistics skip the rest (checked equal to 1).
The alternative interface (--offsets): ranks resolved at read time from per-(project, month)
offsets. The state keeps each contract's rank inside its (project, month) block and one row
per block with the positions its project uses before it; a batch stages the touched blocks'
rows and its projects' offsets (2), then rewrites the touched blocks' local ranks and the
projects' changed offsets (3), and a reader computes asc_rn = local rank + offset.

Each step is timed warm (--repeat runs, median), with its Spark jobs and bytes read (Spark's
event log over the step's window, scripts/bench_eventlog.py). The spike's output is checked
against DuckDB: the old fact with the fct changes applied equals the re-rank of every event.

    python3 scripts/probes/spike_batch_floor.py --history 1e6 --work /tmp/spike
    python3 scripts/probes/spike_batch_floor.py --history 1e7 --work /tmp/spike --offsets
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import bench  # noqa: E402  (the bench's batch generator and constants)
import bench_eventlog  # noqa: E402

OPEN_END = "timestamp_ntz'9999-12-31 00:00:00'"


# ---------------------------------------------------------------------------------------
# State, built once with DuckDB
# ---------------------------------------------------------------------------------------

def build_state(state: pathlib.Path, n: int, projects: int) -> None:
    import duckdb

    state.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    con.execute("set threads = 2")
    con.execute(f"select setseed({(n % 1000) / 1000})")
    large = min(bench.N_LARGE, projects)
    span_s = bench.HISTORY_DAYS * 86400
    con.execute(f"""
        create table events as
        select
            '+I' as op,
            case when random() < 0.2 then 1 + cast(floor(random() * {large}) as bigint)
                 else {large} + 1 + cast(floor(random() * {max(1, projects - large)}) as bigint)
            end as project_id,
            i as contract_id,
            cast(timestamp '{bench.HISTORY_START:%Y-%m-%d %H:%M:%S}'
                 + to_seconds(cast(floor(random() * {span_s}) as bigint)) as timestamp) as sign_time,
            cast(round(random() * 100000, 2) as decimal(18, 2)) as amount,
            cast(timestamp '2021-12-31 00:00:00' + to_microseconds(i * 1000) as timestamp) as op_ts,
            'history_0000.jsonl' as source_file
        from range(1, {n + 1}) as t(i)
    """)

    def out(name: str, sql: str) -> None:
        con.execute(f"copy ({sql}) to '{state / name}' (format parquet, row_group_size 1000000)")

    out("events", "select * from events")  # the yardstick's columnar table
    out("state", "select contract_id, op_ts, true as live, project_id, sign_time, amount "
                 "from events order by contract_id")
    # the same, in row groups of 10,000 rows, for the ingest that looks ids up by literal
    con.execute(f"copy (select * from read_parquet('{state / 'state'}')) to '{state / 'state_fine'}' "
                "(format parquet, row_group_size 10000)")
    con.execute("""
        create table fct as
        select project_id, contract_id, sign_time, amount, date_trunc('day', sign_time) as segment_start,
               cast(dense_rank() over (partition by project_id, date_trunc('day', sign_time) order by sign_time)
                    as bigint) as mem_rn,
               cast(dense_rank() over (partition by project_id order by sign_time) as bigint) as asc_rn
        from events
    """)
    out("fct", "select project_id, contract_id, sign_time, amount, segment_start, mem_rn, "
               "asc_rn - mem_rn as base_max_rn, asc_rn from fct order by project_id, segment_start")
    out("dim", """
        select project_id, sign_time as ver_start,
               lead(sign_time) over (partition by project_id order by sign_time) as ver_end,
               max(asc_rn) as base_max_rn, max(segment_start) as segment_start
        from fct group by project_id, sign_time order by project_id, ver_start""")
    out("acc", "select project_id, max(asc_rn) as max_rn, max(sign_time) as max_event_time "
               "from fct group by project_id order by project_id")
    # The alternative: local ranks per (project, month) block and per-block offsets.
    out("loc", """
        select project_id, contract_id, sign_time, amount, date_trunc('month', sign_time) as block,
               cast(dense_rank() over (partition by project_id, date_trunc('month', sign_time)
                    order by sign_time) as bigint) as local_rn
        from events order by project_id, block""")
    out("off", """
        select project_id, block, positions,
               coalesce(sum(positions) over (partition by project_id order by block
                        rows between unbounded preceding and 1 preceding), 0) as block_offset
        from (select project_id, date_trunc('month', sign_time) as block, count(distinct sign_time) as positions
              from events group by all)
        order by project_id, block""")
    # the previous run's ranks, for the yardstick's changelog line
    out("prev_rank", "select project_id, contract_id, sign_time, amount, asc_rn from fct")


# ---------------------------------------------------------------------------------------
# The batch's statements (Spark SQL)
# ---------------------------------------------------------------------------------------

def ingest_sql(batch_file: pathlib.Path, state: pathlib.Path, ids: list[int] | None = None,
               max_id: int | None = None) -> str:
    """Statement 1. With `ids` (the batch's contract ids up to `max_id`, the highest stored id,
    which the ingest would keep as a property), the state is read under a literal IN list of
    them, from `state_fine` (row groups of 10,000 rows sorted by id), so Parquet's statistics
    skip the row groups no id falls in; ids above `max_id` are new and need no lookup."""
    state_rel = f"parquet.`{state}/state`"
    if ids is not None:
        listed = ", ".join(map(str, ids)) or "null"
        state_rel = (f"(select * from parquet.`{state}/state_fine` where contract_id in ({listed})"
                     f" and contract_id <= {max_id})")
    return f"""
    with lines as (
        select from_json(value, 'op string, project_id bigint, contract_id bigint, sign_time string,
                                amount decimal(18, 2), op_ts string') as e,
               monotonically_increasing_id() as pos
        from text.`{batch_file}`
    ),
    last as (
        select e.contract_id,
               max_by(struct(e.op, e.project_id, to_timestamp(e.sign_time, 'yyyy-MM-dd HH:mm:ss') as sign_time,
                             e.amount, to_timestamp(e.op_ts, 'yyyy-MM-dd HH:mm:ss.SSS') as op_ts),
                      struct(e.op_ts, pos)) as l
        from lines where e.op in ('+I', '+U', '-D')
        group by e.contract_id
    ),
    joined as (
        select last.contract_id, last.l, s.op_ts as s_op_ts, coalesce(s.live, false) as old_live,
               s.project_id as old_project_id, s.sign_time as old_sign_time, s.amount as old_amount
        from last left join {state_rel} as s on s.contract_id = last.contract_id
    )
    select contract_id, l.op_ts as op_ts,
           old_live, old_project_id, old_sign_time, old_amount,
           l.op <> '-D' as new_live,
           if(l.op <> '-D', l.project_id, null) as new_project_id,
           if(l.op <> '-D', l.sign_time, null) as new_sign_time,
           if(l.op <> '-D', l.amount, null) as new_amount
    from joined
    where (s_op_ts is null or l.op_ts > s_op_ts)
      and not (old_live and l.op <> '-D' and old_project_id <=> l.project_id
               and old_sign_time <=> l.sign_time and old_amount <=> l.amount)
    """


def inputs_sql(changes: pathlib.Path, state: pathlib.Path) -> str:
    return f"""
    with chg as (select * from parquet.`{changes}`),
    touched as (
        select project_id, min(segment_start) as touched_from from (
            select old_project_id as project_id, date_trunc('DAY', old_sign_time) as segment_start
            from chg where old_live
            union all
            select new_project_id, date_trunc('DAY', new_sign_time) from chg where new_live)
        group by project_id
    )
    select 'scope' as part, project_id, touched_from,
           cast(null as bigint) as contract_id, cast(null as timestamp_ntz) as sign_time,
           cast(null as decimal(18, 2)) as amount, cast(null as timestamp_ntz) as segment_start,
           cast(null as bigint) as mem_rn, cast(null as bigint) as base_max_rn, cast(null as bigint) as asc_rn,
           cast(null as timestamp_ntz) as ver_start, cast(null as timestamp_ntz) as ver_end
    from touched
    union all
    select 'chg', new_project_id, null, contract_id, new_sign_time, new_amount,
           date_trunc('DAY', new_sign_time), null, null, if(new_live, 1, 0), null, null
    from chg
    union all
    select 'fct_old', f.project_id, null, f.contract_id, f.sign_time, f.amount, f.segment_start,
           f.mem_rn, f.base_max_rn, f.asc_rn, null, null
    from parquet.`{state}/fct` as f inner join touched as t
        on f.project_id = t.project_id and f.segment_start >= t.touched_from
    union all
    select 'dim_old', d.project_id, null, null, null, null, d.segment_start, null, d.base_max_rn, null,
           d.ver_start, d.ver_end
    from parquet.`{state}/dim` as d inner join touched as t
        on d.project_id = t.project_id and coalesce(d.ver_end, {OPEN_END}) >= t.touched_from
    union all
    select 'acc_old', a.project_id, null, null, a.max_event_time, null, null, null, a.max_rn, null, null, null
    from parquet.`{state}/acc` as a left semi join touched as t on a.project_id = t.project_id
    """


def results_sql(inputs: pathlib.Path) -> str:
    def part(name: str, cols: str) -> str:
        return f"(select {cols} from parquet.`{inputs}` where part = '{name}')"

    return f"""
    with
    scope as {part('scope', 'project_id, touched_from')},
    chg as {part('chg', 'project_id, contract_id, sign_time, amount, segment_start, asc_rn as live')},
    fct_old as {part('fct_old', 'project_id, contract_id, sign_time, amount, segment_start, mem_rn, '
                                'base_max_rn, asc_rn')},
    dim_old as {part('dim_old', 'project_id, ver_start, ver_end, base_max_rn, segment_start')},
    acc_old as {part('acc_old', 'project_id, base_max_rn as max_rn, sign_time as max_event_time')},
    head_version as (
        select d.* from dim_old as d inner join scope as s on d.project_id = s.project_id
        where d.ver_start < s.touched_from
    ),
    new_tail as (
        select project_id, contract_id, sign_time, amount, segment_start
        from fct_old left anti join chg on fct_old.contract_id = chg.contract_id
        union all
        select project_id, contract_id, sign_time, amount, segment_start from chg where live = 1
    ),
    bases as (
        select s.project_id, coalesce(tb.base, h.base_max_rn, 0) as base
        from scope as s
        left join (select project_id, min(base_max_rn) as base from fct_old group by project_id) as tb
            on s.project_id = tb.project_id
        left join head_version as h on s.project_id = h.project_id
    ),
    ranked as (
        select n.project_id, n.contract_id, n.sign_time, n.amount, n.segment_start,
               cast(dense_rank() over (partition by n.project_id, n.segment_start order by n.sign_time) as bigint)
                   as mem_rn,
               b.base + dense_rank() over (partition by n.project_id order by n.sign_time) as asc_rn
        from new_tail as n inner join bases as b on n.project_id = b.project_id
    ),
    fct_new as (
        select project_id, contract_id, sign_time, amount, segment_start, mem_rn,
               asc_rn - mem_rn as base_max_rn, asc_rn
        from ranked
    ),
    points as (
        select project_id, sign_time as ver_start, max(asc_rn) as base_max_rn, max(segment_start) as segment_start
        from ranked group by project_id, sign_time
        union all
        select project_id, ver_start, base_max_rn, segment_start from head_version
    ),
    dim_new as (
        select project_id, ver_start,
               lead(ver_start) over (partition by project_id order by ver_start) as ver_end,
               base_max_rn, segment_start
        from points
    ),
    acc_new as (
        select b.project_id, coalesce(t.positions, b.base) as max_rn,
               coalesce(t.max_sign_time, h.ver_start) as max_event_time
        from bases as b
        left join (select project_id, max(asc_rn) as positions, max(sign_time) as max_sign_time
                   from ranked group by project_id) as t on b.project_id = t.project_id
        left join head_version as h on b.project_id = h.project_id
        where coalesce(t.positions, b.base) > 0
    ),
    fct_diff as (
        select n.contract_id is not null as has_new, o.contract_id is not null as has_old,
               struct(n.*) as new_row, struct(o.*) as old_row
        from fct_new as n full outer join fct_old as o on n.contract_id = o.contract_id
        where not (n.project_id <=> o.project_id and n.sign_time <=> o.sign_time and n.amount <=> o.amount
                   and n.mem_rn <=> o.mem_rn and n.base_max_rn <=> o.base_max_rn and n.asc_rn <=> o.asc_rn)
    ),
    dim_diff as (
        select n.project_id is not null as has_new, o.project_id is not null as has_old,
               struct(n.*) as new_row, struct(o.*) as old_row
        from dim_new as n full outer join dim_old as o
            on n.project_id = o.project_id and n.ver_start = o.ver_start
        where not (n.ver_end <=> o.ver_end and n.base_max_rn <=> o.base_max_rn
                   and n.segment_start <=> o.segment_start)
    ),
    acc_diff as (
        select n.project_id is not null as has_new, o.project_id is not null as has_old,
               struct(n.*) as new_row, struct(o.*) as old_row
        from acc_new as n full outer join acc_old as o on n.project_id = o.project_id
        where not (n.max_rn <=> o.max_rn and n.max_event_time <=> o.max_event_time)
    )
    {" union all ".join(f'''
    select '{t}' as part, r.rowkind, to_json(r.img) as img, r.img.{key} as key
    from {t}_diff lateral view inline(filter(array(
        named_struct('rowkind', if(has_new, '-U', '-D'), 'has', has_old, 'img', old_row),
        named_struct('rowkind', if(has_old, '+U', '+I'), 'has', has_new, 'img', new_row)
    ), x -> x.has)) r''' for t, key in [("fct", "contract_id"), ("dim", "project_id"), ("acc", "project_id")])}
    """


# The alternative: ranks at read time from per-(project, month) offsets.

def offsets_inputs_sql(changes: pathlib.Path, state: pathlib.Path) -> str:
    """The alternative's statement 1: the touched (project, month) blocks' local-rank rows and
    the touched projects' offset rows, staged once, with the changed contracts' images."""
    return f"""
    with chg as (select * from parquet.`{changes}`),
    blocks as (
        select distinct project_id, block from (
            select old_project_id as project_id, date_trunc('MONTH', old_sign_time) as block from chg where old_live
            union all
            select new_project_id, date_trunc('MONTH', new_sign_time) from chg where new_live)
    )
    select 'blocks' as part, project_id, block, cast(null as bigint) as contract_id,
           cast(null as timestamp_ntz) as sign_time, cast(null as decimal(18, 2)) as amount,
           cast(null as bigint) as local_rn, cast(null as bigint) as positions, cast(null as bigint) as block_offset
    from blocks
    union all
    select 'chg', new_project_id, date_trunc('MONTH', new_sign_time), contract_id, new_sign_time, new_amount,
           if(new_live, 1, 0), null, null
    from chg
    union all
    select 'loc_old', l.project_id, l.block, l.contract_id, l.sign_time, l.amount, l.local_rn, null, null
    from parquet.`{state}/loc` as l
    left semi join blocks as b on l.project_id = b.project_id and l.block = b.block
    union all
    select 'off_old', o.project_id, o.block, null, null, null, null, o.positions, o.block_offset
    from parquet.`{state}/off` as o
    left semi join blocks as b on o.project_id = b.project_id
    """


def offsets_results_sql(inputs: pathlib.Path) -> str:
    """The alternative's statement 2: the touched blocks' new local ranks and the touched
    projects' changed offsets, with -/+ images, written as one parquet partitioned by table."""
    def part(name: str, cols: str) -> str:
        return f"(select {cols} from parquet.`{inputs}` where part = '{name}')"

    return f"""
    with
    blocks as {part('blocks', 'project_id, block')},
    chg as {part('chg', 'project_id, block, contract_id, sign_time, amount, local_rn as live')},
    loc_old as {part('loc_old', 'project_id, contract_id, sign_time, amount, block, local_rn')},
    off_old as {part('off_old', 'project_id, block, positions, block_offset')},
    loc_tail as (
        select project_id, contract_id, sign_time, amount, block
        from loc_old left anti join chg on loc_old.contract_id = chg.contract_id
        union all
        select project_id, contract_id, sign_time, amount, block from chg where live = 1
    ),
    loc_new as (
        select *, cast(dense_rank() over (partition by project_id, block order by sign_time) as bigint) as local_rn
        from loc_tail
    ),
    positions as (
        select b.project_id, b.block, count(distinct t.sign_time) as positions
        from blocks as b left join loc_tail as t on b.project_id = t.project_id and b.block = t.block
        group by b.project_id, b.block
    ),
    off_new as (
        select project_id, block, positions,
               coalesce(sum(positions) over (partition by project_id order by block
                        rows between unbounded preceding and 1 preceding), 0) as block_offset
        from (
            select coalesce(p.project_id, o.project_id) as project_id, coalesce(p.block, o.block) as block,
                   coalesce(p.positions, o.positions) as positions
            from off_old as o full outer join positions as p on o.project_id = p.project_id and o.block = p.block
        )
        where positions > 0
    ),
    loc_diff as (
        select n.contract_id is not null as has_new, o.contract_id is not null as has_old,
               struct(n.*) as new_row, struct(o.*) as old_row
        from loc_new as n full outer join loc_old as o on n.contract_id = o.contract_id
        where not (n.project_id <=> o.project_id and n.sign_time <=> o.sign_time and n.amount <=> o.amount
                   and n.local_rn <=> o.local_rn)
    ),
    off_diff as (
        select n.project_id is not null as has_new, o.project_id is not null as has_old,
               struct(n.*) as new_row, struct(o.*) as old_row
        from off_new as n full outer join off_old as o on n.project_id = o.project_id and n.block = o.block
        where not (n.positions <=> o.positions and n.block_offset <=> o.block_offset)
    )
    {" union all ".join(f'''
    select '{t}' as part, r.rowkind, to_json(r.img) as img, r.img.{key} as key
    from {t}_diff lateral view inline(filter(array(
        named_struct('rowkind', if(has_new, '-U', '-D'), 'has', has_old, 'img', old_row),
        named_struct('rowkind', if(has_old, '+U', '+I'), 'has', has_new, 'img', new_row)
    ), x -> x.has)) r''' for t, key in [("loc", "contract_id"), ("off", "project_id")])}
    """


def naive_rank_sql(events: str) -> str:
    """benchmarks/naive's rank (macros/naive.sql naive_rank) over a relation of events."""
    return f"""
    with last_events as (
        select contract_id,
               max_by(struct(op, project_id, sign_time, amount), struct(op_ts, source_file)) as last_event
        from {events} group by contract_id
    ),
    live as (
        select contract_id, last_event.project_id, last_event.sign_time, last_event.amount
        from last_events where last_event.op <> '-D'
    )
    select project_id, contract_id, sign_time, amount,
           dense_rank() over (partition by project_id order by sign_time) as asc_rn
    from live
    """


def changelog_sql(new: str, old: str) -> str:
    """benchmarks/naive's naive_cl_contract_rank_changelog."""
    return f"""
    with diff as (
        select n.contract_id is not null as has_new, o.contract_id is not null as has_old,
               struct(n.project_id, n.contract_id, n.sign_time, n.amount, n.asc_rn) as new_row,
               struct(o.project_id, o.contract_id, o.sign_time, o.amount, o.asc_rn) as old_row
        from {new} as n full outer join {old} as o on n.contract_id = o.contract_id
        where not (n.project_id <=> o.project_id and n.sign_time <=> o.sign_time
                   and n.amount <=> o.amount and n.asc_rn <=> o.asc_rn)
    )
    select r.rowkind, r.img.* from diff lateral view inline(filter(array(
        named_struct('rowkind', if(has_new, '-U', '-D'), 'has', has_old, 'img', old_row),
        named_struct('rowkind', if(has_old, '+U', '+I'), 'has', has_new, 'img', new_row)
    ), x -> x.has)) r
    """


# ---------------------------------------------------------------------------------------

def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--history", default="1e7")
    p.add_argument("--batch-events", type=int, default=10_000)
    p.add_argument("--projects", type=int, default=bench.N_PROJECTS)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--work", required=True)
    p.add_argument("--offsets", action="store_true", help="also the offsets alternative")
    p.add_argument("--no-yardstick", action="store_true")
    p.add_argument("--keep", action="store_true", help="keep the state (and reuse a kept one)")
    p.add_argument("--out", default=None, help="JSON results")
    args = p.parse_args()
    n = int(float(args.history))
    work = pathlib.Path(args.work)
    state, out, evlog = work / f"state_{n}", work / f"out_{n}", work / f"eventlog_{n}"
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(evlog, ignore_errors=True)
    out.mkdir(parents=True)
    figures: dict = {"history": n, "batch_events": args.batch_events, "load_before": os.getloadavg()}
    if not (args.keep and (state / "acc").exists()):
        shutil.rmtree(state, ignore_errors=True)
        t = time.time()
        build_state(state, n, args.projects)
        figures["state_build_s"] = round(time.time() - t, 1)
        print(f"state built with DuckDB in {figures['state_build_s']} s", flush=True)
    maker = bench.BatchMaker(n, args.projects, seed=n + 1)
    batch_file = out / "batch_0000.jsonl"
    batch_file.write_text("\n".join(maker.batch(args.batch_events)) + "\n")

    from pyspark.sql import SparkSession

    conf = dict(kv.split("=", 1) for kv in bench_eventlog.conf(evlog).split(","))
    builder = (SparkSession.builder.master("local[2]").config("spark.driver.memory", "4g")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
               .config("spark.sql.adaptive.enabled", "true").config("spark.sql.timestampType", "TIMESTAMP_NTZ")
               .config("spark.sql.session.timeZone", "UTC").config("spark.buffer.pageSize", "2m")
               .config("spark.local.dir", str(work / "tmp")))
    for k, v in conf.items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")

    steps: dict[str, list[dict]] = {}

    def step(name: str, sql: str, dest: pathlib.Path, partition_by: str | None = None) -> None:
        t0 = time.time()
        w = spark.sql(sql).write.mode("overwrite")
        if partition_by:
            w = w.partitionBy(partition_by)
        w.parquet(str(dest))
        t1 = time.time()
        time.sleep(0.3)
        m = bench_eventlog.summarise(evlog, t0, t1)
        rows = spark.read.parquet(str(dest)).count()
        steps.setdefault(name, []).append({"seconds": round(t1 - t0, 2), "spark_jobs": m["spark_jobs"],
                                           "mb_read": round(m["bytes_read"] / 1e6, 1),
                                           "records_read": m["records_read"], "rows": rows,
                                           "load": round(os.getloadavg()[0], 2)})
        print(f"  {name}: {steps[name][-1]}", flush=True)

    # The yardstick's events: the history's plus the batch's, as the incremental model holds them.
    batch_events_sql = f"""
        select e.op, e.project_id, e.contract_id, to_timestamp(e.sign_time, 'yyyy-MM-dd HH:mm:ss') as sign_time,
               e.amount, to_timestamp(e.op_ts, 'yyyy-MM-dd HH:mm:ss.SSS') as op_ts, 'batch_0000.jsonl' as source_file
        from (select from_json(value, 'op string, project_id bigint, contract_id bigint, sign_time string,
                                       amount decimal(18, 2), op_ts string') as e from text.`{batch_file}`)
        where e.op in ('+I', '+U', '-D')"""
    spark.sql(batch_events_sql).write.mode("overwrite").parquet(str(out / "batch_events"))
    events = f"(select * from parquet.`{state}/events` union all select * from parquet.`{out}/batch_events`)"
    # 1b's literal list: the batch's ids up to the highest stored one (the driver has the lines)
    known_ids = sorted({json.loads(line)["contract_id"] for line in batch_file.read_text().splitlines()
                        if json.loads(line)["contract_id"] <= n})
    spark.conf.set("spark.sql.parquet.pushdown.inFilterThreshold", str(max(10, len(known_ids))))

    for r in range(args.repeat + 1):  # a first round warms the JVM up, not counted
        print(f"round {r}{' (warm-up, not counted)' if r == 0 else ''}", flush=True)
        step("1 ingest", ingest_sql(batch_file, state), out / "changes")
        step("1b ingest, ids as literals", ingest_sql(batch_file, state, known_ids, n), out / "changes_b")
        step("2 inputs", inputs_sql(out / "changes", state), out / "inputs", "part")
        step("3 results", results_sql(out / "inputs"), out / "results", "part")
        if args.offsets:
            step("offsets: 2 inputs", offsets_inputs_sql(out / "changes", state), out / "offset_inputs", "part")
            step("offsets: 3 results", offsets_results_sql(out / "offset_inputs"), out / "offset_changes", "part")
            step("offsets: read view", f"""
                select l.project_id, l.contract_id, l.sign_time, l.local_rn + o.block_offset as asc_rn
                from parquet.`{state}/loc` as l inner join parquet.`{state}/off` as o
                    on l.project_id = o.project_id and l.block = o.block""", out / "view_read")
            step("plain fct read", f"select project_id, contract_id, sign_time, asc_rn from parquet.`{state}/fct`",
                 out / "fct_read")
        if not args.no_yardstick:
            step("yardstick: columnar re-rank", naive_rank_sql(events), out / "rerank")
            step("yardstick: changelog of it", changelog_sql(f"parquet.`{out}/rerank`", f"parquet.`{state}/prev_rank`"),
                 out / "rerank_changelog")
        if r == 0:
            steps.clear()
    spark.stop()

    figures["steps"] = {k: {"median_s": statistics.median(x["seconds"] for x in v), "runs_s": [x["seconds"] for x in v],
                            "spark_jobs": v[-1]["spark_jobs"], "mb_read": v[-1]["mb_read"],
                            "records_read": v[-1]["records_read"], "rows": v[-1]["rows"],
                            "load": [x["load"] for x in v]} for k, v in steps.items()}
    figures["check"] = check(state, out, args.offsets)
    figures["load_after"] = os.getloadavg()
    print(json.dumps(figures, indent=1))
    if args.out:
        pathlib.Path(args.out).write_text(json.dumps(figures, indent=1))
    if not args.keep:
        shutil.rmtree(state, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(work / "tmp", ignore_errors=True)
    return 0 if figures["check"]["exact"] else 1


def check(state: pathlib.Path, out: pathlib.Path, offsets: bool) -> dict:
    """The old fact with the batch's fct changes applied, against DuckDB's re-rank of every
    event; and the offsets view's ranks against it, when measured."""
    import duckdb

    con = duckdb.connect()
    con.execute("set threads = 2")
    con.execute(f"""
        create temp table want as
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
    changes = f"read_parquet('{out}/results/part=fct/*.parquet')"
    got = f"""
        select project_id, contract_id, sign_time, asc_rn from read_parquet('{state}/fct')
        where contract_id not in (select key from {changes})
        union all
        select cast(json_extract(img, '$.project_id') as bigint), key,
               cast(json_extract_string(img, '$.sign_time') as timestamp), cast(json_extract(img, '$.asc_rn') as bigint)
        from {changes} where rowkind in ('+I', '+U')
    """
    missing, unexpected, changed = con.execute(f"""
        select (select count(*) from (select * from want except all ({got}))),
               (select count(*) from (({got}) except all select * from want)),
               (select count(*) from {changes} where rowkind in ('+I', '+U'))
    """).fetchone()
    a, b = f"read_parquet('{out}/changes/*.parquet')", f"read_parquet('{out}/changes_b/*.parquet')"
    ingest_differs = con.execute(
        f"select (select count(*) from (select * from {a} except all select * from {b}))"
        f" + (select count(*) from (select * from {b} except all select * from {a}))").fetchone()[0]
    result = {"fct_rows_written": changed, "missing": missing, "unexpected": unexpected,
              "ingest_1b_rows_differing": ingest_differs,
              "exact": missing == 0 and unexpected == 0 and ingest_differs == 0}
    if offsets:
        parts = f"read_parquet('{out}/offset_changes/*/*.parquet', hive_partitioning = true)"
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
        view = (f"select l.project_id, l.contract_id, l.sign_time, l.local_rn + o.block_offset "
                f"from ({loc}) l join ({off}) o using (project_id, block)")
        om, ou, orows = con.execute(f"""
            select (select count(*) from (select * from want except all ({view}))),
                   (select count(*) from (({view}) except all select * from want)),
                   (select count(*) from {parts} where rowkind in ('+I', '+U'))""").fetchone()
        result["offsets"] = {"rows_written": orows, "missing": om, "unexpected": ou, "exact": om == 0 and ou == 0}
        result["exact"] = result["exact"] and om == 0 and ou == 0
    return result


if __name__ == "__main__":
    sys.exit(main())
