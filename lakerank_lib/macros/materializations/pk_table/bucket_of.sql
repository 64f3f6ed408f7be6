{#- The pk_table bucket of key `columns` in a table with `buckets` buckets (option
    `bucket`; -1 or 1 = one bucket): use it to read only the buckets holding some keys. -#}
{% macro bucket_of(columns, buckets) -%}
  {%- if buckets | int > 1 -%}
    cast(pmod(hash({{ lakerank_lib._as_list(columns) | join(', ') }}), {{ buckets | int }}) as int)
  {%- else -%}
    0
  {%- endif -%}
{%- endmacro %}
