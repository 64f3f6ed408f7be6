{#- Seed 000 stage 2, `dwd_project_contract_memory_result_table`: every live contract
    with its rank inside its (project, segment) slice. The storage periods
    (`segment_period`) holding segments touched by pending changes are re-ranked and
    swapped in; their untouched slices come out unchanged. -#}
{{ config(
    materialized='swap_partitions',
    partition_by='segment_period',
    commit_source='stg_contract_changelog',
    state_fingerprint=lakerank.pipeline_fingerprint(),
) }}
{%- set touched = lakerank.touched_periods() -%}
{%- do lakerank.declare_partitions(touched) -%}

with

changes as (
    {{ lakerank.contract_changes() }}
),

existing as (
    select * from {{ lakerank.prior_rows('segment_period', touched) }}
),

latest_change as (
    select *
    from (
        select
            *,
            row_number() over (
                partition by contract_id order by _commit_id desc, _seq desc
            ) as change_order
        from changes
    ) as ordered_changes
    where change_order = 1
),

live as (
    select
        existing.project_id,
        existing.contract_id,
        existing.sign_time,
        existing.amount,
        existing.segment_start
    from existing
    left anti join changes on existing.contract_id = changes.contract_id
    union all
    select
        project_id,
        contract_id,
        sign_time,
        amount,
        segment_start
    from latest_change
    where rowkind in ('+I', '+U')
),

ranked as (
    select
        *,
        cast({{ lakerank.rank_over('project_id, segment_start') }} as bigint) as mem_rn
    from live
)

select
    project_id,
    contract_id,
    sign_time,
    amount,
    mem_rn,
    cast({{ lakerank.positions_used('mem_rn', 'project_id, segment_start') }} as bigint) as segment_positions,
    cast({{ lakerank.positions_through('mem_rn', 'project_id, segment_start') }} as bigint) as positions_through,
    segment_start,
    {{ lakerank.segment_period() }} as segment_period
from ranked
