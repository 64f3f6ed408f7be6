{#- Seed 000 stage 5, `dwd_project_contract_base_version_table` (the 拉链表 / zipper):
    per project, one version per distinct live sign time. `base_max_rn` is the number of
    rank positions used by the project's contracts with sign_time <= t for every t in
    [ver_start, ver_end); the open current version ends at 9999-12-31 23:59:59.
    Rebuilt for touched projects from their `rewrite_from` segment on (late data in
    the middle of history corrects every later version) with `lakerank.zipper`. -#}
{{ config(
    materialized='merge_on_read',
    compact_commits=var('compact_commits'),
    primary_key=['project_id', 'ver_start'],
    cluster_by=['project_id', 'segment_start'],
    state_fingerprint=lakerank.pipeline_fingerprint(),
) }}
{%- do lakerank.contract_window() -%}
{%- do lakerank_lib.declare_rewrite(lakerank.rank_rewrite_predicate('rewrite_from')) -%}

with

{{ lakerank.rank_rewrite_scope() }},

segment_bases as (
    {{ lakerank.segment_bases() }}
),

points as (
    select
        slices.project_id,
        slices.segment_start,
        slices.sign_time as ver_start,
        max(slices.positions_through) as positions_through
    from {{ ref('int_contract_segment_rank') }} as slices
    inner join scope on slices.project_id = scope.project_id
    where
        slices.segment_start >= scope.rewrite_from
    group by slices.project_id, slices.segment_start, slices.sign_time
),

point_values as (
    select
        points.project_id,
        points.ver_start,
        points.segment_start,
        segment_bases.base_positions + points.positions_through as base_max_rn
    from points
    inner join segment_bases
        on
            points.project_id = segment_bases.project_id
            and points.segment_start = segment_bases.segment_start
),

versions as (
    {{ lakerank_lib.zipper(
        'point_values', ['project_id'], 'ver_start', ['base_max_rn', 'segment_start'],
        change_order=[], rowkind=none) }}
)

select
    project_id,
    ver_start,
    ver_end,
    base_max_rn,
    segment_start
from versions
