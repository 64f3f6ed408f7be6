{#- First build or --full-refresh: the SELECT becomes the base, every row +I of the commit.
    `opened`: the commit's open record (which side tables exist). -#}
{% macro _merge_on_read_create(view_relation, existing, parts, primary_key, commit_id, fingerprint, opened) -%}
  {%- if existing is not none -%}
    {% do adapter.drop_relation(existing) %}
  {%- endif -%}
  {%- for side, state in [(parts['base'], opened['base']), (parts['audit'], opened['audit'])] -%}
    {%- if state['exists'] -%}  {#- left by a killed first build or the old state -#}
      {% call statement('drop_' ~ side.identifier) -%} drop table if exists {{ side }} {%- endcall %}
    {%- endif -%}
  {%- endfor -%}
  {#- the audit log is a managed table: a folder its drop or a killed create left behind would
      refuse its create (adapter/dbt/include/lakerank/macros/create_table_as.sql) -#}
  {% do lakerank_clear_dead_table_folder(parts['audit']) %}
  {% do adapter.lakerank_delete_path(parts['root']) %}
  {% call statement('main') -%}
    create table {{ parts['base'] }}
    using parquet
    location '{{ lakerank_lib.stage_dir(parts['root'], 'b', commit_id, opened['writer']) }}'
    as select * from ({{ sql }}) order by {{ parts['cluster_by'] | join(', ') }}
  {%- endcall %}
  {% call statement('create_audit_log') -%}
    create table {{ parts['audit'] }}
    using parquet partitioned by (_commit_id)
    as select '+I' as rowkind, base.*, current_timestamp() as _commit_time,
              cast({{ commit_id }} as bigint) as _commit_id
    from {{ parts['base'] }} as base
  {%- endcall %}
  {% do lakerank_lib._merge_on_read_replace_view(view_relation, parts, primary_key, commit_id, commit_id, fingerprint,
        adapter.lakerank_query_schema(parts['base'] | string) | map(attribute='name') | list,
        opened['view_exists'] and existing is none) %}
{%- endmacro %}
