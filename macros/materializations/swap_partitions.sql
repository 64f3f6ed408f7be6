{#-
  swap_partitions — lakerank's incremental materialization for plain parquet tables.

  The model's SELECT returns the complete new contents of the partitions it declared
  with `lakerank.declare_partitions([...])` (a declared partition with no rows becomes
  empty). One run is one commit:
    1. the new partitions are written to a fresh directory (never over live data);
    2. with `changelog: true` and a `primary_key`, the row-level diff against the
       current contents is appended to `<model>__audit_log` as partition `_commit_id`
       (written once: a rerun of the same commit keeps the first diff);
    3. each declared partition is pointed at its new directory with one metastore
       call (ADD / SET LOCATION / DROP) — readers see a partition either old or new;
    4. the commit is recorded in `lakerank_commits`; superseded directories are deleted.
  A run killed anywhere is repaired by running again: the SELECT recomputes the same
  contents from the same pending window, and steps 2-4 are idempotent.

  Config: partition_by (one column), commit_source (model whose commits drive this one),
  primary_key (list, for the changelog), changelog (bool).
-#}
{% materialization swap_partitions, default %}
  {%- set target_relation = this.incorporate(type='table') -%}
  {%- set existing = load_cached_relation(this) -%}
  {%- set partition_by = config.require('partition_by') -%}
  {%- set primary_key = config.get('primary_key', []) -%}
  {%- set with_changelog = config.get('changelog', false) -%}
  {%- set window = lakerank.commit_window() -%}
  {%- set full_refresh = should_full_refresh() -%}
  {%- set audit_relation = api.Relation.create(schema=this.schema, identifier=this.identifier ~ '__audit_log', type='table') -%}

  {{ run_hooks(pre_hooks) }}

  {%- if existing is not none and not window['pending'] and not full_refresh -%}
    {% call statement('main') -%}
      select 'no pending commits' as status
    {%- endcall %}
  {%- else -%}
    {%- set commit_id = window['to'] -%}
    {%- if full_refresh and existing is not none -%}
      {% do adapter.drop_relation(existing) %}
      {% do adapter.drop_relation(audit_relation) %}
      {%- set existing = none -%}
    {%- endif -%}
    {%- set stage_relation = api.Relation.create(schema=this.schema, identifier=this.identifier ~ '__stage', type='table') -%}
    {%- if existing is none -%}
      {% call statement('create_target') -%}
        create table if not exists {{ target_relation }}
        using parquet partitioned by ({{ partition_by }})
        as select * from ({{ sql }}) where false
      {%- endcall %}
    {%- endif -%}
    {%- set root = adapter.lakerank_table_location(target_relation) -%}
    {%- set attempt = commit_id ~ '_' ~ invocation_id[:8] -%}
    {% call statement('drop_stage') -%} drop table if exists {{ stage_relation }} {%- endcall %}
    {% call statement('main') -%}
      create table {{ stage_relation }}
      using parquet partitioned by ({{ partition_by }})
      location '{{ root }}/_v/c{{ attempt }}'
      as {{ sql }}
    {%- endcall %}
    {%- set declared = adapter.lakerank_memo_get('partitions:' ~ invocation_id ~ ':' ~ this) -%}
    {%- if declared is none -%}
      {{ exceptions.raise_compiler_error("swap_partitions model " ~ this ~ " must call lakerank.declare_partitions([...])") }}
    {%- endif -%}
    {%- set new_locs = adapter.lakerank_partition_locations(stage_relation) -%}
    {%- set old_locs = adapter.lakerank_partition_locations(target_relation) -%}
    {%- set declared_keys = [] -%}
    {%- for v in declared -%}{%- do declared_keys.append(partition_by ~ '=' ~ v) -%}{%- endfor -%}
    {%- for key in new_locs -%}
      {%- if key not in declared_keys -%}
        {{ exceptions.raise_compiler_error("swap_partitions model " ~ this ~ " wrote undeclared partition " ~ key) }}
      {%- endif -%}
    {%- endfor -%}

    {%- if with_changelog -%}
      {% do lakerank.write_audit_commit(target_relation, audit_relation, stage_relation, primary_key, partition_by, declared, commit_id, attempt) %}
    {%- endif -%}

    {% do lakerank.swap_partition_locations(target_relation, partition_by, declared, new_locs, old_locs) %}
    {% call statement('drop_stage_after') -%} drop table if exists {{ stage_relation }} {%- endcall %}
    {% do lakerank.record_commit(this.identifier, commit_id, declared | length ~ ' partitions') %}
    {%- for key in declared_keys -%}
      {%- if key in old_locs and '/_v/c' in old_locs[key] and old_locs[key] != new_locs.get(key) -%}
        {% do adapter.lakerank_delete_path(old_locs[key]) %}
      {%- endif -%}
    {%- endfor -%}
  {%- endif -%}

  {{ run_hooks(post_hooks) }}
  {% do persist_docs(target_relation, model) %}
  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}


{#- Point each declared partition at its new directory: ADD new ones in one statement,
    SET LOCATION on replaced ones, DROP the ones that became empty. -#}
{% macro swap_partition_locations(relation, partition_by, declared, new_locs, old_locs) -%}
  {%- set adds = [] -%}{%- set drops = [] -%}
  {%- for v in declared -%}
    {%- set key = partition_by ~ '=' ~ v -%}
    {%- if key in new_locs and key in old_locs -%}
      {% call statement('set_location') -%}
        alter table {{ relation }} partition ({{ partition_by }} = '{{ v }}') set location '{{ new_locs[key] }}'
      {%- endcall %}
    {%- elif key in new_locs -%}
      {%- do adds.append("partition (" ~ partition_by ~ " = '" ~ v ~ "') location '" ~ new_locs[key] ~ "'") -%}
    {%- elif key in old_locs -%}
      {%- do drops.append("partition (" ~ partition_by ~ " = '" ~ v ~ "')") -%}
    {%- endif -%}
  {%- endfor -%}
  {%- if adds -%}
    {% call statement('add_partitions') -%}
      alter table {{ relation }} add if not exists {{ adds | join(' ') }}
    {%- endcall %}
  {%- endif -%}
  {%- if drops -%}
    {% call statement('drop_partitions') -%}
      alter table {{ relation }} drop if exists {{ drops | join(', ') }}
    {%- endcall %}
  {%- endif -%}
{%- endmacro %}
