{#- pk_table: the relations and views of a table and its side tables, and their DDL. -#}


{#- The relations kept beside a pk_table. -#}
{% macro _pk_side_tables(target) -%}
  {%- set out = {} -%}
  {%- for suffix in ['audit_log', 'state_log', 'snapshots'] -%}
    {%- do out.update({suffix.split('_')[0]: api.Relation.create(
          schema=target.schema, identifier=target.identifier ~ '__' ~ suffix, type='table')}) -%}
  {%- endfor -%}
  {{ return(out) }}
{%- endmacro %}


{#- Session-local temporary views of one commit. -#}
{% macro _pk_views(target) -%}
  {%- set out = {} -%}
  {%- for name in ['source', 'input', 'stored', 'simple', 'complex', 'merged_raw', 'merged'] -%}
    {%- do out.update({name: target.identifier ~ '__lr_' ~ name}) -%}
  {%- endfor -%}
  {{ return(out) }}
{%- endmacro %}


{% macro _pk_create_tables(target, tables, layout, fingerprint, primary_key, pcols, info) -%}
  {%- if not info[target.identifier]['exists'] %}
  {% call statement('pk_create_target') -%}
    create table if not exists {{ target }} (
      {%- for c in layout.columns %}
      {{ c.name }} {{ c.type }},
      {%- endfor %}
      _bucket int
    ) using parquet
    partitioned by ({% for p in pcols %}{{ p }}, {% endfor %}_bucket)
    tblproperties ('lakerank.layout' = '{{ fingerprint }}',
                   'lakerank.primary_key' = '{{ primary_key | join(",") }}')
  {%- endcall %}
  {%- endif %}
  {%- set stored = [] -%}
  {%- for c in layout.columns %}{% do stored.append(c.name ~ ' ' ~ c.type) %}{% endfor -%}
  {%- set side_tables = [
        (tables.audit, ['rowkind string'] + stored + ['_commit_time timestamp', '_commit_id bigint'], '_commit_id'),
        (tables.state, stored + ['_live boolean', '_commit_id bigint'], '_commit_id'),
        (tables.snapshots, ['commit_time timestamp', 'commit_kind string', 'input_record_count bigint',
                            'touched_key_count bigint', 'changelog_record_count bigint', 'rewritten_partitions int',
                            'rewritten_bytes bigint', 'superseded_bytes bigint', 'snapshot_id bigint'], 'snapshot_id')] -%}
  {%- for relation, columns, partition in side_tables if not info[relation.identifier]['exists'] %}
  {% call statement('pk_create_' ~ relation.identifier.split('__')[-1]) -%}
    create table if not exists {{ relation }} ({{ columns | join(', ') }}) using parquet partitioned by ({{ partition }})
  {%- endcall %}
  {%- endfor %}
{%- endmacro %}


{#- A pk_table's (or side table's) location: from the commit's one metadata read when the
    table existed then, else asked now (the run created it). -#}
{% macro _pk_location(relation, info) -%}
  {{- info[relation.identifier]['location'] or adapter.lakerank_table_location(relation) -}}
{%- endmacro %}
