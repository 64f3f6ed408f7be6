{#- Seed 000 stage 4a, `dwd_project_contract_final_result_max_table$audit_log`: every
    change of the accumulation as rowkind (+I, -U, +U, -D) with `_commit_id`. -#}
{{ config(materialized='view') }}

select * from {{ lakerank_lib.audit_log(ref('int_project_rank_accumulation')) }}
