{#-
  Incremental data tests. When a `merge_on_read`, `pk_table` or `stream_ingest` model ran in
  this invocation, its data tests check only the rows it rewrote (the rest was checked when it was written),
  so a scheduled `dbt build` costs what it changed, not the whole history. A full refresh,
  `dbt test` on its own, or `--vars '{lakerank_full_tests: true}'` tests whole tables.
  A test whose claim needs whole groups (not partitions) opts out with
  `config(lakerank_partition_filter=false)` and always reads the whole table.
-#}
{#- `filter`: a SQL predicate over the relation's columns (alias `t`) selecting the rows
    this run wrote, e.g. `lakerank_lib.partition_filter(column, values)`. `rows`, instead:
    a query returning exactly the relation's current rows that this run wrote, cheaper to
    read than the relation (a merge-on-read model's own commit partition: the relation is a
    view over the whole base). -#}
{% macro remember_written(relation, filter=none, rows=none) -%}
  {%- do adapter.lakerank_memo_set('written:' ~ invocation_id ~ ':' ~ relation,
                                   {'filter': filter, 'rows': rows}) -%}
{%- endmacro %}


{% macro lakerank__get_where_subquery(relation) -%}
  {%- set where = config.get('where') -%}
  {%- set written = adapter.lakerank_memo_get('written:' ~ invocation_id ~ ':' ~ relation) -%}
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
