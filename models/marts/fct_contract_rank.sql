{#- Seed 000 stage 6, `dwd_project_contract_final_result_table`: each live contract's
    rank over the full history of its project, `asc_rn = mem_rn + base_max_rn`, where
    `base_max_rn` is the value of the zipper in force just before the contract's segment
    start (the seed's lookup join `FOR SYSTEM_TIME AS OF`): the rank positions the
    project's earlier segments use. Resolved when read: the contract's rank in its block
    (`int_contract_block_rank`) plus the block's offset (`int_project_block_offset`), so a
    late contract rewrites its block, not every later rank (`lakerank.rank_fact`). -#}
{{ config(materialized='view') }}

{{ lakerank.rank_fact(ref('int_contract_block_rank'), ref('int_project_block_offset')) }}
