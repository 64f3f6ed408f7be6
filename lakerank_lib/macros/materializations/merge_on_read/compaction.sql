{#- Whether the changes since the base (commit `base_commit`) are due for compaction:
    `compact_commits` commits, or more than `compact_ratio` of the base's bytes once they
    pass `compact_min_bytes` (parquet's per-file overhead makes tiny tables look 100 %
    changed). -#}
{% macro _merge_on_read_needs_compaction(parts, base_commit) -%}
  {%- set deltas = lakerank_lib._merge_on_read_changes(parts['audit'], base_commit) -%}
  {%- if deltas | length >= config.get('compact_commits', 10) | int -%}{{ return(true) }}{%- endif -%}
  {%- if deltas | length == 0 -%}{{ return(false) }}{%- endif -%}
  {%- set base_bytes = adapter.lakerank_path_bytes([adapter.lakerank_table_location(parts['base'])]) -%}
  {%- set delta_bytes = adapter.lakerank_path_bytes(deltas) -%}
  {{ return(delta_bytes >= config.get('compact_min_bytes', 16777216) | int
            and delta_bytes > config.get('compact_ratio', 0.5) | float * base_bytes) }}
{%- endmacro %}


{#- The locations of an audit log's partitions after commit `base_commit`: the changes a
    merge-on-read view applies over its base. -#}
{% macro _merge_on_read_changes(audit, base_commit) -%}
  {%- set deltas = [] -%}
  {%- for spec, location in adapter.lakerank_partition_locations(audit).items() -%}
    {%- if spec.split('=')[1] | int > base_commit -%}{%- do deltas.append(location) -%}{%- endif -%}
  {%- endfor -%}
  {{ return(deltas) }}
{%- endmacro %}


{#- Write the view's rows as a new base version, point the base table at it, then the view
    at the changes after `commit_id`. Every other base version is deleted but two: the one
    this replaces and the one before it (`lakerank.previous_base` on the base table, set
    before the base moves, so a compaction killed and run again still keeps it): a
    publication (lakerank_lib's `publication` materialization) may still read them. In the
    commit protocol's terms: stage, intent (`lakerank.previous_base`), swap (relocate the
    base), record (the view and its watermark), finish (the sweep). -#}
{% macro _merge_on_read_compact(view_relation, parts, primary_key, commit_id, fingerprint) -%}
  {%- set location = lakerank_lib.stage_dir(parts['root'], 'b', commit_id) -%}
  {%- set current = adapter.lakerank_table_location(parts['base']) -%}
  {%- set previous = adapter.lakerank_get_property(parts['base'], 'lakerank.previous_base', '') -%}
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
  {% do lakerank_lib._merge_on_read_replace_view(view_relation, parts, primary_key, commit_id, commit_id, fingerprint) %}
  {% do adapter.lakerank_commit_finish(parts['base'], {'commit_id': commit_id, 'location': parts['root']},
                                       [location, current, previous]) %}
{%- endmacro %}
