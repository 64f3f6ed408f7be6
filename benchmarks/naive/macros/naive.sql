{#- The landed events a user keeps as parquet: each run appends the lines of the files landed
    since the last run. "Since" is the files' modification time above the newest one already
    in the table, read before the query and given to it as a literal, so that Spark skips the
    older files when it lists the folder (with the scalar subquery in the query instead, it
    reads every landed file on every run). -#}
{% macro naive_events() -%}
{%- set landed_after = none -%}
{%- if is_incremental() and execute -%}
    {%- set landed_after = run_query('select max(landed_micros) from ' ~ this).columns[0].values()[0] -%}
{%- endif -%}

with

lines as (
    select
        from_json(
            value,
            'op string, project_id bigint, contract_id bigint, sign_time string, amount decimal(18, 2), op_ts string'
        ) as event,
        _metadata.file_name as source_file,
        unix_micros(_metadata.file_modification_time) as landed_micros
    from text.`{{ naive_landing() }}`
    {%- if landed_after is not none %}
        where _metadata.file_modification_time > timestamp_micros({{ landed_after }})
    {%- endif %}
)

select
    event.op,
    event.project_id,
    event.contract_id,
    to_timestamp(event.sign_time, 'yyyy-MM-dd HH:mm:ss') as sign_time,
    event.amount,
    to_timestamp(event.op_ts, 'yyyy-MM-dd HH:mm:ss.SSS') as op_ts,
    source_file,
    landed_micros
from lines
where event.op in ('+I', '+U', '-D')
{%- endmacro %}


{#- Every live contract's rank from all its events: each contract's last event by op_ts (ties
    by file), deletes dropped, then the rank function over each project (lakerank's
    fct_contract_rank.asc_rn for var rank_function). -#}
{% macro naive_rank(events) -%}
{%- set rank_function = var('rank_function') -%}

with

last_events as (
    select
        contract_id,
        max_by(struct(op, project_id, sign_time, amount), struct(op_ts, source_file)) as last_event
    from {{ events }}
    group by contract_id
),

live as (
    select
        contract_id,
        last_event.project_id,
        last_event.sign_time,
        last_event.amount
    from last_events
    where last_event.op <> '-D'
)

select
    project_id,
    contract_id,
    sign_time,
    amount,
    {{ rank_function }}() over (
        partition by project_id
        order by sign_time{% if rank_function == 'row_number' %}, contract_id{% endif %}
    ) as asc_rn
from live
{%- endmacro %}


{#- Pre-hooks of a rank table whose changelog is wanted: its previous contents become
    <model>_prev (a rename, not a copy), or an empty one on the first run. -#}
{% macro naive_keep_previous() -%}
{%- set prev = this.incorporate(path={"identifier": this.identifier ~ '_prev'}) -%}
{%- if load_relation(this) is not none -%}
    alter table {{ this }} rename to {{ prev }}
{%- else -%}
    create table {{ prev }} (
        project_id bigint, contract_id bigint, sign_time timestamp, amount decimal(18, 2), asc_rn int
    ) using parquet
{%- endif -%}
{%- endmacro %}


{#- Where the contracts' events land: LAKERANK_LANDING's `contracts` folder (the shared
    deployment's, on S3), else the home's. -#}
{% macro naive_landing() -%}
{{ env_var('LAKERANK_LANDING', env_var('LAKERANK_HOME') ~ '/landing') }}/contracts
{%- endmacro %}
