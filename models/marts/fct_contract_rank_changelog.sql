{#- Retract changelog of `fct_contract_rank` (Flink's retract stream, seed 004): every
    rank that changed, as -U/+U pairs (+I new, -D gone), tagged with `_commit_id`.
    Replaying it in `_commit_id` order (retractions before additions within a commit)
    reproduces `fct_contract_rank`. Read from the table's audit log; its data tests read
    only what the fact's commit of this build added (`lakerank_audit_log_of`). -#}
{{ config(materialized='view', lakerank_audit_log_of='fct_contract_rank') }}

select * from {{ lakerank_lib.audit_log(ref('fct_contract_rank')) }}
