{#- pk_table: the snapshots table (one row per commit) and reads of the state log as of a commit. -#}


{#- Live rows of a pk_table as of `commit_id`, replayed from its state log. -#}
{% macro _pk_state_at(state, names, primary_key, commit_id) -%}
  (select {{ names | join(', ') }} from (
     select *, row_number() over (
       partition by {{ primary_key | join(', ') }} order by _commit_id desc) as __newest
     from {{ state }} where _commit_id <= {{ commit_id }})
   where __newest = 1 and _live)
{%- endmacro %}


{% macro _pk_write_snapshot(tables, views, spec, plan, commit_id, info) -%}
  {%- set written = [] -%}
  {%- set superseded = [] -%}
  {%- for item in plan['replace'] -%}{%- do written.append(item[2]) -%}{%- do superseded.append(item[1]) -%}{%- endfor -%}
  {%- for item in plan['create'] -%}{%- do written.append(item[1]) -%}{%- endfor -%}
  {%- for item in plan['drop'] -%}{%- do superseded.append(item[1]) -%}{%- endfor -%}
  {% call lakerank_lib._pk_write_log_partition(tables.snapshots, 'snapshot_id', commit_id, info) -%}
    select
      current_timestamp() as commit_time,
      'APPEND' as commit_kind,
      (select count(*) from {{ views.input }}) as input_record_count,
      count_if(__pos = 0) as touched_key_count,
      {% if spec.changelog_producer == 'full-compaction' -%}
      (select count(*) from {{ tables.audit }} where _commit_id = {{ commit_id }})
      {%- else -%}
      count_if(__role = '{{ lakerank_lib._pk_changelog_role(spec.changelog_producer) }}')
      {%- endif %} as changelog_record_count,
      {{ written | length }} as rewritten_partitions,
      {{ adapter.lakerank_path_bytes(written) }} as rewritten_bytes,
      {{ adapter.lakerank_path_bytes(superseded) }} as superseded_bytes
    from {{ views.merged }}
  {%- endcall %}
{%- endmacro %}
