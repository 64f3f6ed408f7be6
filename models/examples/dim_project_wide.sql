{#- Seed 003 (Hudi multi-stream stitching) — the wide table: one row per project, three
    streams each owning their columns through a Paimon partial-update sequence group, so
    a stream never touches another's columns and late data never overwrites newer data:
    - contracts (stg_contract_changelog, a retract changelog): contract_count and
      contract_amount are `sum`s (a -U/-D subtracts), last_sign_time a `max` that
      ignores retractions; versioned by contracts_changed_at (op_ts);
    - payments (int_payments' audit log): payment_count and paid_amount `sum`s,
      versioned by last_pay_time;
    - design changes (stg_design_changes): designer and design_status, versioned by
      (design_changed_at, design_op_ts, design_change_id): an older change arriving late
      changes nothing.
    Input: one commit of int_project_wide_changes, which merges the three sources'
    pending commit windows. -#}
{{ config(
    materialized='pk_table',
    primary_key=['project_id'],
    options={
        'merge-engine': 'partial-update',
        'fields.contracts_changed_at.sequence-group': 'contract_count,contract_amount,last_sign_time',
        'fields.contract_count.aggregate-function': 'sum',
        'fields.contract_amount.aggregate-function': 'sum',
        'fields.last_sign_time.aggregate-function': 'max',
        'fields.last_sign_time.ignore-retract': 'true',
        'fields.last_pay_time.sequence-group': 'payment_count,paid_amount',
        'fields.payment_count.aggregate-function': 'sum',
        'fields.paid_amount.aggregate-function': 'sum',
        'fields.design_changed_at,design_op_ts,design_change_id.sequence-group': 'designer,design_status',
        'changelog-producer': 'lookup',
    },
) }}

with

stream_changes as (
    select * from {{ lakerank_lib.pending_rows(ref('int_project_wide_changes')) }}
),

final as (
    select
        rowkind,
        project_id,
        contract_count,
        contract_amount,
        last_sign_time,
        contracts_changed_at,
        payment_count,
        paid_amount,
        last_pay_time,
        designer,
        design_status,
        design_changed_at,
        design_op_ts,
        design_change_id
    from stream_changes
)

select * from final
