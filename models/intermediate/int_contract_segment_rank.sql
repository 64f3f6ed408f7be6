{#- Seed 000 stage 2, `dwd_project_contract_memory_result_table`: every live contract
    with its rank inside its (project, segment) slice. The slices touched by pending
    changes (where a changed contract was or now is) are re-ranked; the merge-on-read
    commit writes only the rows whose rank or values changed. -#}
{{ config(
    materialized='merge_on_read',
    compact_commits=var('compact_commits'),
    primary_key=['contract_id'],
    cluster_by=['project_id', 'segment_start'],
    state_fingerprint=lakerank.pipeline_fingerprint(),
) }}
{%- do lakerank.contract_window() -%}
{%- set touched_slices -%}
    (t.project_id, t.segment_start) in (
        select project_id, segment_start from ({{ lakerank.contract_changes() }}))
    or t.contract_id in (select contract_id from ({{ lakerank.contract_changes() }}))
{%- endset -%}
{%- do lakerank_lib.declare_rewrite(touched_slices) -%}

with

changes as (
    {{ lakerank.contract_changes() }}
),

existing as (
    select * from {{ lakerank_lib.prior_rows(predicate=touched_slices) }}
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
    segment_start
from ranked
