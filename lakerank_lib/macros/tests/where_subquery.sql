{#-
  Incremental data tests. When a `merge_on_read`, `pk_table` or `stream_ingest` model ran in
  this invocation, its data tests check only the rows it rewrote (the rest was checked when it was written),
  so a scheduled `dbt build` costs what it changed, not the whole history. A full refresh,
  `dbt test` on its own, or `--vars '{lakerank_full_tests: true}'` tests whole tables.
  A test whose claim needs whole groups (not partitions) opts out with
  `config(lakerank_partition_filter=false)` and always reads the whole table.
-#}
{% macro lakerank__get_where_subquery(relation) -%}
  {%- set where = config.get('where') -%}
  {%- set written = adapter.lakerank_written(relation) if execute else none -%}
  {%- if written is none and execute -%}
    {%- set written = lakerank_lib._audit_log_written(relation) -%}
  {%- endif -%}
  {%- set source = relation -%}
  {%- set filters = [] -%}
  {%- if where -%}{%- do filters.append('(' ~ where ~ ')') -%}{%- endif -%}
  {%- if written is not none and not var('lakerank_full_tests', false)
        and config.get('lakerank_partition_filter', true) -%}
    {%- if written['rows'] -%}
      {%- set source = '(' ~ written['rows'] ~ ')' -%}
    {%- else -%}
      {%- do filters.append('(' ~ written['filter'] ~ ')') -%}
    {%- endif -%}
  {%- endif -%}
  {%- if filters or source is string -%}
    {%- do return("(select * from " ~ source ~ " as t"
                  ~ (" where " ~ filters | join(' and ') if filters else "") ~ ") dbt_subquery") -%}
  {%- else -%}
    {%- do return(relation) -%}
  {%- endif -%}
{%- endmacro %}
