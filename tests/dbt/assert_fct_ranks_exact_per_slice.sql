{#- Every (project, segment) slice this build rewrote holds exact ranks: `mem_rn` is the
    rank function recomputed over the slice, `base_max_rn` is the rank positions the
    project's earlier segments use (a running sum over the accumulation's per-segment
    index), `asc_rn = mem_rn + base_max_rn`, the positions the slice uses equal its index
    entry (a slice in the index with no rows fails too), and every contract's rank agrees
    with the zipper version that starts at its sign time (positions used by contracts
    signed at or before it): dense_rank equals it; rank is it minus the ties at that time
    plus one; row_number lies within the ties. These invariants hold slice by slice (ties
    share a sign time, so a slice), so the test reads only the rewritten slices, each mart
    once (cost follows the build), and a correct build never fails it, while any wrong rank
    in a slice it reads does. The zipper part runs when the zipper is at the fact's commit:
    the two are built side by side, and a selection of one of them (`--select
    +fct_contract_rank`) leaves the other behind; this test runs again when it is built. -#}
{%- set fn = lakerank.rank_function() -%}
{%- set zipper_relation = ref('dim_project_rank_version') -%}
{%- set with_zipper = lakerank.at_one_commit([ref('fct_contract_rank'), zipper_relation]) -%}

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
    {{ lakerank.segment_index() }}
),

scoped_index as (
    select index_entries.*
    from index_entries
    left semi join scope
        on
            index_entries.project_id = scope.project_id
            and index_entries.segment_start = scope.segment_start
),

zipper as (
{%- if with_zipper %}
    select dim_project_rank_version.*
    from {{ zipper_relation }} as dim_project_rank_version
    left semi join scope
        on
            dim_project_rank_version.project_id = scope.project_id
            and dim_project_rank_version.segment_start = scope.segment_start
{%- else %}
    -- the zipper is not at the fact's commit: its part of the check waits for its build
    select
        cast(null as bigint) as project_id,
        cast(null as timestamp) as ver_start,
        cast(null as bigint) as base_max_rn
    where false
{%- endif %}
),

recomputed as (
    select
        *,
        {{ lakerank.rank_over('project_id, segment_start') }} as want_mem_rn,
        {{ lakerank.positions_used('mem_rn', 'project_id, segment_start') }} as slice_positions,
        count(*) over (partition by project_id, sign_time) as n_ties
    from fct
),

with_versions as (
    select
        recomputed.*,
        zipper.base_max_rn as positions_through
    from recomputed
    left join zipper
        on
            recomputed.project_id = zipper.project_id
            and recomputed.sign_time = zipper.ver_start
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
        recomputed.positions_through,
        recomputed.n_ties,
        scoped_index.positions as index_positions,
        scoped_index.base_positions as index_base
    from with_versions as recomputed
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
{%- if with_zipper %}
    or (contract_id is not null and positions_through is null)
{%- if fn == 'dense_rank' %}
    or asc_rn <> positions_through
{%- elif fn == 'rank' %}
    or asc_rn <> positions_through - n_ties + 1
{%- else %}
    or asc_rn > positions_through
    or asc_rn <= positions_through - n_ties
{%- endif %}
{%- endif %}
{%- endif %}
