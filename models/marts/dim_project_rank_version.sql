{#- Seed 000 stage 5, `dwd_project_contract_base_version_table` (the 拉链表 / zipper):
    per project, one version per distinct live sign time. `base_max_rn` is the number of
    rank positions used by the project's contracts with sign_time <= t for every t in
    [ver_start, ver_end); the open current version ends at 9999-12-31 23:59:59. Resolved
    when read: the versions stored inside their block (`int_project_block_version`) plus
    the block's offset (`lakerank.rank_zipper`). -#}
{{ config(materialized='view') }}

{{ lakerank.rank_zipper(ref('int_project_block_version'), ref('int_project_block_offset')) }}
