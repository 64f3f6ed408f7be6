{#-
  pk_table — Paimon's primary-key table on plain parquet. One `dbt run` of the model is one
  commit; the model's SELECT is the commit's input. Reference: lakerank_lib/docs/pk_table.md.
  Its steps, one file each beside this one (the way dbt-spark splits `incremental`):
  validate.sql (columns vs config), evolve.sql (changed columns or merge rules,
  on_schema_change), ddl.sql (tables, views), merge.sql (the merge), logs.sql (state and
  audit logs), snapshots.sql. Jinja and Python meet once per phase, each call carrying a
  record (dbt/adapters/lakerank/pk_tables.py): open (the tables' state, the window, a dead
  run's recovery), commit (stage, logs, intent, snapshot row, swap: one call), finish.

  Config
    primary_key   list of key columns (required; must contain every partition column)
    partition_by  list of partition columns (optional)
    options       dict of Paimon table options, verbatim (merge-engine, sequence.field,
                  fields.<f>.aggregate-function, changelog-producer, bucket, ...); validated
                  before anything runs — an unknown key or value, or options that cannot
                  work together, stop the run with a message naming the key
    order_by      input column(s) giving the arrival order of the commit's rows (ties of
                  sequence.field and deduplicate's "last" follow it); default: scan order
    (var)         `lakerank_full_compaction`: true (or a list of model names) asks for a full
                  compaction in this run, like Paimon's CALL sys.compact; with
                  changelog-producer full-compaction that is when changelog is produced
                  (also every `full-compaction.delta-commits` commits, if set)
  Commit source (optional): a model that reads its input with
    lakerank_lib.pending_rows(ref('<source>')), or names it in config commit_source='<source>',
    commits only when that source has pending commits, and records the source's head.
    state_fingerprint optional: settings the table's state depends on (a run with other
                  settings stops unless --full-refresh)
    on_schema_change  fail (default), ignore, append_new_columns, sync_all_columns: the
                  SELECT's columns against the stored ones; a changed merge rule of a stored
                  column (`lakerank.options`) always stops (evolve.sql)
  An input column `rowkind` ('+I', '-U', '+U', '-D'; NULL or absent = '+I') is the row kind
  and is not stored.

  Storage: `<model>` (the merged rows; partitioned by partition_by + `_bucket`, bucket =
  pmod(hash(bucket-key), bucket)), `<model>__audit_log` (changelog per producer, one
  partition per commit), `<model>__state_log` (each commit's after-image per touched key:
  time travel), `<model>__snapshots` (one row per commit). A commit rewrites only the
  (partition, bucket) directories holding the keys it touches, into fresh directories
  (`_v/c<commit>_<run>/`, written without a table and registered by the swap); the
  logs' partitions are written as directories and registered with one metastore call each;
  the swap plan is written first (`_lakerank/intent.json`), so a run killed anywhere
  is rolled back to the previous commit by the next run, which then applies its input once.
  The steps are lakerank's commit protocol (python_udfs/commit/protocol.py): stage (the
  buckets, the logs), intent, swap, record (`lakerank.snapshot_id`), finish.
