{#- pk_table: crash recovery at the start of a run. -#}


{#- Bring the table back to its last recorded commit (the commit protocol's recovery,
    adapter.lakerank_commit_begin: finish a commit whose record was written, roll back one
    that died before, drop log partitions and version directories of a dead attempt).
    Returns the last recorded snapshot id. -#}
{% macro _pk_recover(target, tables, info) -%}
  {%- set snapshot_id = info[target.identifier]['properties'].get('lakerank.snapshot_id', '0') | int -%}
  {%- set logs = [] -%}
  {%- for rel, col in [(tables.audit, '_commit_id'), (tables.state, '_commit_id'), (tables.snapshots, 'snapshot_id')]
        if info[rel.identifier]['exists'] -%}
    {%- do logs.append([rel, col]) -%}
  {%- endfor -%}
  {%- set done = adapter.lakerank_commit_begin(target, snapshot_id, logs, lakerank_lib._pk_location(target, info))['done'] -%}
  {%- if done -%}{{ log(done, info=true) }}{%- endif -%}
  {{ return(snapshot_id) }}
{%- endmacro %}
