{#- Seed 000 stage 3 per block (`dwd_project_contract_final_result_max_table`, one row a
    (project, block) instead of one a project): the rank positions a block's contracts use
    and `block_offset`, those of the project's earlier blocks, which `fct_contract_rank` and
    `dim_project_rank_version` add to the ranks stored inside the block. The rank rewrite
    sums a touched project's blocks again; this model commits the changed rows. -#}
{{ config(
    materialized='merge_on_read',
    compact_commits=var('compact_commits'),
    primary_key=['project_id', 'block'],
    state_fingerprint=lakerank.pipeline_fingerprint(),
    commit_source='stg_contract_changelog',
) }}
{{ lakerank.rank_table_rows('off') }}
