{#- The read layer (no seed table: Flink's sink tables are read as they are written).
    Schema `<target schema>_read` gets a view per mart, `fct_contract_rank`,
    `dim_project_rank_version` and `fct_contract_rank_changelog`, and per table they read
    (the ranks in their blocks, the blocks' offsets and versions), each reading it as
    of the commit this table holds: the last build whose models and data tests all passed.
    Readers that query these views see every mart at one complete commit, also while a
    build runs or after one failed (lakerank_lib's `publication` materialization). The
    SELECT below is not stored: the materialization writes the one-row record. -#}
{{ config(
    materialized='publication',
    schema='read',
) }}
-- depends_on: {{ ref('int_contract_block_rank') }}
-- depends_on: {{ ref('int_project_block_offset') }}
-- depends_on: {{ ref('int_project_block_version') }}
-- depends_on: {{ ref('fct_contract_rank') }}
-- depends_on: {{ ref('dim_project_rank_version') }}
-- depends_on: {{ ref('fct_contract_rank_changelog') }}

select 1 as published
