{#- Generic test on a rank table (project_id, contract_id, sign_time, asc_rn) for the
    pipeline's rank_function: ranks start at 1 in every project and have no gaps
    (row_number: exactly 1..n; dense_rank: 1..number of distinct sign times;
    rank: the largest rank is at most n and the distinct ranks equal the distinct sign
    times). These are whole-project invariants, so the test always reads the whole table:
    it opts out of the incremental partition filter (lakerank_partition_filter=false),
    which would otherwise hand it a slice of each project and fail correct data. For
    per-build checks of a partitioned rank table test slices instead (see
    tests/dbt/assert_fct_ranks_exact_per_slice.sql). -#}
{% test ranks_positive_and_gapless(model) %}
{{ config(lakerank_partition_filter=false) }}
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
