{#- Every (project, segment) slice this build rewrote holds exact ranks: `mem_rn` is the
    rank function recomputed over the slice, `base_max_rn` is the rank positions the
    project's earlier segments use (a running sum over the accumulation's per-segment
    index), `asc_rn = mem_rn + base_max_rn`, and the positions the slice uses equal its
    index entry (a slice in the index with no rows fails too). These invariants hold slice
    by slice, so the test reads only the rewritten slices (cost follows the build) and a
    correct build never fails it, while any wrong rank in a slice it reads does. -#}

{%- if lakerank.rank_scope_is_empty() %}

select 'no slice rewritten' as nothing_to_check where false

{%- else %}

with

scope as (
    select distinct
        project_id,
        segment_start
    from {{ ref('int_contract_rank_scope') }}
),

fct as (
    select fct_contract_rank.*
    from {{ ref('fct_contract_rank') }} as fct_contract_rank
    left semi join scope
        on
            fct_contract_rank.project_id = scope.project_id
            and fct_contract_rank.segment_start = scope.segment_start
),

index_entries as (
    {{ lakerank.segment_bases() }}
),

scoped_index as (
    select index_entries.*
    from index_entries
    left semi join scope
        on
            index_entries.project_id = scope.project_id
            and index_entries.segment_start = scope.segment_start
),

recomputed as (
    select
        *,
        {{ lakerank.rank_over('project_id, segment_start') }} as want_mem_rn,
        {{ lakerank.positions_used('mem_rn', 'project_id, segment_start') }} as slice_positions
    from fct
),

checked as (
    select
        coalesce(recomputed.project_id, scoped_index.project_id) as project_id,
        coalesce(recomputed.segment_start, scoped_index.segment_start) as segment_start,
        recomputed.contract_id,
        recomputed.mem_rn,
        recomputed.want_mem_rn,
        recomputed.base_max_rn,
        recomputed.asc_rn,
        recomputed.slice_positions,
        scoped_index.positions as index_positions,
        scoped_index.base_positions as index_base
    from recomputed
    full outer join scoped_index
        on
            recomputed.project_id = scoped_index.project_id
            and recomputed.segment_start = scoped_index.segment_start
)

select * from checked
where
    contract_id is null
    or index_positions is null
    or mem_rn <> want_mem_rn
    or base_max_rn <> index_base
    or asc_rn <> mem_rn + base_max_rn
    or slice_positions <> index_positions
{%- endif %}
