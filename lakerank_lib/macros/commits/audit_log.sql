{#-
  lakerank_lib.audit_log(relation): a table's change log, like Paimon's `$audit_log`:
  `rowkind` (+I, -U, +U, -D) first, then the table's columns, then `_commit_id` and
  `_commit_time`. Written by `pk_table` (per its changelog-producer) and by
  `merge_on_read` (every changed row). Only committed commits are visible.
-#}
{% macro audit_log(relation) -%}
  {%- set audit = lakerank_lib._side_table(relation, 'audit_log') -%}
  {%- set cols = [] -%}
  {%- if execute and adapter.lakerank_table_exists(audit) -%}
    {%- for c in adapter.get_columns_in_relation(audit) -%}
      {%- if c.name not in ['rowkind', '_commit_id', '_commit_time'] -%}{%- do cols.append(c.name) -%}{%- endif -%}
    {%- endfor -%}
  {%- endif -%}
  (select rowkind, {% for c in cols %}{{ c }}, {% endfor %}_commit_id, _commit_time from {{ audit }}
   {{ lakerank_lib._committed_filter(relation, '_commit_id') }})
{%- endmacro %}


{#- `<relation>__<suffix>`, a table kept beside a lakerank table. -#}
{% macro _side_table(relation, suffix) -%}
  {{ return(api.Relation.create(schema=relation.schema, identifier=relation.identifier ~ '__' ~ suffix, type='table')) }}
{%- endmacro %}


{#- `where <column> <= last recorded snapshot` for pk_tables (a dead attempt's partition is
    never read); nothing for other tables. Read when the query is compiled. -#}
{% macro _committed_filter(relation, column) -%}
  {%- set snapshot = adapter.lakerank_get_property(relation, 'lakerank.snapshot_id', '') if execute else '' -%}
  {%- if snapshot -%}where {{ column }} <= {{ snapshot }}{%- endif -%}
{%- endmacro %}
