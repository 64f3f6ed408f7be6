{#- Seed 003, payments stream: each payment's latest version. A payment may be re-sent
    (duplicate) or corrected (same payment_id, newer op_ts); a late older version
    never overwrites a newer one (sequence.field op_ts; ties: the later file and line).
    Its lookup changelog (audit log) turns every change of a payment into retract rows
    (+I, or -U/+U) that dim_project_wide sums per project; re-sends produce nothing
    (row-deduplicate). -#}
{{ config(
    materialized='pk_table',
    primary_key=['payment_id'],
    order_by=['_source_file', '_source_line'],
    options={
        'merge-engine': 'deduplicate',
        'sequence.field': 'op_ts',
        'changelog-producer': 'lookup',
        'changelog-producer.row-deduplicate': 'true',
    },
) }}

with

payment_events as (
    select * from {{ lakerank_lib.pending_rows(ref('stg_payments')) }}
),

final as (
    select
        payment_id,
        project_id,
        amount,
        pay_time,
        op_ts,
        _source_file,
        _source_line
    from payment_events
)

select * from final
