{#-
  merge_on_read — lakerank's incremental materialization for keyed tables whose commits
  change a scattered subset of rows (Paimon's merge-on-read: a base plus a log of changes,
  merged when read, compacted now and then).

  The model declares, with `lakerank_lib.declare_rewrite(predicate)`, which of its current
  rows this run recomputes (a SQL predicate over the table's columns, alias `t`), and its
  SELECT returns the complete new contents of exactly those rows (a row it no longer
  returns is deleted; `lakerank_lib.prior_rows(predicate=...)` reads the current ones).
  `declare_rewrite(predicate, prior=<query>)` hands the commit those current rows when the
  model already has them (a query returning exactly the view's rows under the predicate),
  so the commit diffs against it instead of reading the view again (`prior_columns`: the
  columns it returns; a table with one it lacks is read through the view). One run is
  one commit, and it writes only what changed (the model's data tests in the same
  invocation read only the rows of the keys it changed):
    1. the row-level diff between the current rows under the predicate and the SELECT,
       keyed by `primary_key`, is written as partition `_commit_id` of `<model>__audit_log`
       (rowkind +I/-U/+U/-D, Paimon's $audit_log) — adding that partition is the commit
       point (one metastore call: a reader sees the whole commit or none of it);
    2. the model's watermark (`lakerank.commit_id`) is recorded on the view.
  `<model>` is a view: `<model>__base` (parquet, sorted by `cluster_by`) with each key's
  newest change since the base applied on top. When the changes since the base pass
  `compact_commits` commits or `compact_ratio` of the base's bytes, the view's rows are
  written as a new base version (`<model>__base/_v/b<commit>_<attempt>`), the base table is
  pointed at it and the view at the changes after it.

  A first build (or `--full-refresh`) writes the SELECT as the base and every row as +I
  of the first commit. A run killed anywhere is repaired by running again: before step 1
  nothing is visible; after it the rerun finds the commit's partition and only records it.
  A reader in the middle of a compaction sees old base + changes or new base + changes:
  the same rows, because applying a change again over a base that already holds it is a
  no-op.

  Commit source (required): config commit_source='<model>', or the model's SQL reads it with
  lakerank_lib.pending_rows(ref(...)) (or calls lakerank_lib.commit_window(ref(...))).
  A run crosses from Jinja to Python once per phase, each crossing carrying a record
  (dbt/adapters/lakerank/records.py): open (the window, the tables' state, recovery), then
  the stage (a statement), swap (the audit partition, the compaction decision), record (a
  statement); the model's declare_rewrite is its one declaration.
  Config: primary_key (list, required), state_fingerprint, on_schema_change (schema_change.sql),
  cluster_by (default primary_key), compact_commits (default 10), compact_ratio (0.5),
  compact_min_bytes (16 MiB).
-#}
{% materialization merge_on_read, default %}
  {%- set view_relation = this.incorporate(type='view') -%}
  {%- set existing = load_cached_relation(this) -%}
  {%- set primary_key = config.require('primary_key') -%}
  {%- set fingerprint = config.get('state_fingerprint') -%}
  {%- set full_refresh = should_full_refresh() -%}
  {%- set parts = lakerank_lib._merge_on_read_parts(this) -%}
  {#- phase one, open: the window, the tables' state, recovery (dbt/adapters/lakerank/records.py) -#}
  {%- set opened = adapter.lakerank_merge_on_read_open(view_relation, parts['base'], parts['audit'],
        lakerank_lib._commit_source(), full_refresh,
        nothing='select * from ' ~ parts['audit'] ~ ' where false') -%}
  {%- set window = opened['window'] -%}
  {%- do parts.update({'root': opened['root']}) -%}

  {%- if opened['exists'] -%}
    {%- if existing is not none and existing.type != 'view' -%}
      {{ exceptions.raise_compiler_error(
          this ~ " was built as a " ~ existing.type ~ " by an older lakerank layout; it is now a"
          ~ " merge-on-read view over " ~ parts['base'] ~ ". Run `dbt build --full-refresh` to rebuild it.") }}
    {%- endif -%}
    {% do lakerank_lib._check_fingerprint(view_relation, fingerprint, opened['properties']) %}
  {%- endif -%}
  {#- on_schema_change (schema_change.sql): the query this run writes. Only a run that
      commits asks (it analyses the model's SELECT once more): a run with nothing pending
      writes nothing, and the next one that writes checks. -#}
  {%- set query = none -%}
  {%- if opened['exists'] and window['pending'] -%}
    {%- set query = lakerank_lib._merge_on_read_schema_change(view_relation, parts, primary_key, fingerprint, opened) -%}
  {%- endif -%}

  {{ run_hooks(pre_hooks) }}

  {%- if opened['exists'] and not window['pending'] -%}
    {% call statement('main') -%} select 'no pending commits' as status {%- endcall %}
  {%- else -%}
    {%- set commit_id = window['to'] -%}
    {%- if not opened['exists'] -%}
      {% do lakerank_lib._merge_on_read_create(view_relation, existing, parts, primary_key, commit_id, fingerprint, opened) %}
    {%- else -%}
      {%- if opened['rewrite'] is none -%}
        {{ exceptions.raise_compiler_error("merge_on_read model " ~ this ~ " must call lakerank_lib.declare_rewrite('<predicate>')") }}
      {%- endif -%}
      {%- set base_commit = opened['properties'].get('lakerank.base_commit', '-1') | int -%}
      {%- set swapped = lakerank_lib._merge_on_read_commit(view_relation, parts, primary_key, opened, query, base_commit) -%}
      {% do lakerank_lib.fault_point('committed') %}
      {%- if swapped['compact'] -%}
        {% do lakerank_lib._merge_on_read_compact(view_relation, parts, primary_key, commit_id, fingerprint, opened) %}
      {%- else -%}
        {% do lakerank_lib.record_commit(view_relation, commit_id, fingerprint, kind='view',
                                         properties={'lakerank.primary_key': primary_key | join(',')},
                                         writer=opened['writer']) %}
      {%- endif -%}
    {%- endif -%}
  {%- endif -%}

  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [view_relation]}) }}
{% endmaterialization %}


{#- The view's rows that commit `commit_id` wrote, when it is the newest commit: the
    after-images in its audit-log partition (the diff has one a key; a deleted key none). -#}
{% macro _merge_on_read_committed_rows(parts, commit_id) -%}
  {{ return('select * from ' ~ parts['audit'] ~ ' where _commit_id = ' ~ commit_id
            ~ " and rowkind in ('+I', '+U')") }}
{%- endmacro %}


{#- The side tables and storage root of a merge-on-read model. -#}
{#- (`root`, where the base's versions live, comes with the commit's open.) -#}
{% macro _merge_on_read_parts(relation) -%}
  {{ return({
      'base': lakerank_lib._side_table(relation, 'base'),
      'audit': lakerank_lib._side_table(relation, 'audit_log'),
      'cluster_by': config.get('cluster_by', config.get('primary_key')),
  }) }}
{%- endmacro %}
