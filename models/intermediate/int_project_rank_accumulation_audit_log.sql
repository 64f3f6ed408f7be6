{#- Seed 000 stage 4a, `dwd_project_contract_final_result_max_table$audit_log`: every
    change of the accumulation as rowkind (+I, -U, +U, -D) with `_commit_id`. -#}
{{ config(materialized='view') }}

with

audit as (
    select * from {{ lakerank_lib.audit_log(ref('int_project_rank_accumulation')) }}
)

select
    rowkind,
    project_id,
    max_rn,
    max_event_time,
    segments,
    _commit_id,
    _commit_time
from audit
