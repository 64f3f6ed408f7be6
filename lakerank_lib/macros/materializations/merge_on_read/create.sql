{#- First build or --full-refresh: the SELECT becomes the base, every row +I of the commit. -#}
{% macro _merge_on_read_create(view_relation, existing, parts, primary_key, commit_id, fingerprint) -%}
  {%- if existing is not none -%}
    {% do adapter.drop_relation(existing) %}
  {%- endif -%}
  {%- for side in [parts['base'], parts['audit']] -%}
    {%- if adapter.lakerank_table_exists(side) -%}  {#- left by a killed first build or the old state -#}
      {% call statement('drop_' ~ side.identifier) -%} drop table if exists {{ side }} {%- endcall %}
    {%- endif -%}
  {%- endfor -%}
  {% do adapter.lakerank_delete_path(parts['root']) %}
  {% call statement('main') -%}
    create table {{ parts['base'] }}
    using parquet
    location '{{ lakerank_lib.stage_dir(parts['root'], 'b', commit_id) }}'
    as select * from ({{ sql }}) order by {{ parts['cluster_by'] | join(', ') }}
  {%- endcall %}
  {% call statement('create_audit_log') -%}
    create table {{ parts['audit'] }}
    using parquet partitioned by (_commit_id)
    as select '+I' as rowkind, base.*, current_timestamp() as _commit_time,
              cast({{ commit_id }} as bigint) as _commit_id
    from {{ parts['base'] }} as base
  {%- endcall %}
  {% do lakerank_lib._merge_on_read_replace_view(view_relation, parts, primary_key, commit_id, commit_id, fingerprint) %}
{%- endmacro %}
