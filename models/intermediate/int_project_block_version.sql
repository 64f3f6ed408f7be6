{#- Seed 000 stage 5 as stored (`dwd_project_contract_base_version_table`, the zipper, without
    its offset): one version per project and distinct live sign time, with the positions the
    project's contracts of the same block use through it and the block's next sign time.
    `dim_project_rank_version` adds the block's offset and the next block's start. The rank
    rewrite builds a touched block's versions again; this model commits the changed rows. -#}
{{ config(
    materialized='merge_on_read',
    compact_commits=var('compact_commits'),
    primary_key=['project_id', 'ver_start'],
    cluster_by=['project_id', 'block', 'ver_start'],
    state_fingerprint=lakerank.pipeline_fingerprint(),
    commit_source='stg_contract_changelog',
) }}
{{ lakerank.rank_table_rows('ver') }}
