{#- Every (project, segment) slice this build rewrote holds exact ranks: `mem_rn` is the
    rank function recomputed over the slice, `asc_rn = mem_rn + base_max_rn`, `base_max_rn`
    is the value of the zipper version in force just before the slice's segment start (the
    seed's lookup; 0 before a project's first version), every contract's rank agrees with
    the zipper version that starts at its sign time (positions used by contracts signed at
    or before it: dense_rank equals it; rank is it minus the ties at that time plus one;
    row_number lies within the ties), and every rewritten zipper version starts at a live
    contract's sign time. These invariants hold slice by slice (ties share a sign time, so a
    slice), so the test reads only the rewritten rows of each mart, once (cost follows the
    build), and a correct build never fails it, while any wrong rank in a slice it reads
    does. The fact and the zipper are committed side by side from one rank rewrite; when a
    selection builds one of them (`--select +fct_contract_rank`) the other is behind and
    only the fact's own invariants are checked; this test runs again when both are built. -#}
{%- set fn = lakerank.rank_function() -%}
{%- set zipper_relation = ref('dim_project_rank_version') -%}
{%- set with_zipper = lakerank.at_one_commit([ref('fct_contract_rank'), zipper_relation]) -%}

{%- if lakerank.rank_rewrite_is_empty() %}

select 'no slice rewritten' as nothing_to_check where false

{%- else %}

with

scope as (
    select
        project_id,
        touched_from
    from {{ ref('int_contract_rank_rewrite') }}
    where part = 'scope'
),

fct as (
    select t.*
    from {{ ref('fct_contract_rank') }} as t
    where {{ lakerank.rank_rewrite_predicate('fct', 'scope') }}
),

zipper as (
{%- if with_zipper %}
    select
        t.*,
        t.ver_start < scope.touched_from as is_head
    from {{ zipper_relation }} as t
    inner join scope on t.project_id = scope.project_id
    where {{ lakerank.rank_rewrite_predicate('dim', 'scope') }}
{%- else %}
    -- the zipper is not at the fact's commit: its part of the check waits for its build
    select
        cast(null as bigint) as project_id,
        cast(null as timestamp_ntz) as ver_start,
        cast(null as bigint) as base_max_rn,
        cast(null as boolean) as is_head
    where false
{%- endif %}
),

recomputed as (
    select
        *,
        {{ lakerank.rank_over('project_id, segment_start') }} as want_mem_rn,
        min(base_max_rn) over (partition by project_id, segment_start) as slice_base_low,
        max(base_max_rn) over (partition by project_id, segment_start) as slice_base_high,
        count(*) over (partition by project_id, sign_time) as n_ties
    from fct
),

slice_bases as (
    {#- the value of the latest version starting strictly before each slice: slices and
        versions in time order per project, a slice before a version at the same time -#}
    select
        project_id,
        t as segment_start,
        coalesce(last_value(version_base, true) over (
            partition by project_id order by t, is_version
            rows between unbounded preceding and 1 preceding), 0) as want_base,
        is_version
    from (
        select distinct project_id, segment_start as t, 0 as is_version, cast(null as bigint) as version_base
        from fct
        union all
        select project_id, ver_start as t, 1 as is_version, base_max_rn as version_base
        from zipper
    ) as points
),

checked as (
    select
        coalesce(recomputed.project_id, zipper.project_id) as project_id,
        recomputed.segment_start,
        recomputed.contract_id,
        zipper.ver_start,
        recomputed.mem_rn,
        recomputed.want_mem_rn,
        recomputed.base_max_rn,
        recomputed.slice_base_low,
        recomputed.slice_base_high,
        slice_bases.want_base,
        recomputed.asc_rn,
        zipper.base_max_rn as positions_through,
        recomputed.n_ties
    from recomputed
    left join slice_bases
        on
            recomputed.project_id = slice_bases.project_id
            and recomputed.segment_start = slice_bases.segment_start
            and slice_bases.is_version = 0
    full outer join zipper
        on
            recomputed.project_id = zipper.project_id
            and recomputed.sign_time = zipper.ver_start
    where
        recomputed.contract_id is not null
        or not zipper.is_head
)

select * from checked
where
    contract_id is null
    or mem_rn <> want_mem_rn
    or slice_base_low <> slice_base_high
    or asc_rn <> mem_rn + base_max_rn
{%- if with_zipper %}
    or base_max_rn <> want_base
    or positions_through is null
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
