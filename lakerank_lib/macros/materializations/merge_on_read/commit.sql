{#- One incremental commit: the diff of the rows under the declared rewrite's predicate (or
    its `prior` query of them) is staged and added to the audit log as partition
    `_commit_id = window.to` (unless a killed run already added it): the commit protocol's
    stage and swap (one metastore call: the commit point; the open already recovered, and
    the materialization then records the watermark). `opened`: the commit's open record.
    Returns the swap's {'kib', 'compact'} (compact: the changes since the base are due). -#}
{% macro _merge_on_read_commit(view_relation, parts, primary_key, opened, query, base_commit) -%}
  {%- set commit_id = opened['window']['to'] -%}
  {%- if opened['committed'] -%}
    {% call statement('main') -%}
      select 'commit {{ commit_id }} already in the audit log' as status
    {%- endcall %}
    {{ return(lakerank_lib._merge_on_read_swap(view_relation, parts, commit_id, '', base_commit)) }}
  {%- endif -%}
  {%- set cols = opened['base_columns'] | map(attribute='name') | list -%}
  {%- set prior = opened['rewrite']['prior'] -%}
  {%- set lacking = cols | reject('in', prior['columns']) | list
                    if prior is not none and prior['columns'] is not none else [] -%}
  {%- if lacking -%}
    {%- do log(this ~ ": the declared prior rows lack " ~ lacking | join(', ') ~ "; the commit reads the view") -%}
    {%- set prior = none -%}
  {%- endif -%}
  {%- set location = lakerank_lib.stage_dir(opened['audit']['location'], 'c', commit_id, opened['writer']) -%}
  {% call statement('main') -%}
    insert overwrite directory '{{ location }}' using parquet
    {{ lakerank_lib._audit_diff(
        '(' ~ prior['query'] ~ ')' if prior
          else lakerank_lib.merge_on_read_rows(view_relation, opened['rewrite']['predicate'], cols),
        '(' ~ (query or sql) ~ ')', cols, primary_key, commit_id, with_commit_id=false) }}
  {%- endcall %}
  {% do lakerank_lib.fault_point('written') %}
  {%- set swapped = lakerank_lib._merge_on_read_swap(view_relation, parts, commit_id, location, base_commit) -%}
  {% do lakerank_lib._progress('commit ' ~ commit_id ~ ': ' ~ '%.1f' | format(swapped['kib']) ~ ' KiB of changed rows') %}
  {{ return(swapped) }}
{%- endmacro %}


{#- Phase two, swap (dbt/adapters/lakerank/records.py): the staged `location` becomes the
    audit log's partition (nothing to swap when `location` is '': a killed run did it), its
    data tests read that partition's after-images, and the answer says whether the changes
    since the base are due for compaction: `compact_commits` commits, or more than
    `compact_ratio` of the base's bytes once they pass `compact_min_bytes` (parquet's
    per-file overhead makes tiny tables look 100 % changed). -#}
{% macro _merge_on_read_swap(view_relation, parts, commit_id, location, base_commit) -%}
  {{ return(adapter.lakerank_merge_on_read_swap(view_relation, commit_id, location, lakerank_lib._write_fault(),
        base_commit, {'commits': config.get('compact_commits', 10), 'ratio': config.get('compact_ratio', 0.5),
                      'min_bytes': config.get('compact_min_bytes', 16777216)},
        lakerank_lib._merge_on_read_committed_rows(parts, commit_id))) }}
{%- endmacro %}
