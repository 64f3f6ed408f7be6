{#- Generic test on a rank table (project_id, contract_id, sign_time, asc_rn) for the
    pipeline's rank_function: ranks start at 1 in every project and have no gaps
    (row_number: exactly 1..n; dense_rank: 1..number of distinct sign times;
    rank: the largest rank is n minus the ties at the last sign time, plus one). -#}
{% test ranks_positive_and_gapless(model) %}
{%- set fn = lakerank.rank_function() -%}
with per_project as (
    select
        project_id,
        min(asc_rn) as min_rn,
        max(asc_rn) as max_rn,
        count(*) as n,
        count(distinct asc_rn) as distinct_rn,
        count(distinct sign_time) as distinct_times
    from {{ model }}
    group by project_id
)
select * from per_project
where min_rn <> 1
{%- if fn == 'row_number' %}
    or max_rn <> n or distinct_rn <> n
{%- elif fn == 'dense_rank' %}
    or max_rn <> distinct_times or distinct_rn <> distinct_times
{%- else %}
    or max_rn > n or distinct_rn <> distinct_times
{%- endif %}
{% endtest %}
