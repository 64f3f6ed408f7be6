{#- Every contract's rank agrees with the zipper version that starts at its sign time
    (positions used by contracts signed at or before it): dense_rank equals it; rank is it
    minus the ties at that time plus one; row_number lies within the ties. Checked on the
    partitions this build rewrote. -#}
{%- set fn = lakerank.rank_function() -%}

{%- if lakerank.rank_scope_is_empty() %}

select 'no slice rewritten' as nothing_to_check where false

{%- else %}

with

scope as (
    select distinct segment_start from {{ ref('int_contract_rank_scope') }}
),

fct as (
    select fct_contract_rank.*
    from {{ ref('fct_contract_rank') }} as fct_contract_rank
    left semi join scope on fct_contract_rank.segment_start = scope.segment_start
),

zipper as (
    select dim_project_rank_version.*
    from {{ ref('dim_project_rank_version') }} as dim_project_rank_version
    left semi join scope on dim_project_rank_version.segment_start = scope.segment_start
),

ties as (
    -- a window, not a grouped join: one read of the (merge-on-read) fact rows
    select
        *,
        count(*) over (partition by project_id, sign_time) as n_ties
    from fct
),

checked as (
    select
        ties.project_id,
        ties.contract_id,
        ties.asc_rn,
        zipper.base_max_rn as positions_through,
        ties.n_ties
    from ties
    left join zipper on ties.project_id = zipper.project_id and ties.sign_time = zipper.ver_start
)

select * from checked
where
    positions_through is null
{%- if fn == 'dense_rank' %}
    or asc_rn <> positions_through
{%- elif fn == 'rank' %}
    or asc_rn <> positions_through - n_ties + 1
{%- else %}
    or asc_rn > positions_through or asc_rn <= positions_through - n_ties
{%- endif %}
{%- endif %}
