{#- Seed 000 stage 6, `dwd_project_contract_final_result_table`: each live contract's
    rank over the full history of its project, `asc_rn = mem_rn + base_max_rn`, where
    `base_max_rn` is the value of the zipper in force just before the contract's segment
    start (the seed's lookup join `FOR SYSTEM_TIME AS OF`): the rank positions the
    project's earlier segments use. The rank rewrite (`int_contract_rank_rewrite`) computes
    the touched projects' rows from their earliest touched segment on; this model commits
    them as a diff against its own rows, and every changed row goes to the audit log that
    `fct_contract_rank_changelog` exposes. The per-slice data test checks the fact against
    the zipper. -#}
{{ config(
    materialized='merge_on_read',
    compact_commits=var('compact_commits'),
    cluster_by=['project_id', 'segment_start'],
    primary_key=['contract_id'],
    state_fingerprint=lakerank.pipeline_fingerprint(),
    commit_source='stg_contract_changelog',
) }}
{%- set rewrite = lakerank.rank_rewrite_for('fct') -%}
{%- do lakerank_lib.declare_rewrite(rewrite.predicate, prior=rewrite.prior, prior_columns=rewrite.prior_columns) -%}

select
    project_id,
    contract_id,
    sign_time,
    amount,
    mem_rn,
    segment_start,
    base_max_rn,
    asc_rn
from {{ rewrite.relation }}
where part = 'fct'
