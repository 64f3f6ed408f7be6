{#- Seed 000 stage 6, `dwd_project_contract_final_result_table`: each live contract's
    rank over the full history of its project, `asc_rn = mem_rn + base_max_rn`, where
    `base_max_rn` comes from an as-of lookup of the zipper: the version in force just
    before the contract's segment start (ver_start < segment_start <= ver_end), so a
    contract at exactly 00:00:00 is never counted twice. Only touched projects'
    rows from their earliest touched segment on are recomputed; every changed row goes
    to the audit log that `fct_contract_rank_changelog` exposes. -#}
{{ config(
    materialized='merge_on_read',
    compact_commits=var('compact_commits'),
    cluster_by=['project_id', 'segment_start'],
    primary_key=['contract_id'],
    state_fingerprint=lakerank.pipeline_fingerprint(),
) }}
{%- do lakerank.contract_window() -%}
{%- do lakerank_lib.declare_rewrite(lakerank.rank_rewrite_predicate('touched_from')) -%}

with

{{ lakerank.rank_rewrite_scope() }},

slices as (
    select slices.*
    from {{ ref('int_contract_segment_rank') }} as slices
    inner join scope on slices.project_id = scope.project_id
    where
        slices.segment_start >= scope.touched_from
),

zipper as (
    select zipper.*
    from {{ ref('dim_project_rank_version') }} as zipper
    where zipper.project_id in (select scope.project_id from scope)
),

slice_bases as (
    {{ lakerank_lib.as_of_lookup(
        'select distinct project_id, segment_start from slices',
        'zipper', 'segment_start', 'base_max_rn') }}
),

ranked as (
    select
        slices.project_id,
        slices.contract_id,
        slices.sign_time,
        slices.amount,
        slices.mem_rn,
        slices.segment_start,
        coalesce(slice_bases.base_max_rn, 0) as base_max_rn,
        slices.mem_rn + coalesce(slice_bases.base_max_rn, 0) as asc_rn
    from slices
    left join slice_bases
        on
            slices.project_id = slice_bases.project_id
            and slices.segment_start = slice_bases.segment_start
)

select * from ranked
