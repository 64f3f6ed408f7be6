{#- One incremental commit: the diff of the rows under `predicate` (or the model's `prior`
    query of them) is added to the audit log as partition `_commit_id = window.to` (unless a
    killed run already added it): the commit protocol's begin (sweep a dead attempt's
    directory), stage, swap (one metastore call: the commit point; the materialization then
    records the watermark). -#}
{% macro _merge_on_read_commit(view_relation, parts, primary_key, predicate, window, query=none, prior=none) -%}
  {%- set commit_id = window['to'] -%}
  {%- set committed = adapter.lakerank_partition_exists(parts['audit'], '_commit_id', commit_id) -%}
  {%- if not committed -%}
    {%- set cols = adapter.lakerank_query_schema(parts['base'] | string) | map(attribute='name') | list -%}
    {%- set lacking = cols | reject('in', prior['columns']) | list
                      if prior is not none and prior['columns'] is not none else [] -%}
    {%- if lacking -%}
      {%- do log(this ~ ": the declared prior rows lack " ~ lacking | join(', ') ~ "; the commit reads the view") -%}
      {%- set prior = none -%}
    {%- endif -%}
    {%- set root = adapter.lakerank_commit_begin(parts['audit'], window['from'])['root'] -%}
    {%- set location = lakerank_lib.stage_dir(root, 'c', commit_id) -%}
    {% call statement('main') -%}
      insert overwrite directory '{{ location }}' using parquet
      {{ lakerank_lib._audit_diff(
          '(' ~ prior['query'] ~ ')' if prior else lakerank_lib.merge_on_read_rows(view_relation, predicate, cols),
          '(' ~ (query or sql) ~ ')', cols, primary_key, commit_id, with_commit_id=false) }}
    {%- endcall %}
    {% do adapter.lakerank_write_fault(location, lakerank_lib._write_fault()) %}
    {% do lakerank_lib.fault_point('written') %}
    {% do adapter.lakerank_commit_swap(parts['audit'], {'commit_id': commit_id,
                                                        'create': [['_commit_id=' ~ commit_id, location]]}) %}
    {% do lakerank_lib._progress('commit ' ~ commit_id ~ ': '
          ~ '%.1f' | format(adapter.lakerank_path_bytes([location]) / 1024) ~ ' KiB of changed rows') %}
  {%- else -%}
    {% call statement('main') -%}
      select 'commit {{ commit_id }} already in the audit log' as status
    {%- endcall %}
  {%- endif -%}
{%- endmacro %}
