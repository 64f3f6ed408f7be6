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
  {%- set window = lakerank_lib.required_commit_window('merge_on_read') -%}
  {%- set full_refresh = should_full_refresh() -%}
  {%- set parts = lakerank_lib.merge_on_read_parts(this) -%}

  {%- if existing is not none and not full_refresh -%}
    {%- if existing.type != 'view' -%}
      {{ exceptions.raise_compiler_error(
          this ~ " was built as a " ~ existing.type ~ " by an older lakerank layout; it is now a"
          ~ " merge-on-read view over " ~ parts['base'] ~ ". Run `dbt build --full-refresh` to rebuild it.") }}
    {%- endif -%}
    {% do lakerank_lib.check_fingerprint(view_relation, fingerprint) %}
  {%- endif -%}
  {#- on_schema_change (schema_change.sql): the query this run writes. Only a run that
      commits asks (it analyses the model's SELECT once more): a run with nothing pending
      writes nothing, and the next one that writes checks. -#}
  {%- set query = none -%}
  {%- if existing is not none and not full_refresh and window['pending'] -%}
    {%- set query = lakerank_lib.merge_on_read_schema_change(view_relation, parts, primary_key, fingerprint) -%}
  {%- endif -%}

  {{ run_hooks(pre_hooks) }}

  {%- if existing is not none and not window['pending'] and not full_refresh -%}
    {% do lakerank_lib.commit_nothing(view_relation, rows='select * from ' ~ parts['audit'] ~ ' where false') %}
  {%- else -%}
    {%- set commit_id = window['to'] -%}
    {%- if existing is none or full_refresh -%}
      {% do lakerank_lib.merge_on_read_create(view_relation, existing, parts, primary_key, commit_id, fingerprint) %}
      {% do lakerank_lib.remember_written(view_relation, 'true') %}
    {%- else -%}
      {%- set predicate = adapter.lakerank_memo_get('rewrite:' ~ invocation_id ~ ':' ~ this) -%}
      {%- if predicate is none -%}
        {{ exceptions.raise_compiler_error("merge_on_read model " ~ this ~ " must call lakerank_lib.declare_rewrite('<predicate>')") }}
      {%- endif -%}
      {%- set prior = adapter.lakerank_memo_get('rewrite-prior:' ~ invocation_id ~ ':' ~ this) -%}
      {% do lakerank_lib.merge_on_read_commit(view_relation, parts, primary_key, predicate, window, query, prior) %}
      {% do lakerank_lib.fault_point('committed') %}
      {%- set base_commit = adapter.lakerank_get_property(view_relation, 'lakerank.base_commit', '-1') | int -%}
      {%- if lakerank_lib.merge_on_read_needs_compaction(parts, base_commit) -%}
        {% do lakerank_lib.merge_on_read_compact(view_relation, parts, primary_key, commit_id, fingerprint) %}
      {%- else -%}
        {% do lakerank_lib.record_commit(view_relation, commit_id, fingerprint, kind='view',
                                         properties={'lakerank.primary_key': primary_key | join(',')}) %}
      {%- endif -%}
      {#- its data tests read the rows this commit changed, from the commit's own partition of
          the audit log: this commit is every changed key's newest change, so its after-images
          are exactly the view's rows of those keys, without reading the base -#}
      {% do lakerank_lib.remember_written(view_relation,
          rows=lakerank_lib.merge_on_read_committed_rows(parts, commit_id), commit_id=commit_id) %}
    {%- endif -%}
  {%- endif -%}

  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [view_relation]}) }}
{% endmaterialization %}


