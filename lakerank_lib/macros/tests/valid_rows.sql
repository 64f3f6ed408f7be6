{#- Generic test: the model's rows have no NULL in `not_null` columns and no duplicate
    `key` — one query instead of a `not_null` test per column and a `unique` test (each
    data test is a Spark job; in incremental builds it reads the rows the run wrote).
    A failing row names the problem and how many rows have it. -#}
{% test valid_rows(model, not_null=[], key=[]) %}
with

checked as (
    select * from {{ model }}
),

problems as (
    {#- One read of the model per check kind: Spark inlines a CTE at every reference, and
        the model may be a merge-on-read view (base + changes) recomputed each time. -#}
    {%- if not_null %}
    select explode(array_compact(array(
        {%- for column in not_null %}
        case when {{ column }} is null then 'null {{ column }}' end{{ ',' if not loop.last }}
        {%- endfor %}
    ))) as problem
    from checked
    union all
    {%- endif %}
    {%- if key %}
    select 'duplicate {{ key | join(", ") }}' as problem
    from checked
    group by {{ key | join(', ') }}
    having count(*) > 1
    {%- else %}
    select 'none' as problem from checked where false
    {%- endif %}
)

select
    problem,
    count(*) as n_rows
from problems
group by problem
{% endtest %}
