{#- `dbt snapshot` on lakerank: dbt-spark's snapshot, on every file format. On a table of a
    plain file format (parquet by default) a run writes the snapshot's next version (every
    row, the changed ones closed, the new ones added) and swaps it in with one metastore call
    (adapter.lakerank_rewrite_table): readers, and a run killed at any point, see the last
    snapshot whole. On Delta, Iceberg and Hudi it is dbt-spark's MERGE. -#}
{% materialization snapshot, adapter='lakerank' %}
  {%- set target_table = model.get('alias', model.get('name')) -%}
  {%- set strategy_name = config.get('strategy') -%}
  {%- set grant_config = config.get('grants') -%}
  {% set target_relation_exists, target_relation = get_or_create_relation(
          database=none, schema=model.schema, identifier=target_table, type='table') -%}
  {% if not adapter.check_schema_exists(model.database, model.schema) %}
    {% do create_schema(model.schema) %}
  {% endif %}
  {%- if not target_relation.is_table -%}
    {% do exceptions.relation_wrong_type(target_relation, 'table') %}
  {%- endif -%}

  {{ run_hooks(pre_hooks, inside_transaction=False) }}
  {{ run_hooks(pre_hooks, inside_transaction=True) }}

  {% set strategy_macro = strategy_dispatch(strategy_name) %}
  {% set strategy = strategy_macro(model, "snapshotted_data", "source_data", model['config'], target_relation_exists) %}

  {% if not target_relation_exists %}
    {% call statement('main') %}
      {{ create_table_as(False, target_relation, build_snapshot_table(strategy, model['compiled_code'])) }}
    {% endcall %}
  {% else %}
    {% set columns = config.get("snapshot_table_column_names") or get_snapshot_table_column_names() %}
    {{ adapter.valid_snapshot_target(target_relation, columns) }}
    {% set staging_table = spark_build_snapshot_staging_table(strategy, sql, target_relation) %}
    {% set missing_columns = adapter.get_missing_columns(staging_table, target_relation)
                             | rejectattr('name', 'in', ['dbt_change_type', 'DBT_CHANGE_TYPE', 'dbt_unique_key', 'DBT_UNIQUE_KEY'])
                             | list %}
    {% do create_columns(target_relation, missing_columns) %}
    {% if lakerank__merges_itself(target_relation) %}
      {% set insert_cols = [] %}
      {% for column in adapter.get_columns_in_relation(staging_table)
                        | rejectattr('name', 'in', ['dbt_change_type', 'DBT_CHANGE_TYPE', 'dbt_unique_key', 'DBT_UNIQUE_KEY']) %}
        {% do insert_cols.append(adapter.quote(column.name)) %}
      {% endfor %}
      {% call statement('main') %}
        {{ snapshot_merge_sql(target=target_relation, source=staging_table, insert_cols=insert_cols) }}
      {% endcall %}
    {% else %}
      {% do adapter.lakerank_rewrite_table(target_relation, lakerank__snapshot_rows(target_relation, staging_table, columns)) %}
      {% call statement('main') %} select 'snapshot: rewritten' as status {% endcall %}
    {% endif %}
  {% endif %}

  {% set should_revoke = should_revoke(target_relation_exists, full_refresh_mode) %}
  {% do apply_grants(target_relation, grant_config, should_revoke) %}
  {% do persist_docs(target_relation, model) %}
  {{ run_hooks(post_hooks, inside_transaction=True) }}
  {{ adapter.commit() }}
  {% if staging_table is defined %}
    {% do post_snapshot(staging_table) %}
  {% endif %}
  {{ run_hooks(post_hooks, inside_transaction=False) }}
  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}


{#- A snapshot's next version, dbt's snapshot MERGE as rows: every stored row, a current one
    the staging table updates or deletes closed at its `dbt_valid_to`, then the staging
    table's insertions that are not stored yet. -#}
{% macro lakerank__snapshot_rows(target, staging, columns) -%}
  {%- set scd_id, valid_to = columns.dbt_scd_id, columns.dbt_valid_to -%}
  {%- set current = 'DBT_INTERNAL_DEST.' ~ valid_to ~ ' is null' -%}
  {%- if config.get('dbt_valid_to_current') -%}
    {%- set current = '(' ~ current ~ ' or DBT_INTERNAL_DEST.' ~ valid_to ~ ' = ' ~ config.get('dbt_valid_to_current') ~ ')' -%}
  {%- endif -%}
  select
  {%- for column in adapter.get_columns_in_relation(target) %}
    {% if column.name | lower == valid_to | lower -%}
    coalesce(DBT_INTERNAL_SOURCE.`__lakerank_valid_to`, DBT_INTERNAL_DEST.{{ column.quoted }}) as {{ column.quoted }}
    {%- else -%}DBT_INTERNAL_DEST.{{ column.quoted }}{%- endif -%}{{ ',' if not loop.last }}
  {%- endfor %}
  from {{ target }} as DBT_INTERNAL_DEST
  left join (
    select {{ scd_id }} as `__lakerank_scd_id`, max({{ valid_to }}) as `__lakerank_valid_to`
    from {{ staging }} where dbt_change_type in ('update', 'delete') group by {{ scd_id }}
  ) as DBT_INTERNAL_SOURCE
    on DBT_INTERNAL_SOURCE.`__lakerank_scd_id` = DBT_INTERNAL_DEST.{{ scd_id }} and {{ current }}
  union all
  {{ lakerank__select_target_columns(staging, target, 'DBT_INTERNAL_SOURCE') }}
  left anti join {{ target }} as DBT_INTERNAL_DEST
    on DBT_INTERNAL_SOURCE.{{ scd_id }} = DBT_INTERNAL_DEST.{{ scd_id }}
  where DBT_INTERNAL_SOURCE.dbt_change_type = 'insert'
{%- endmacro %}
