{#- Seed 000 stage 3, `dwd_project_contract_final_result_max_table`: one row per project
    with the rank positions it has used (`max_rn`), its latest sign time
    (`max_event_time`) and, per segment, the positions used there (`segments`, the
    index later stages use to find a project's partitions). Recomputed exactly for
    touched projects from their touched slices and committed as a `merge_on_read` table
    keyed by project: a commit writes the touched projects' changed rows (-U/+U, +I, and -D
    for a project left without contracts) to its audit log — Paimon's lookup changelog
    with row deduplication — and no other project's row. -#}
{{ config(
    materialized='merge_on_read',
    compact_commits=var('compact_commits'),
    primary_key=['project_id'],
    state_fingerprint=lakerank.pipeline_fingerprint(),
) }}
{%- do lakerank.contract_window() -%}
{%- set touched_projects -%}
    t.project_id in (select project_id from ({{ lakerank.contract_changes() }}))
{%- endset -%}
{%- do lakerank_lib.declare_rewrite(touched_projects) -%}

with

changes as (
    {{ lakerank.contract_changes() }}
),

existing as (
    select * from {{ lakerank_lib.prior_rows(predicate=touched_projects) }}
),

touched_slices as (
    select distinct
        project_id,
        segment_start
    from changes
),

slice_totals as (
    select
        slices.project_id,
        slices.segment_start,
        max(slices.segment_positions) as positions,
        max(slices.sign_time) as max_sign_time
    from {{ ref('int_contract_segment_rank') }} as slices
    left semi join touched_slices
        on
            slices.project_id = touched_slices.project_id
            and slices.segment_start = touched_slices.segment_start
    group by slices.project_id, slices.segment_start
),

prior_entries as (
    select
        existing.project_id,
        entry.segment_start,
        entry.positions,
        entry.max_sign_time
    from existing
        lateral view explode(existing.segments) exploded as entry
    where existing.project_id in (select touched_slices.project_id from touched_slices)
),

kept_entries as (
    select prior_entries.*
    from prior_entries
    left anti join touched_slices
        on
            prior_entries.project_id = touched_slices.project_id
            and prior_entries.segment_start = touched_slices.segment_start
),

entries as (
    select * from kept_entries
    union all
    select * from slice_totals
),

recomputed as (
    select
        project_id,
        cast(sum(positions) as bigint) as max_rn,
        max(max_sign_time) as max_event_time,
        array_sort(collect_list(struct(segment_start, positions, max_sign_time))) as segments
    from entries
    group by project_id
)

select
    project_id,
    max_rn,
    max_event_time,
    segments
from recomputed
