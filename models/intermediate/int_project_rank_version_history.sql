{#- Seed 000 stage 4b, `dwd_project_contract_final_result_max_history_table`: the
    accumulation's version changes, pairing each commit's before image (-U/-D) with its
    after image (+U/+I): previous max rank and its time, next max time. Kept for audit
    and diagnostics; the exact zipper is built from the segment slices (see docs). -#}
{{ config(materialized='view') }}

with

audit as (
    select * from {{ ref('int_project_rank_accumulation_audit_log') }}
),

paired as (
    select
        project_id,
        _commit_id,
        max(case when rowkind in ('-U', '-D') then max_rn end) as pre_max_rn,
        max(case when rowkind in ('-U', '-D') then max_event_time end) as pre_max_event_time,
        max(case when rowkind in ('+U', '+I') then max_rn end) as next_max_rn,
        max(case when rowkind in ('+U', '+I') then max_event_time end) as next_max_event_time
    from audit
    group by project_id, _commit_id
)

select
    project_id,
    pre_max_rn,
    pre_max_event_time,
    next_max_rn,
    next_max_event_time,
    _commit_id
from paired
