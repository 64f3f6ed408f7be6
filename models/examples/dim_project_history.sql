{#- Seed 002 — the project dimension's versions (拉链表, SCD2) in event time: one row per
    project and version of (city, designer, status), valid in [ver_start, ver_end); the
    current version ends at 9999-12-31 23:59:59; a deleted project has no version after
    its delete. Built from every landed CDC event (stg_project_changes), not from
    dim_project's audit log: the audit log drops late events older than the current row,
    collapses several changes of one commit into one, and its -D carries the deleted
    row's before-image (not the time of the delete), so event-time versions built from it
    would miss or misplace changes. Recomputed whole on each build (a late event can
    split an old version). -#}
{{ config(materialized='table') }}

with

project_changes as (
    select
        project_id,
        update_time,
        op_ts,
        _source_file,
        _source_line,
        city,
        designer,
        status,
        case op when 'd' then '-D' else '+I' end as rowkind
    from {{ ref('stg_project_changes') }}
),

versions as (
    {{ lakerank_lib.zipper(
        'project_changes',
        ['project_id'],
        'update_time',
        ['city', 'designer', 'status'],
        change_order=['op_ts', '_source_file', '_source_line'],
        collapse_unchanged=true,
    ) }}
),

final as (
    select
        project_id,
        ver_start,
        ver_end,
        city,
        designer,
        status
    from versions
)

select * from final
