{#- Seed 002 — the project dimension (the Arctic/Paimon primary-key dimension table): each
    project's current row from its CDC stream, ordered by event time (update_time, then
    op_ts; ties: the later file and line); `d` events delete the row (-D). Its lookup
    changelog is the dimension's audit log.
    The table keeps no tombstones, so an event that is older than one an earlier commit
    already consumed (a late or re-sent event, e.g. an update older than the delete that
    removed the project) is dropped here against the stream's history: it could only
    resurrect a deleted project. -#}
{{ config(
    materialized='pk_table',
    primary_key=['project_id'],
    order_by=['_source_file', '_source_line'],
    options={
        'merge-engine': 'deduplicate',
        'sequence.field': 'update_time,op_ts',
        'changelog-producer': 'lookup',
    },
) }}
{%- set window = lakerank_lib.commit_window(ref('stg_project_changes')) -%}

with

pending_changes as (
    select * from {{ lakerank_lib.pending_rows(ref('stg_project_changes')) }}
),

consumed_changes as (
    select * from {{ ref('stg_project_changes') }}
    where _commit_id <= {{ window['from'] }}
),

touched_projects as (
    select distinct project_id from pending_changes
),

last_consumed as (
    select
        consumed_changes.project_id,
        max(struct(
            consumed_changes.update_time,
            consumed_changes.op_ts,
            consumed_changes._source_file,
            consumed_changes._source_line
        )) as order_key
    from consumed_changes
    inner join touched_projects
        on consumed_changes.project_id = touched_projects.project_id
    group by consumed_changes.project_id
),

newer_changes as (
    select pending_changes.*
    from pending_changes
    left join last_consumed
        on pending_changes.project_id = last_consumed.project_id
    where
        last_consumed.order_key is null
        or struct(
            pending_changes.update_time,
            pending_changes.op_ts,
            pending_changes._source_file,
            pending_changes._source_line
        ) > last_consumed.order_key
),

final as (
    select
        project_id,
        city,
        designer,
        status,
        update_time,
        op_ts,
        _source_file,
        _source_line,
        case op when 'c' then '+I' when 'u' then '+U' else '-D' end as rowkind
    from newer_changes
)

select * from final
