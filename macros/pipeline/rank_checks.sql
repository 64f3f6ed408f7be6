{#- The rank rewrite's checks, on the rows it staged, before any rank table commits them
    (issue Q's "checks inside the commit"): `check_rank_results` is a post-hook of
    int_contract_rank_rewrite that stops the build with the failing rows in its message;
    `rank_slice_problems` is the per-slice query it runs, which the audit test
    `assert_fct_ranks_exact_per_slice` runs too (`dbt test --selector audit`). -#}


{#- The rows of the rewrite `rewrite` (a relation) that break an invariant, one row each, as
    (problem, detail). It reads the rewrite's new rows (parts blk, ver, off, acc: the
    complete contents of the touched blocks, and every block of a touched project), never
    the tables' history:
    - 'block': in each touched block, `mem_rn` is the rank function recomputed over its
      (project, segment) slice and `block_rn` over the block, the block is the month of the
      segment start, and each contract agrees with the version at its sign time (the
      positions used through it in the block: dense_rank equals it; rank is it minus the ties
      plus one; row_number lies within the ties); each version starts at a live sign time;
    - 'offset': each block's offset is the positions of the project's earlier blocks, a
      touched block's positions, first and last sign time are its versions', `next_start`
      is the next block's first sign time, and the accumulation is the project's total;
    - 'duplicate key or NULL column': each staged row has its key once and no NULL in a
      column it needs. -#}
{% macro rank_slice_problems(rewrite) -%}
{%- set fn = lakerank.rank_function() -%}
with

{%- for part in ['blk', 'ver', 'off', 'acc'] %}

{{ part }} as (
    select {{ lakerank.rank_columns(part) | join(', ') }}
    from {{ rewrite }}
    where part = '{{ part }}'
),
{%- endfor %}

recomputed as (
    select
        *,
        {{ lakerank.rank_over('project_id, segment_start') }} as want_mem_rn,
        {{ lakerank.rank_over('project_id, block') }} as want_block_rn,
        count(*) over (partition by project_id, sign_time) as n_ties
    from blk
),

checked as (
    select
        coalesce(recomputed.project_id, ver.project_id) as project_id,
        recomputed.contract_id,
        recomputed.block,
        recomputed.segment_start,
        ver.ver_start,
        recomputed.mem_rn,
        recomputed.want_mem_rn,
        recomputed.block_rn,
        recomputed.want_block_rn,
        ver.positions_through,
        recomputed.n_ties
    from recomputed
    full outer join ver
        on recomputed.project_id = ver.project_id and recomputed.sign_time = ver.ver_start
),

block_stats as (
    {{ lakerank.rank_block_totals('ver') }}
),

offsets as (
    select
        off.*,
        coalesce(sum(off.positions) over (
            partition by off.project_id order by off.block rows between unbounded preceding and 1 preceding), 0)
            as want_offset,
        lead(off.first_sign_time) over (partition by off.project_id order by off.block) as want_next,
        sum(off.positions) over (partition by off.project_id) as total,
        block_stats.positions as block_positions,
        block_stats.first_sign_time as block_first,
        block_stats.last_sign_time as block_last,
        acc.max_rn
    from off
    left join block_stats on off.project_id = block_stats.project_id and off.block = block_stats.block
    left join acc on off.project_id = acc.project_id
)

select
    'block' as problem,
    to_json(struct(checked.*)) as detail
from checked
where
    contract_id is null
    or positions_through is null
    or mem_rn <> want_mem_rn
    or block_rn <> want_block_rn
    or block <> {{ lakerank.rank_block('segment_start') }}
{%- if fn == 'dense_rank' %}
    or block_rn <> positions_through
{%- elif fn == 'rank' %}
    or block_rn <> positions_through - n_ties + 1
{%- else %}
    or block_rn > positions_through
    or block_rn <= positions_through - n_ties
{%- endif %}

union all
select
    'offset' as problem,
    to_json(struct(offsets.*)) as detail
from offsets
where
    block_offset <> want_offset
    or not (next_start <=> want_next)
    or max_rn is null
    or max_rn <> total
    or (block_positions is not null and (
        positions <> block_positions or first_sign_time <> block_first or last_sign_time <> block_last))

union all
select
    'duplicate key or NULL column' as problem,
    to_json(struct(part, k1, k2, count(*) as n_rows)) as detail
from (
    select
        part,
        if(part = 'blk', contract_id, project_id) as k1,
        case part when 'ver' then ver_start when 'off' then block end as k2,
        case part
            when 'blk' then
                sign_time is null or segment_start is null or mem_rn is null or block is null or block_rn is null
            when 'ver' then block is null or positions_through is null or segment_start is null
            when 'off' then
                positions is null or block_offset is null or first_sign_time is null or last_sign_time is null
            else max_rn is null or max_event_time is null
        end as incomplete
    from {{ rewrite }}
    where part in ('blk', 'ver', 'off', 'acc')
) as staged_keys
group by part, k1, k2
having
    count(*) > 1
    or k1 is null
    or (part in ('ver', 'off') and k2 is null)
    or max(incomplete)
{%- endmacro %}


{#- Post-hook of int_contract_rank_rewrite (`rewrite`: `this`), after its results are in:
    stops the build when `rank_slice_problems` finds a row, naming up to 20 of them, so a
    wrong rank never reaches a table. Renders no SQL: the check is a query it runs itself.
    `pending` (default: whether the build's window holds changes): false skips the query,
    as when nothing was rewritten. Also `dbt run-operation check_rank_results --args
    '{rewrite: <schema>.int_contract_rank_rewrite, pending: true}'`. -#}
{% macro check_rank_results(rewrite, pending=none) -%}
  {%- if pending is none and execute -%}{%- set pending = lakerank.rank_rewrite_window()['pending'] -%}{%- endif -%}
  {%- if execute and pending -%}
    {%- set found = run_query("select problem, detail from (" ~ lakerank.rank_slice_problems(rewrite)
                              ~ ") as problems limit 20") -%}
    {%- if found.rows | length > 0 -%}
      {%- set lines = [] -%}
      {%- for row in found.rows -%}{%- do lines.append(row[0] ~ ': ' ~ row[1]) -%}{%- endfor -%}
      {{ exceptions.raise_compiler_error("rank rewrite " ~ rewrite ~ ": its new rows fail the per-slice"
           ~ " check (first " ~ lines | length ~ "), nothing committed:\n" ~ lines | join('\n')) }}
    {%- endif -%}
  {%- endif -%}
{%- endmacro %}
