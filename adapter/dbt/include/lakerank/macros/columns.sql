{#- Column changes on lakerank's tables: comments (persist_docs) and on_schema_change. -#}

{#- A column's comment (persist_docs columns) on a table of any format; a view's column
    comments are part of its definition (dbt-spark's create_view_as). -#}
{% macro lakerank__alter_column_comment(relation, column_dict) -%}
  {%- if relation.is_view -%}{{ return('') }}{%- endif -%}
  {%- for column_name in column_dict -%}
    {%- set name = adapter.quote(column_name) if column_dict[column_name]['quote'] else column_name -%}
    {%- set comment = column_dict[column_name]['description'] | replace('\\', '\\\\') | replace("'", "\\'") -%}
    {% call statement('comment_' ~ loop.index) -%}
      alter table {{ relation }} {{ 'alter' if relation.is_iceberg else 'change' }} column {{ name }} comment '{{ comment }}'
    {%- endcall %}
  {%- endfor -%}
{%- endmacro %}


{#- on_schema_change: columns added with ALTER TABLE; a removed one (sync_all_columns) on a
    table of a plain file format, which cannot drop columns, by rewriting the table with the
    remaining and new columns (adapter.lakerank_rewrite_table, one swap for readers). -#}
{% macro lakerank__alter_relation_add_remove_columns(relation, add_columns, remove_columns) -%}
  {%- if remove_columns and not lakerank__merges_itself(relation) -%}
    {%- set removed = remove_columns | map(attribute='name') | map('lower') | list -%}
    {%- set kept = [] -%}
    {%- for column in adapter.get_columns_in_relation(relation) if column.name | lower not in removed -%}
      {%- do kept.append(column.quoted) -%}
    {%- endfor -%}
    {%- for column in add_columns or [] -%}
      {%- do kept.append('cast(null as ' ~ column.data_type ~ ') as ' ~ column.quoted) -%}
    {%- endfor -%}
    {% do adapter.lakerank_rewrite_table(relation, 'select ' ~ kept | join(', ') ~ ' from ' ~ relation,
                                         replace_schema=true) %}
  {%- else -%}
    {{ spark__alter_relation_add_remove_columns(relation, add_columns, remove_columns) }}
  {%- endif -%}
{%- endmacro %}


{#- A relation's columns as dbt's Column objects, as dbt's global `get_columns_in_relation`
    promises (dbt-spark's returns the raw `describe extended` rows, so dbt's snapshot of
    `hard_deletes: new_record` found no stored column and wrote its deletion records' values
    as NULL). -#}
{% macro lakerank__get_columns_in_relation(relation) -%}
  {{ return(adapter.get_columns_in_relation(relation)) }}
{%- endmacro %}
