{#- Generic test: the model's rows have no NULL in `not_null` columns, no duplicate `key`,
    and in each column of `accepted` (a mapping of column to its allowed values) only those
    values — one query instead of a `not_null` test per column, a `unique` test and an
    `accepted_values` test (each data test is a Spark job; in incremental builds it reads the
    rows the run wrote). A failing row names the problem and how many rows have it.
    `after` (a `ref`, read by nothing): the test waits for that model too, so in `dbt build`
    it gates only what is downstream of both (dbt runs a model after an upstream test only
    when it descends from every model the test depends on): a check of an intermediate model
    with `after` set to a mart runs beside the marts' tests instead of holding up the next
    model, and still gates what reads the marts. -#}
{% test valid_rows(model, not_null=[], key=[], accepted={}, after=none) %}
with

checked as (
    select * from {{ model }}
),

problems as (
    {#- One read of the model per check kind: Spark inlines a CTE at every reference, and
        the model may be a merge-on-read view (base + changes) recomputed each time. -#}
    {%- for column, values in accepted.items() %}
    select 'unexpected {{ column }}' as problem
    from checked
    where {{ column }} is not null and {{ column }} not in (
        {%- for value in values %}'{{ value }}'{{ ', ' if not loop.last }}{% endfor %})
    union all
    {%- endfor %}
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
