{#- Write the view's rows as a new base version, point the base table at it, then the view
    at the changes after `commit_id`. Every other base version is deleted but two: the one
    this replaces and the one before it (`lakerank.previous_base` on the base table, set
    before the base moves, so a compaction killed and run again still keeps it): a
    publication (lakerank_lib's `publication` materialization) may still read them. `opened`:
    the commit's open record (the base's location and properties before it). In the
    commit protocol's terms: stage, intent (`lakerank.previous_base`), swap (relocate the
    base), record (the view and its watermark), finish (the sweep). -#}
{% macro _merge_on_read_compact(view_relation, parts, primary_key, commit_id, fingerprint, opened) -%}
  {%- set location = lakerank_lib.stage_dir(parts['root'], 'b', commit_id, opened['writer']) -%}
  {%- set current = opened['base']['location'] -%}
  {%- set previous = opened['base']['properties'].get('lakerank.previous_base', '') -%}
  {% call statement('compact_base') -%}
    insert overwrite directory '{{ location }}' using parquet
    select * from {{ view_relation }} order by {{ parts['cluster_by'] | join(', ') }}
  {%- endcall %}
  {% do adapter.lakerank_write_fault(location, lakerank_lib._write_fault()) %}
  {% call statement('remember_base') -%}
    alter table {{ parts['base'] }} set tblproperties ('lakerank.previous_base' = '{{ current }}')
  {%- endcall %}
  {% do adapter.lakerank_commit_swap(parts['base'], {'commit_id': commit_id, 'relocate': [current, location]}) %}
  {% do lakerank_lib.fault_point('compacted') %}
  {% do lakerank_lib._progress('commit ' ~ commit_id ~ ': compacted into a new base') %}
  {% do lakerank_lib._merge_on_read_replace_view(view_relation, parts, primary_key, commit_id, commit_id, fingerprint,
                                                  opened['base_columns'] | map(attribute='name') | list, true) %}
  {% do adapter.lakerank_commit_finish(parts['base'], {'commit_id': commit_id, 'location': parts['root']},
                                       [location, current, previous]) %}
{%- endmacro %}
