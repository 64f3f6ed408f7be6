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
    {%- for column in not_null %}
    select 'null {{ column }}' as problem from checked where {{ column }} is null
    union all
    {%- endfor %}
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
