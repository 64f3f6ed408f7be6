{#- Seed 000 stage 5, `dwd_project_contract_base_version_table` (the 拉链表 / zipper):
    per project, one version per distinct live sign time. `base_max_rn` is the number of
    rank positions used by the project's contracts with sign_time <= t for every t in
    [ver_start, ver_end); the open current version ends at 9999-12-31 23:59:59. The rank
    rewrite (`int_contract_rank_rewrite`) rebuilds a touched project's versions from the one
    in force at its earliest touched segment on (late data in the middle of history
    corrects every later version) with `lakerank_lib.zipper`; this model commits them as a
    diff against its own rows. -#}
{{ config(
    materialized='merge_on_read',
    compact_commits=var('compact_commits'),
    primary_key=['project_id', 'ver_start'],
    cluster_by=['project_id', 'segment_start'],
    state_fingerprint=lakerank.pipeline_fingerprint(),
    commit_source='stg_contract_changelog',
) }}
{%- set rewrite = lakerank.rank_rewrite_for('dim') -%}
{%- do lakerank_lib.declare_rewrite(rewrite.predicate, prior=rewrite.prior, prior_columns=rewrite.prior_columns) -%}

select
    project_id,
    ver_start,
    ver_end,
    base_max_rn,
    segment_start
from {{ rewrite.relation }}
where part = 'dim'
