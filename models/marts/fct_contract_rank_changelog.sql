{#- Retract changelog of `fct_contract_rank` (Flink's retract stream, seed 004): every
    rank that changed, as -U/+U pairs (+I new, -D gone), tagged with `_commit_id`.
    Replaying it in `_commit_id` order (retractions before additions within a commit)
    reproduces `fct_contract_rank`. Derived when read from the audit logs of the fact's two
    tables (`lakerank.rank_changelog`): a commit stores the changed blocks and offsets, and
    this view expands an offset change to its block's contracts. Its data tests read only
    what this build's commit added (`lakerank_audit_log_of`). -#}
{{ config(materialized='view', lakerank_audit_log_of='int_contract_block_rank') }}

{{ lakerank.rank_changelog(
    lakerank_lib.audit_log(ref('int_contract_block_rank')),
    lakerank_lib.audit_log(ref('int_project_block_offset'))) }}
