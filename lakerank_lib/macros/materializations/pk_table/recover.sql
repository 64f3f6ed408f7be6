{#- pk_table: crash recovery at the start of a run. -#}


{#- Bring the table back to its last recorded commit: finish a commit whose record was
    written, roll back one that died before, and drop log partitions of a dead attempt.
    Returns the last recorded snapshot id. -#}
{% macro pk_recover(target, tables, info) -%}
  {%- set snapshot_id = info[target.identifier]['properties'].get('lakerank.snapshot_id', '0') | int -%}
  {%- set intent = adapter.lakerank_read_intent(target) -%}
  {%- if intent is not none -%}
    {%- if intent['commit_id'] <= snapshot_id -%}
      {% do adapter.lakerank_finish_swap(target, intent) %}
    {%- else -%}
      {{ log("pk_table " ~ target ~ ": rolling back unfinished commit " ~ intent['commit_id'], info=true) }}
      {% do adapter.lakerank_rollback_swap(target, intent) %}
      {% do adapter.lakerank_clear_intent(target) %}
    {%- endif -%}
  {%- endif -%}
  {#- A run killed after writing its logs left partitions of the commit it never recorded. -#}
  {%- for rel, col in [(tables.audit, '_commit_id'), (tables.state, '_commit_id'), (tables.snapshots, 'snapshot_id')]
        if info[rel.identifier]['exists'] and adapter.lakerank_partition_exists(rel, col, snapshot_id + 1) -%}
    {% call statement('pk_drop_dead_' ~ col) -%}
      alter table {{ rel }} drop if exists partition ({{ col }} = {{ snapshot_id + 1 }})
    {%- endcall %}
  {%- endfor -%}
  {{ return(snapshot_id) }}
{%- endmacro %}
