{#-
  swap_partitions — lakerank's incremental materialization for plain parquet tables.

  The model's SELECT returns the complete new contents of the partitions it declared
  with `lakerank_lib.declare_partitions([...])` (a declared partition with no rows becomes
  empty). One run is one commit:
    1. the new partitions are written to a fresh directory (never over live data);
    2. with `changelog: true` and a `primary_key`, the row-level diff against the
       current contents is appended to `<model>__audit_log` as partition `_commit_id`
       (written once: a rerun of the same commit keeps the first diff);
    3. the declared partitions are pointed at their new directories in metastore
       transactions (alter replaced, create new, drop emptied) — a reader sees each
       partition either old or new, never half-written;
    4. superseded directories are deleted, and the commit id is recorded as the table
     property `lakerank.commit_id` (the model's watermark).
  A run killed anywhere is repaired by running again: the SELECT recomputes the same
  contents from the same pending window, and steps 2-4 are idempotent.

  Commit source (required): the model's SQL reads it with lakerank_lib.pending_rows(ref(...))
  or calls lakerank_lib.commit_window(ref(...)) first.
  Config: partition_by (one column),
  primary_key (list, for the changelog), changelog (bool), state_fingerprint (settings the
  table's state depends on; a run with other settings fails unless --full-refresh).
-#}
{% materialization swap_partitions, default %}
  {%- set target_relation = this.incorporate(type='table') -%}
  {%- set existing = load_cached_relation(this) -%}
  {%- set partition_by = config.require('partition_by') -%}
  {%- set primary_key = config.get('primary_key', []) -%}
  {%- set with_changelog = config.get('changelog', false) -%}
  {%- set window = lakerank_lib.required_commit_window('swap_partitions') -%}
  {%- set full_refresh = should_full_refresh() -%}
  {%- set audit_relation = api.Relation.create(schema=this.schema, identifier=this.identifier ~ '__audit_log', type='table') -%}

  {%- set fingerprint = config.get('state_fingerprint') -%}
  {%- if existing is not none and not full_refresh -%}
    {% do lakerank_lib.check_fingerprint(target_relation, fingerprint) %}
  {%- endif -%}

  {{ run_hooks(pre_hooks) }}

  {%- if existing is not none and not window['pending'] and not full_refresh -%}
    {% do lakerank_lib.commit_nothing(target_relation) %}
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
    {%- set attempt = lakerank_lib.commit_attempt(commit_id) -%}
    {% do lakerank_lib.drop_leftover(stage_relation) %}
    {% call statement('main') -%}
      create table {{ stage_relation }}
      using parquet partitioned by ({{ partition_by }})
      location '{{ root }}/_v/c{{ attempt }}'
      as {{ sql }}
    {%- endcall %}
    {%- set declared = adapter.lakerank_memo_get('partitions:' ~ invocation_id ~ ':' ~ this) -%}
    {%- if declared is none -%}
      {{ exceptions.raise_compiler_error("swap_partitions model " ~ this ~ " must call lakerank_lib.declare_partitions([...])") }}
    {%- endif -%}
    {%- if with_changelog -%}
      {% do lakerank_lib.write_audit_commit(target_relation, audit_relation, stage_relation, primary_key, partition_by, declared, commit_id, attempt) %}
    {%- endif -%}
    {% do adapter.lakerank_swap_partitions(target_relation, stage_relation, partition_by, declared) %}
    {% call statement('drop_stage_after') -%} drop table if exists {{ stage_relation }} {%- endcall %}
    {% do lakerank_lib.record_commit(target_relation, commit_id, fingerprint) %}
    {% do lakerank_lib.remember_written(target_relation, 'true' if full_refresh else lakerank_lib.partition_filter(partition_by, declared)) %}
  {%- endif -%}

  {{ run_hooks(post_hooks) }}
  {% do persist_docs(target_relation, model) %}
  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
