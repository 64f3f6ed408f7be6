{#- Seed 000 stage 3, `dwd_project_contract_final_result_max_table`: one row per project
    with the rank positions it uses (`max_rn`) and its latest sign time (`max_event_time`).
    Exact under retraction: the rank rewrite (`int_contract_rank_rewrite`) recomputes a
    touched project's row from its blocks (`int_project_block_offset`'s new rows) instead of merging with `max`. Committed
    as a `merge_on_read` table keyed by project: a commit writes the touched projects'
    changed rows (-U/+U, +I, and -D for a project left without contracts) to its audit
    log - Paimon's lookup changelog with row deduplication - and no other project's row. -#}
{{ config(
    materialized='merge_on_read',
    compact_commits=var('compact_commits'),
    primary_key=['project_id'],
    state_fingerprint=lakerank.pipeline_fingerprint(),
    commit_source='stg_contract_changelog',
) }}
{{ lakerank.rank_table_rows('acc') }}
