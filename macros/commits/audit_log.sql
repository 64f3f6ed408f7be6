{#-
  lakerank.audit_log(relation): a table's change log, like Paimon's `$audit_log`:
  `rowkind` (+I, -U, +U, -D) first, then the table's columns, then `_commit_id` and
  `_commit_time`. Written by materializations with `changelog: true`.
-#}
{% macro audit_log(relation) -%}
  {%- set audit = api.Relation.create(schema=relation.schema, identifier=relation.identifier ~ '__audit_log', type='table') -%}
  {%- set cols = [] -%}
  {%- if execute and adapter.lakerank_table_exists(audit) -%}
    {%- for c in adapter.get_columns_in_relation(audit) -%}
      {%- if c.name not in ['rowkind', '_commit_id', '_commit_time'] -%}{%- do cols.append(c.name) -%}{%- endif -%}
    {%- endfor -%}
  {%- endif -%}
  (select rowkind, {% for c in cols %}{{ c }}, {% endfor %}_commit_id, _commit_time from {{ audit }})
{%- endmacro %}
