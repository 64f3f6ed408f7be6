{#-
  Incremental data tests. When a `swap_partitions` model ran in this invocation, its data
  tests check only the partitions it rewrote (the rest was checked when it was written),
  so a scheduled `dbt build` costs what it changed, not the whole history. A full refresh,
  `dbt test` on its own, or `--vars '{lakerank_full_tests: true}'` tests whole tables.
  A test whose claim needs whole groups (not partitions) opts out with
  `config(lakerank_partition_filter=false)` and always reads the whole table.
-#}
{% macro remember_written(relation, partition_by, values) -%}
  {%- do adapter.lakerank_memo_set('written:' ~ invocation_id ~ ':' ~ relation,
                                   {'column': partition_by, 'values': values}) -%}
{%- endmacro %}


{% macro lakerank__get_where_subquery(relation) -%}
  {%- set where = config.get('where') -%}
  {%- set written = adapter.lakerank_memo_get('written:' ~ invocation_id ~ ':' ~ relation) -%}
  {%- set filters = [] -%}
  {%- if where -%}{%- do filters.append('(' ~ where ~ ')') -%}{%- endif -%}
  {%- if written is not none and not var('lakerank_full_tests', false)
        and config.get('lakerank_partition_filter', true) -%}
    {%- do filters.append(lakerank.partition_filter(written['column'], written['values'])) -%}
  {%- endif -%}
  {%- if filters -%}
    {%- do return("(select * from " ~ relation ~ " where " ~ filters | join(' and ') ~ ") dbt_subquery") -%}
  {%- else -%}
    {%- do return(relation) -%}
  {%- endif -%}
{%- endmacro %}
