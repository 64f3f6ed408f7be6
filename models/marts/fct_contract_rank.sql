{#- Seed 000 stage 6, `dwd_project_contract_final_result_table`: each live contract's
    rank over the full history of its project, `asc_rn = mem_rn + base_max_rn`, where
    `base_max_rn` is the value of the zipper in force just before the contract's segment
    start (the seed's lookup join `FOR SYSTEM_TIME AS OF`): the rank positions used by the
    project's earlier segments, read here from the same per-segment index the zipper is
    built from, as the scope table carries it (`lakerank.segment_bases()`, an equi-join on
    (project, segment)), so this
    model does not wait for the zipper and the two are built side by side; the per-slice
    data test checks that they agree. Only touched projects' rows from their earliest
    touched segment on are recomputed; every changed row goes to the audit log that
    `fct_contract_rank_changelog` exposes. -#}
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

segment_bases as (
    {{ lakerank.segment_bases() }}
),

slices as (
    select slices.*
    from {{ ref('int_contract_segment_rank') }} as slices
    inner join scope on slices.project_id = scope.project_id
    where
        slices.segment_start >= scope.touched_from
),

ranked as (
    select
        slices.project_id,
        slices.contract_id,
        slices.sign_time,
        slices.amount,
        slices.mem_rn,
        slices.segment_start,
        segment_bases.base_positions as base_max_rn,
        slices.mem_rn + segment_bases.base_positions as asc_rn
    from slices
    inner join segment_bases
        on
            slices.project_id = segment_bases.project_id
            and slices.segment_start = segment_bases.segment_start
)

select * from ranked
