{#- pk_table: the snapshots table (one row per commit) and reads of the state log as of a commit. -#}


{#- Live rows of a pk_table as of `commit_id`, replayed from its state log. -#}
{% macro _pk_state_at(state, names, primary_key, commit_id) -%}
  (select {{ names | join(', ') }} from (
     select *, row_number() over (
       partition by {{ primary_key | join(', ') }} order by _commit_id desc) as __newest
     from {{ state }} where _commit_id <= {{ commit_id }})
   where __newest = 1 and _live)
{%- endmacro %}


{#- The commit's row of the snapshots table; the adapter fills in what the swap plan says
    (`{rewritten_partitions}`, `{rewritten_bytes}`, `{superseded_bytes}`). -#}
{% macro _pk_snapshot(tables, views, spec, commit_id, info) -%}
  {%- set rows -%}
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
      {rewritten_partitions} as rewritten_partitions,
      {rewritten_bytes} as rewritten_bytes,
      {superseded_bytes} as superseded_bytes
    from {{ views.merged }}
  {%- endset -%}
  {{ return(lakerank_lib._pk_log_partition(tables.snapshots, 'snapshot_id', commit_id, info, rows)) }}
{%- endmacro %}
