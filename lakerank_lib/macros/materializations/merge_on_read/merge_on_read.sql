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

  Commit source (required): the model's SQL reads it with lakerank_lib.pending_rows(ref(...))
  or calls lakerank_lib.commit_window(ref(...)) first.
  Config: primary_key (list, required), state_fingerprint, on_schema_change (schema_change.sql),
  cluster_by (default primary_key), compact_commits (default 10), compact_ratio (0.5),
  compact_min_bytes (16 MiB).
-#}
{% materialization merge_on_read, default %}
  {%- do adapter.lakerank_require_driver('merge_on_read') -%}
  {%- set view_relation = this.incorporate(type='view') -%}
  {%- set existing = load_cached_relation(this) -%}
  {%- set primary_key = config.require('primary_key') -%}
  {%- set fingerprint = config.get('state_fingerprint') -%}
  {%- set window = lakerank_lib._required_commit_window('merge_on_read') -%}
  {%- set full_refresh = should_full_refresh() -%}
  {%- set parts = lakerank_lib._merge_on_read_parts(this) -%}

  {%- if existing is not none and not full_refresh -%}
    {%- if existing.type != 'view' -%}
      {{ exceptions.raise_compiler_error(
          this ~ " was built as a " ~ existing.type ~ " by an older lakerank layout; it is now a"
          ~ " merge-on-read view over " ~ parts['base'] ~ ". Run `dbt build --full-refresh` to rebuild it.") }}
    {%- endif -%}
    {% do lakerank_lib._check_fingerprint(view_relation, fingerprint) %}
  {%- endif -%}
  {#- on_schema_change (schema_change.sql): the query this run writes. Only a run that
      commits asks (it analyses the model's SELECT once more): a run with nothing pending
      writes nothing, and the next one that writes checks. -#}
  {%- set query = none -%}
  {%- if existing is not none and not full_refresh and window['pending'] -%}
    {%- set query = lakerank_lib._merge_on_read_schema_change(view_relation, parts, primary_key, fingerprint) -%}
  {%- endif -%}

  {{ run_hooks(pre_hooks) }}

  {%- if existing is not none and not window['pending'] and not full_refresh -%}
    {% do lakerank_lib._commit_nothing(view_relation, rows='select * from ' ~ parts['audit'] ~ ' where false') %}
  {%- else -%}
    {%- set commit_id = window['to'] -%}
    {%- if existing is none or full_refresh -%}
      {% do lakerank_lib._merge_on_read_create(view_relation, existing, parts, primary_key, commit_id, fingerprint) %}
      {% do lakerank_lib._remember_written(view_relation, 'true') %}
    {%- else -%}
      {%- set predicate = adapter.lakerank_memo_get('rewrite:' ~ invocation_id ~ ':' ~ this) -%}
      {%- if predicate is none -%}
        {{ exceptions.raise_compiler_error("merge_on_read model " ~ this ~ " must call lakerank_lib.declare_rewrite('<predicate>')") }}
      {%- endif -%}
      {%- set prior = adapter.lakerank_memo_get('rewrite-prior:' ~ invocation_id ~ ':' ~ this) -%}
      {% do lakerank_lib._merge_on_read_commit(view_relation, parts, primary_key, predicate, window, query, prior) %}
      {% do lakerank_lib.fault_point('committed') %}
      {%- set base_commit = adapter.lakerank_get_property(view_relation, 'lakerank.base_commit', '-1') | int -%}
      {%- if lakerank_lib._merge_on_read_needs_compaction(parts, base_commit) -%}
        {% do lakerank_lib._merge_on_read_compact(view_relation, parts, primary_key, commit_id, fingerprint) %}
      {%- else -%}
        {% do lakerank_lib.record_commit(view_relation, commit_id, fingerprint, kind='view',
                                         properties={'lakerank.primary_key': primary_key | join(',')}) %}
      {%- endif -%}
      {#- its data tests read the rows this commit changed, from the commit's own partition of
          the audit log: this commit is every changed key's newest change, so its after-images
          are exactly the view's rows of those keys, without reading the base -#}
      {% do lakerank_lib._remember_written(view_relation,
          rows=lakerank_lib._merge_on_read_committed_rows(parts, commit_id), commit_id=commit_id) %}
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
{% macro _merge_on_read_parts(relation) -%}
  {{ return({
      'base': lakerank_lib._side_table(relation, 'base'),
      'audit': lakerank_lib._side_table(relation, 'audit_log'),
      'root': (adapter.lakerank_schema_location(relation.schema) if execute else '')
              ~ '/' ~ relation.identifier ~ '__base',
      'cluster_by': config.get('cluster_by', config.get('primary_key')),
  }) }}
{%- endmacro %}
