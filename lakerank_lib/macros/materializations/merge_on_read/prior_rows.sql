{#-
  The model's own rows as they stand before this commit, restricted to `partitions`
  (values of the partition column) or to the rows matching `predicate` (a SQL predicate,
  alias `t`, as a merge_on_read model declares it). On the first run or --full-refresh
  the table is treated as empty: an empty select typed from the model's YAML `data_type`s.
-#}
{% macro prior_rows(partition_column=none, partitions=none, predicate=none) -%}
  {%- set existing = load_cached_relation(this) if execute else none -%}
  {%- if existing is none or should_full_refresh() -%}
    (select
    {%- for name, col in model.columns.items() %}
      cast(null as {{ col.data_type or 'string' }}) as {{ name }}{{ ',' if not loop.last }}
    {%- endfor %}
     where false)
  {%- elif predicate is not none -%}
    {{ lakerank_lib.merge_on_read_rows(this, predicate) }}
  {%- elif partition_column is not none -%}
    (select * from {{ this }}
     where {{ lakerank_lib._partition_filter(partition_column, partitions) }})
  {%- else -%}
    {{ this }}
  {%- endif -%}
{%- endmacro %}


{#- `col in (...)` over literal partition values, or `false` for an empty list
    (literals let Spark prune partitions statically). -#}
{% macro _partition_filter(column, values) -%}
  {%- if values | length == 0 -%} false
  {%- else -%} {{ column }} in ({% for v in values %}'{{ v }}'{{ ', ' if not loop.last }}{% endfor %})
  {%- endif -%}
{%- endmacro %}


{#- Run `query` (one column) at compile time and return its values as strings. -#}
{% macro query_values(query) -%}
  {%- if not execute -%}{{ return([]) }}{%- endif -%}
  {%- set result = run_query(query) -%}
  {{ return(result.columns[0].values() | map('string') | list) }}
{%- endmacro %}
