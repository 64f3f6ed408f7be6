{#- The scope of this build's rank rewrite (no seed table: the seed re-ranks in Flink state).
    For every project with pending changes: `touched_from`, its earliest touched
    segment, and `rewrite_from`, the segment before it that holds the project's previous
    live contracts (the zipper version in force at `touched_from` lives there); one row
    per segment of the project from `rewrite_from` on, before or after this window.
    The zipper and the fact table rewrite exactly these (project, segment) partitions.
    Segment lists come from the accumulation after the window (which this build has
    already committed) and from the window's changes: segments before `touched_from`
    are untouched by the window, and a segment emptied by the window has a change in it.
    (Before images of the accumulation are not needed, and reading them by commit id
    was the defect of issue F.1: the accumulation's audit log numbers its own commits.)
    The window starts at the older watermark of the two consumers. -#}
{{ config(
    materialized='table',
) }}
{%- set w = lakerank.contract_window(consumers=['dim_project_rank_version', 'fct_contract_rank']) -%}

with

changes as (
    {{ lakerank.contract_changes() }}
),

touched as (
    select
        project_id,
        min(segment_start) as touched_from
    from changes
    group by project_id
),

accumulation as (
    select * from {{ ref('int_project_rank_accumulation') }}
    where _bucket in (select distinct {{ lakerank.project_bucket() }} from touched)
),

listed_segments as (
    select
        accumulation.project_id,
        entry.segment_start
    from accumulation
        lateral view explode(accumulation.segments) exploded as entry
    union all
    select
        project_id,
        segment_start
    from changes
),

project_segments as (
    select distinct
        listed_segments.project_id,
        listed_segments.segment_start
    from listed_segments
    left semi join touched on listed_segments.project_id = touched.project_id
),

bounds as (
    select
        touched.project_id,
        touched.touched_from,
        coalesce(
            max(
                case
                    when project_segments.segment_start < touched.touched_from
                        then project_segments.segment_start
                end
            ),
            touched.touched_from
        ) as rewrite_from
    from touched
    inner join project_segments on touched.project_id = project_segments.project_id
    group by touched.project_id, touched.touched_from
)

select
    bounds.project_id,
    project_segments.segment_start,
    bounds.touched_from,
    bounds.rewrite_from
from bounds
inner join project_segments
    on
        bounds.project_id = project_segments.project_id
        and bounds.rewrite_from <= project_segments.segment_start
