"""The statements of scripts/probes/spike_batch_floor.py: one batch's rank core (ingest, inputs,
results), the per-(project, month) offsets alternative, and the yardstick's re-rank and changelog,
as Spark SQL over the parquet state the spike builds."""

from __future__ import annotations

import pathlib

OPEN_END = "timestamp_ntz'9999-12-31 00:00:00'"


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

def offsets_inputs_sql(changes: pathlib.Path, state: pathlib.Path, loc: str | None = None) -> str:
    """The alternative's statement 1: the touched (project, month) blocks' local-rank rows and
    the touched projects' offset rows, staged once, with the changed contracts' images.
    ``loc``: the relation the local ranks are read from (default: the whole `loc` table)."""
    loc = loc or f"parquet.`{state}/loc`"
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
    from {loc} as l
    left semi join blocks as b on l.project_id = b.project_id and l.block = b.block
    union all
    select 'off_old', o.project_id, o.block, null, null, null, null, o.positions, o.block_offset
    from parquet.`{state}/off` as o
    left semi join blocks as b on o.project_id = b.project_id
    """


def offsets_results_sql(inputs: pathlib.Path) -> str:
    """The alternative's statement 2: the touched blocks' new local ranks and the touched
    projects' changed offsets, with -/+ images, written as one parquet partitioned by table."""
    return f"""
    {offsets_staged(inputs)}
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
    {offsets_changes_tail()}"""


def offsets_staged(inputs: pathlib.Path) -> str:
    """The offsets results' first CTEs: the staged parts of statement 2's output."""
    def part(name: str, cols: str) -> str:
        return f"(select {cols} from parquet.`{inputs}` where part = '{name}')"

    return f"""with
    blocks as {part('blocks', 'project_id, block')},
    chg as {part('chg', 'project_id, block, contract_id, sign_time, amount, local_rn as live')},
    loc_old as {part('loc_old', 'project_id, contract_id, sign_time, amount, block, local_rn')},
    off_old as {part('off_old', 'project_id, block, positions, block_offset')},"""


def off_new_cte() -> str:
    """The CTE ``off_new``: every block of a touched project with its positions (a touched
    block's from ``positions``, the others' from ``off_old``) and its new offset (Spark SQL
    that DuckDB reads as well: spike_driver.py)."""
    return """off_new as (
        select project_id, block, positions,
               coalesce(sum(positions) over (partition by project_id order by block
                        rows between unbounded preceding and 1 preceding), 0) as block_offset
        from (
            select coalesce(p.project_id, o.project_id) as project_id, coalesce(p.block, o.block) as block,
                   coalesce(p.positions, o.positions) as positions
            from off_old as o full outer join positions as p on o.project_id = p.project_id and o.block = p.block
        )
        where positions > 0
    )"""


def offsets_changes_tail() -> str:
    """The common end of the offsets results (statement 3 and the spike's 3p): ``off_new``
    from ``off_old`` and ``positions``, then the -/+ images of ``loc_new`` against ``loc_old``
    and of ``off_new`` against ``off_old``, one row an image."""
    return f"""
    {off_new_cte()},
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


def offsets_changelog_sql(changes: pathlib.Path, state: pathlib.Path, loc_rel: str | None = None) -> str:
    """The alternative's statement 3 when the per-contract changelog stays stored (the
    interface of `fct_contract_rank_changelog` kept): every contract whose asc_rn, image or
    liveness changed, as -U/+U pairs (+I, -D), from the local-rank and offset changes of
    statement 2 - a contract of a block whose offset moved gets a pair even though its own
    row did not change. Reads the local-rank rows of the blocks whose offset moved (from `loc_rel`,
    a relation of `loc`'s rows that holds them, when given)."""
    loc_rel = loc_rel or f"parquet.`{state}/loc`"
    img = "from_json(img, 'project_id bigint, contract_id bigint, sign_time string, " \
          "amount decimal(18, 2), block string, local_rn bigint') as i"

    def ntz(field: str) -> str:  # a JSON time (with a Z when it was a session-zone timestamp), naive
        return f"cast(substr({field}, 1, 19) as timestamp_ntz)"
    return f"""
    with
    oc as (
        -- block_offset, a sum over a window, is a JSON number with a fraction
        select rowkind, from_json(img, 'project_id bigint, block string, block_offset double') as i
        from parquet.`{changes}` where part = 'off'
    ),
    moved as (
        select i.project_id, {ntz('i.block')} as block,
               cast(max(case when rowkind in ('-U', '-D') then i.block_offset end) as bigint) as old_off,
               cast(max(case when rowkind in ('+U', '+I') then i.block_offset end) as bigint) as new_off
        from oc group by i.project_id, {ntz('i.block')}
    ),
    lc_json as (select rowkind, {img} from parquet.`{changes}` where part = 'loc'),
    lc as (
        select rowkind, named_struct('project_id', i.project_id, 'contract_id', i.contract_id,
                                     'sign_time', {ntz('i.sign_time')}, 'amount', i.amount,
                                     'block', {ntz('i.block')}, 'local_rn', i.local_rn) as i
        from lc_json
    ),
    changed_ids as (select distinct i.contract_id from lc),
    shifted as (
        select l.project_id, l.contract_id, l.sign_time, l.amount,
               l.local_rn + m.old_off as old_asc, l.local_rn + m.new_off as new_asc
        from {loc_rel} as l
        inner join moved as m on l.project_id = m.project_id and l.block = m.block
        left anti join changed_ids as c on l.contract_id = c.contract_id
        where m.old_off <> m.new_off
    ),
    own as (
        select lc.rowkind, lc.i.project_id, lc.i.contract_id, lc.i.sign_time, lc.i.amount,
               lc.i.local_rn + cast(case when lc.rowkind in ('-U', '-D') then coalesce(m.old_off, o.block_offset)
                                         else coalesce(m.new_off, o.block_offset) end as bigint) as asc_rn
        from lc
        left join moved as m on lc.i.project_id = m.project_id and lc.i.block = m.block
        left join parquet.`{state}/off` as o on lc.i.project_id = o.project_id and lc.i.block = o.block
    )
    select '-U' as rowkind, project_id, contract_id, sign_time, amount, old_asc as asc_rn from shifted
    union all
    select '+U', project_id, contract_id, sign_time, amount, new_asc from shifted
    union all
    select rowkind, project_id, contract_id, sign_time, amount, asc_rn from own
    """
