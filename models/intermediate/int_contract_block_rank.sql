{#- Seed 000 stages 2 and 6 as stored (`dwd_project_contract_final_result_table` without its
    offset): each live contract with `mem_rn`, its rank in its (project, segment) slice, and
    `block_rn`, its rank in its (project, block), a block being the month of its segment
    start. `fct_contract_rank` adds the block's offset. The rank rewrite
    (`int_contract_rank_rewrite`) ranks a touched block again whole; this model commits it
    as a diff against its own rows. -#}
{{ config(
    materialized='merge_on_read',
    compact_commits=var('compact_commits'),
    cluster_by=['project_id', 'block', 'segment_start'],
    primary_key=['contract_id'],
    state_fingerprint=lakerank.pipeline_fingerprint(),
    commit_source='stg_contract_changelog',
) }}
{{ lakerank.rank_table_rows('blk') }}
