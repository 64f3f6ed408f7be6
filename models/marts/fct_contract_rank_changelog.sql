{#- Retract changelog of `fct_contract_rank` (Flink's retract stream, seed 004): every
    rank that changed, as -U/+U pairs (+I new, -D gone), tagged with `_commit_id`.
    Replaying it in `_commit_id` order (retractions before additions within a commit)
    reproduces `fct_contract_rank`. Read from the table's audit log. -#}
{{ config(materialized='view') }}

with

audit as (
    select * from {{ lakerank_lib.audit_log(ref('fct_contract_rank')) }}
)

select
    rowkind,
    project_id,
    contract_id,
    sign_time,
    segment_start,
    mem_rn,
    base_max_rn,
    asc_rn,
    amount,
    _commit_id,
    _commit_time
from audit