-#}
{% materialization pk_table, default %}
  {%- set target = this.incorporate(type='table') -%}
  {%- set primary_key = lakerank_lib._as_list(config.require('primary_key')) -%}
  {%- set partition_by = lakerank_lib._as_list(config.get('partition_by')) -%}
  {%- set order_by = lakerank_lib._as_list(config.get('order_by')) -%}
  {%- set options = config.get('options') or {} -%}
  {%- set tables = lakerank_lib._pk_side_tables(target) -%}
  {%- set views = lakerank_lib._pk_views(target) -%}

  {{ run_hooks(pre_hooks) }}

  {%- if should_full_refresh() -%}
    {%- for rel in [target, tables.audit, tables.state, tables.snapshots] -%}
      {% do adapter.drop_relation(rel) %}
    {%- endfor -%}
  {%- endif -%}
  {#- phase one, open (dbt/adapters/lakerank/pk_tables.py): the four tables' existence,
      locations and properties (one metastore call), the window, recovery -#}
  {%- set opened = adapter.lakerank_pk_open(target, tables.audit, tables.state, tables.snapshots,
        lakerank_lib._commit_source(), should_full_refresh()) -%}
  {%- set info = opened['info'] -%}
  {%- set props = info[target.identifier]['properties'] -%}
  {%- set existed = info[target.identifier]['exists'] -%}
  {%- if opened['recovered'] -%}{{ log(opened['recovered'], info=true) }}{%- endif -%}
  {%- if existed -%}
    {% do lakerank_lib._check_fingerprint(target, config.get('state_fingerprint'), props) %}
  {%- endif -%}
  {%- set snapshot_id = opened['snapshot_id'] -%}

  {% call statement('pk_source') -%}
    create or replace temporary view {{ views.source }} as
    {{ sql }}
  {%- endcall %}
  {%- set schema = adapter.lakerank_query_schema(views.source) -%}
  {%- if existed -%}  {#- on_schema_change and changed merge rules: evolve.sql -#}
    {%- set schema = lakerank_lib._pk_schema_change(target, tables, views.source, schema, options, info,
                                                    opened['stored_columns']) -%}
  {%- endif -%}
  {%- set layout = lakerank_lib._pk_layout(schema, primary_key, partition_by, order_by) -%}
  {%- set spec = adapter.lakerank_pk_spec(this.identifier, options, layout.columns, primary_key, partition_by) -%}
  {%- set fingerprint = primary_key | join(',') ~ '|' ~ partition_by | join(',') ~ '|' ~ spec.bucket -%}

  {%- if existed -%}
    {%- set stored = props.get('lakerank.layout', '') -%}
    {%- if stored and stored != fingerprint -%}
      {{ exceptions.raise_compiler_error("pk_table " ~ this ~ " is laid out as (primary key | partitions | bucket) = " ~ stored
          ~ " but the model now says " ~ fingerprint ~ "; rebuild it with `dbt run --full-refresh`") }}
    {%- endif -%}
  {%- endif -%}
  {%- if existed -%}
    {%- for key, flag in [('ignore-delete', spec.ignore_delete), ('ignore-update-before', spec.ignore_update_before)] -%}
      {%- if props.get('lakerank.' ~ key, 'false') == 'true' and not flag -%}
        {{ exceptions.raise_compiler_error("pk_table " ~ this ~ ": option '" ~ key ~ "': Cannot change " ~ key ~ " from true to false.") }}
      {%- endif -%}
    {%- endfor -%}
  {%- endif -%}
  {% do lakerank_lib._pk_create_tables(target, tables, layout, fingerprint, primary_key, partition_by, info) %}
  {%- set commit_id = snapshot_id + 1 -%}
  {%- set compaction = lakerank_lib._pk_compaction(spec, options, commit_id, props) -%}

  {%- set window = opened['window'] -%}
  {%- if window is not none and existed and not window['pending'] and not should_full_refresh() -%}
    {%- set touched = [] -%}
  {%- else -%}
    {% call statement('pk_input') -%}
      create or replace temporary view {{ views.input }} as
      select
        {%- for c in layout.columns %}
        {{ c.name }},
        {%- endfor %}
        {{ lakerank_lib._pk_kind_expr(layout.has_rowkind, this.identifier) }} as __kind,
        {{ lakerank_lib._pk_arrival_expr(order_by) }} as __arrival,
        {{ lakerank_lib._pk_bucket_expr(spec) }} as _bucket
      from {{ views.source }}
    {%- endcall %}
    {% do adapter.lakerank_materialize_view(views.input) %}
    {%- set touched = lakerank_lib.query_values(
          "select distinct " ~ lakerank_lib._pk_partition_string(partition_by) ~ " from " ~ views.input) -%}
  {%- endif -%}

  {%- set plan = none -%}
  {%- if touched | length == 0 -%}
    {% call statement('main') -%} select 'no rows to commit' as status {%- endcall %}
  {%- else -%}
    {% do lakerank_lib._pk_merge(target, views, layout, spec, partition_by, touched) %}
    {#- phase two, stage to swap, in one call: buckets, logs, intent, snapshot row, swap -#}
    {%- set plan = adapter.lakerank_pk_commit(target, {
          'commit_id': commit_id,
          'touched': touched,
          'fault': lakerank_lib._model_fault(),
          'merged': views.merged,
          'buckets': {'sql': lakerank_lib._pk_new_buckets(target, views, layout, spec, partition_by, touched),
                      'stage': lakerank_lib.stage_dir(lakerank_lib._pk_location(target, info), 'c', commit_id, opened['writer']),
                      'partition_by': partition_by + ['_bucket']},
          'logs': lakerank_lib._pk_logs(tables, views, layout, spec, commit_id, compaction, info),
          'snapshot': lakerank_lib._pk_snapshot(tables, views, spec, commit_id, info),
        }) -%}
    {% do lakerank_lib._progress('commit ' ~ commit_id ~ ': ' ~ touched | length ~ ' (partition, bucket) directories rewritten') %}
    {% do lakerank_lib.fault_point('swapped') %}
    {%- set recorded = {
          'lakerank.snapshot_id': commit_id,
          'lakerank.ignore-delete': spec.ignore_delete | lower,
          'lakerank.ignore-update-before': spec.ignore_update_before | lower,
          'lakerank.options': lakerank_lib._pk_state_options_property(options)} -%}
    {%- if compaction.full -%}{%- do recorded.update({'lakerank.full_compaction_id': commit_id}) -%}{%- endif -%}
    {% do lakerank_lib.record_commit(target, window['to'] if window is not none else none,
                                     config.get('state_fingerprint'), properties=recorded, statement_name='main',
                                     writer=opened['writer']) %}
    {% do lakerank_lib.fault_point('recorded') %}
  {%- endif -%}
  {%- if window is not none and window['pending'] and touched | length == 0 -%}
    {% do lakerank_lib.record_commit(target, window['to'], writer=opened['writer']) %}
  {%- endif -%}
  {%- set buckets = [] -%}
  {%- for t in touched -%}{%- do buckets.append(t.split('_bucket=')[1]) -%}{%- endfor -%}
  {#- phase three, finish: what the commit superseded, what its data tests read, its views -#}
  {% do adapter.lakerank_pk_finish(target, plan,
        {'filter': lakerank_lib._partition_filter('_bucket', buckets | unique | list)},
        [views.merged, views.input] if plan is not none else [views.input]) %}

  {{ run_hooks(post_hooks) }}
  {% do persist_docs(target, model) %}
  {{ return({'relations': [target]}) }}
{% endmaterialization %}