{#- The view's rows that commit `commit_id` wrote, when it is the newest commit: the
    after-images in its audit-log partition (the diff has one a key; a deleted key none). -#}
{% macro merge_on_read_committed_rows(parts, commit_id) -%}
  {{ return('select * from ' ~ parts['audit'] ~ ' where _commit_id = ' ~ commit_id
            ~ " and rowkind in ('+I', '+U')") }}
{%- endmacro %}


{#- The side tables and storage root of a merge-on-read model. -#}
{% macro merge_on_read_parts(relation) -%}
  {{ return({
      'base': lakerank_lib.side_table(relation, 'base'),
      'audit': lakerank_lib.side_table(relation, 'audit_log'),
      'root': (adapter.lakerank_schema_location(relation.schema) if execute else '')
              ~ '/' ~ relation.identifier ~ '__base',
      'cluster_by': config.get('cluster_by', config.get('primary_key')),
  }) }}
{%- endmacro %}


{#- First build or --full-refresh: the SELECT becomes the base, every row +I of the commit. -#}
{% macro merge_on_read_create(view_relation, existing, parts, primary_key, commit_id, fingerprint) -%}
  {%- if existing is not none -%}
    {% do adapter.drop_relation(existing) %}
  {%- endif -%}
  {%- for side in [parts['base'], parts['audit']] -%}
    {%- if adapter.lakerank_table_exists(side) -%}  {#- left by a killed first build or the old state -#}
      {% call statement('drop_' ~ side.identifier) -%} drop table if exists {{ side }} {%- endcall %}
    {%- endif -%}
  {%- endfor -%}
  {% do adapter.lakerank_delete_path(parts['root']) %}
  {% call statement('main') -%}
    create table {{ parts['base'] }}
    using parquet
    location '{{ lakerank_lib.stage_dir(parts['root'], 'b', commit_id) }}'
    as select * from ({{ sql }}) order by {{ parts['cluster_by'] | join(', ') }}
  {%- endcall %}
  {% call statement('create_audit_log') -%}
    create table {{ parts['audit'] }}
    using parquet partitioned by (_commit_id)
    as select '+I' as rowkind, base.*, current_timestamp() as _commit_time,
              cast({{ commit_id }} as bigint) as _commit_id
    from {{ parts['base'] }} as base
  {%- endcall %}
  {% do lakerank_lib.merge_on_read_replace_view(view_relation, parts, primary_key, commit_id, commit_id, fingerprint) %}
{%- endmacro %}


{#- One incremental commit: the diff of the rows under `predicate` (or the model's `prior`
    query of them) is added to the audit log as partition `_commit_id = window.to` (unless a
    killed run already added it): the commit protocol's begin (sweep a dead attempt's
    directory), stage, swap (one metastore call: the commit point; the materialization then
    records the watermark). -#}
{% macro merge_on_read_commit(view_relation, parts, primary_key, predicate, window, query=none, prior=none) -%}
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
      {{ lakerank_lib.audit_diff(
          '(' ~ prior['query'] ~ ')' if prior else lakerank_lib.merge_on_read_rows(view_relation, predicate, cols),
          '(' ~ (query or sql) ~ ')', cols, primary_key, commit_id, with_commit_id=false) }}
    {%- endcall %}
    {% do adapter.lakerank_write_fault(location, lakerank_lib.write_fault()) %}
    {% do lakerank_lib.fault_point('written') %}
    {% do adapter.lakerank_commit_swap(parts['audit'], {'commit_id': commit_id,
                                                        'create': [['_commit_id=' ~ commit_id, location]]}) %}
    {% do lakerank_lib.progress('commit ' ~ commit_id ~ ': '
          ~ '%.1f' | format(adapter.lakerank_path_bytes([location]) / 1024) ~ ' KiB of changed rows') %}
  {%- else -%}
    {% call statement('main') -%}
      select 'commit {{ commit_id }} already in the audit log' as status
    {%- endcall %}
  {%- endif -%}
{%- endmacro %}


{#- Whether the changes since the base (commit `base_commit`) are due for compaction:
    `compact_commits` commits, or more than `compact_ratio` of the base's bytes once they
    pass `compact_min_bytes` (parquet's per-file overhead makes tiny tables look 100 %
    changed). -#}
{% macro merge_on_read_needs_compaction(parts, base_commit) -%}
  {%- set deltas = lakerank_lib.merge_on_read_changes(parts['audit'], base_commit) -%}
  {%- if deltas | length >= config.get('compact_commits', 10) | int -%}{{ return(true) }}{%- endif -%}
  {%- if deltas | length == 0 -%}{{ return(false) }}{%- endif -%}
  {%- set base_bytes = adapter.lakerank_path_bytes([adapter.lakerank_table_location(parts['base'])]) -%}
  {%- set delta_bytes = adapter.lakerank_path_bytes(deltas) -%}
  {{ return(delta_bytes >= config.get('compact_min_bytes', 16777216) | int
            and delta_bytes > config.get('compact_ratio', 0.5) | float * base_bytes) }}
{%- endmacro %}


{#- The locations of an audit log's partitions after commit `base_commit`: the changes a
    merge-on-read view applies over its base. -#}
{% macro merge_on_read_changes(audit, base_commit) -%}
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
{% macro merge_on_read_compact(view_relation, parts, primary_key, commit_id, fingerprint) -%}
  {%- set location = lakerank_lib.stage_dir(parts['root'], 'b', commit_id) -%}
  {%- set current = adapter.lakerank_table_location(parts['base']) -%}
  {%- set previous = adapter.lakerank_get_property(parts['base'], 'lakerank.previous_base', '') -%}
  {% call statement('compact_base') -%}
    insert overwrite directory '{{ location }}' using parquet
    select * from {{ view_relation }} order by {{ parts['cluster_by'] | join(', ') }}
  {%- endcall %}
  {% do adapter.lakerank_write_fault(location, lakerank_lib.write_fault()) %}
  {% call statement('remember_base') -%}
    alter table {{ parts['base'] }} set tblproperties ('lakerank.previous_base' = '{{ current }}')
  {%- endcall %}
  {% do adapter.lakerank_commit_swap(parts['base'], {'commit_id': commit_id, 'relocate': [current, location]}) %}
  {% do lakerank_lib.fault_point('compacted') %}
  {% do lakerank_lib.progress('commit ' ~ commit_id ~ ': compacted into a new base') %}
  {% do lakerank_lib.merge_on_read_replace_view(view_relation, parts, primary_key, commit_id, commit_id, fingerprint) %}
  {% do adapter.lakerank_commit_finish(parts['base'], {'commit_id': commit_id, 'location': parts['root']},
                                       [location, current, previous]) %}
{%- endmacro %}


{#- (Re)define the view: the base with each key's newest change after `base_commit` on top
    (an after-image replaces the row, a delete removes it), and the model's watermark. An
    existing view is redefined in place (`alter view ... as`, then its properties: Spark's
    `create or replace view` drops the view first and a reader in between finds none). A
    kill between the two leaves the old watermark: the rerun compacts again. -#}
{% macro merge_on_read_replace_view(view_relation, parts, primary_key, base_commit, commit_id, fingerprint) -%}
  {%- set cols = adapter.lakerank_query_schema(parts['base'] | string) | map(attribute='name') | list -%}
  {%- set exists = adapter.lakerank_table_exists(view_relation) -%}
  {%- set properties -%}
    tblproperties (
      '{{ lakerank_lib.commit_property() }}' = '{{ commit_id }}',
      'lakerank.base_commit' = '{{ base_commit }}',
      'lakerank.primary_key' = '{{ primary_key | join(',') }}'
      {%- if fingerprint %}, 'lakerank.fingerprint' = '{{ fingerprint }}'{% endif %})
  {%- endset -%}
  {% call statement('replace_view') -%}
    {{ lakerank_lib.define_view(view_relation, properties, exists) }}
    {{ lakerank_lib.merge_on_read_select(
        parts['base'], 'select * from ' ~ parts['audit'] ~ ' where _commit_id > ' ~ base_commit,
        cols, primary_key) }}
  {%- endcall %}
  {%- if exists -%}
    {% do lakerank_lib.fault_point('viewed') %}
    {% call statement('view_properties') -%} alter view {{ view_relation }} set {{ properties }} {%- endcall %}
  {%- endif -%}
{%- endmacro %}


{#- The rows of a merge-on-read table: `base` (a relation) with each key's newest row of
    `changes` (a query over its audit log) on top: an after-image replaces the key's row, a
    delete removes it. A change is the key's newest when no change of a later commit has its
    key (a commit writes at most one after-image per key: its before image, if any, is not
    an upsert). Both branches are anti-joins rather than a window over the changes, so a
    reader's filter on any column (a rewrite's scope, not only the key) reaches the base and
    the newest changes below the joins; a window by key would read every change first. The
    changes on the joins' other side are read whole unless the filter is put there too
    (`merge_on_read_rows`). -#}
{% macro merge_on_read_select(base, changes, cols, primary_key) -%}
    with changes as (
      {{ changes }}
    )
    select {% for c in cols %}base.{{ c }}{{ ', ' if not loop.last }}{% endfor %}
    from {{ base }} as base
    left anti join changes on
      {%- for k in primary_key %} base.{{ k }} = changes.{{ k }}{{ ' and' if not loop.last }}{% endfor %}
    union all
    select {% for c in cols %}newest.{{ c }}{{ ', ' if not loop.last }}{% endfor %}
    from changes as newest
    left anti join changes as later on
      {%- for k in primary_key %} newest.{{ k }} = later.{{ k }} and{% endfor %} later._commit_id > newest._commit_id
    where newest.rowkind in ('+I', '+U')
{%- endmacro %}


{#- Declare which current rows this run of a merge_on_read model recomputes: a SQL
    predicate over the table's columns (alias `t`); and, optionally, `prior`: a query that
    returns exactly those rows as they stand (the model read them already), which the commit
    diffs against instead of reading the view, and `prior_columns`, the columns it returns:
    when the table has a column the prior does not return (a column added to the model), the
    commit reads the view instead. -#}
{% macro declare_rewrite(predicate, prior=none, prior_columns=none) -%}
  {%- do adapter.lakerank_memo_set('rewrite:' ~ invocation_id ~ ':' ~ this, predicate) -%}
  {%- do adapter.lakerank_memo_set('rewrite-prior:' ~ invocation_id ~ ':' ~ this,
                                   none if prior is none else {'query': prior, 'columns': prior_columns}) -%}
{%- endmacro %}
