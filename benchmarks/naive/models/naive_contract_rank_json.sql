{#- Labelled yardstick: the JSON re-parse. Parse every landed event on every run, keep
    each contract's last event by op_ts (ties by file), and rank the live contracts of each
    project over their whole history. Cost grows with the history on every run. -#}

with

raw_events as (
    select
        from_json(
            value,
            'op string, project_id bigint, contract_id bigint, sign_time string, amount decimal(18, 2), op_ts string'
        ) as event,
        input_file_name() as source_file
    from text.`{{ naive_landing() }}`
),

last_events as (
    select
        event.contract_id,
        max_by(
            struct(event.op, event.project_id, event.sign_time, event.amount),
            struct(event.op_ts, source_file)
        ) as last_event
    from raw_events
    where event.op in ('+I', '+U', '-D')
    group by event.contract_id
),

live as (
    select
        contract_id,
        last_event.project_id,
        to_timestamp(last_event.sign_time, 'yyyy-MM-dd HH:mm:ss') as sign_time,
        last_event.amount
    from last_events
    where last_event.op <> '-D'
)

select
    project_id,
    contract_id,
    sign_time,
    amount,
    {{ var('rank_function') }}() over (
        partition by project_id
        order by sign_time{% if var('rank_function') == 'row_number' %}, contract_id{% endif %}
    ) as asc_rn
from live
