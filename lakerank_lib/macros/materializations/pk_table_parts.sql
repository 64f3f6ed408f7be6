{#- Building blocks of the pk_table materialization (see pk_table.sql). -#}

{% macro as_list(value) -%}
  {%- if value is none -%}{{ return([]) }}
  {%- elif value is string -%}{{ return([value]) }}
  {%- else -%}{{ return(value | list) }}
  {%- endif -%}
{%- endmacro %}


{#- The relations kept beside a pk_table. -#}
{% macro pk_side_tables(target) -%}
  {%- set out = {} -%}
  {%- for suffix in ['audit_log', 'state_log', 'snapshots'] -%}
    {%- do out.update({suffix.split('_')[0]: api.Relation.create(
          schema=target.schema, identifier=target.identifier ~ '__' ~ suffix, type='table')}) -%}
  {%- endfor -%}
  {{ return(out) }}
{%- endmacro %}


{#- Session-local temporary views of one commit. -#}
{% macro pk_views(target) -%}
  {%- set out = {} -%}
  {%- for name in ['source', 'input', 'stored', 'simple', 'complex', 'merged_raw', 'merged'] -%}
    {%- do out.update({name: target.identifier ~ '__lr_' ~ name}) -%}
  {%- endfor -%}
  {{ return(out) }}
{%- endmacro %}


{#- Stored columns (partition columns last, `rowkind` dropped) and checks of the config
    against the model's columns. -#}
{% macro pk_layout(schema, primary_key, partition_by, order_by) -%}
  {%- set names = schema | map(attribute='name') | list -%}
  {%- for group, cols in [('primary_key', primary_key), ('partition_by', partition_by), ('order_by', order_by)] -%}
    {%- for c in cols -%}
      {%- if c not in names -%}
        {{ exceptions.raise_compiler_error("pk_table " ~ this ~ ": " ~ group ~ " column '" ~ c
            ~ "' is not a column of the model (columns: " ~ names | join(', ') ~ ")") }}
      {%- endif -%}
    {%- endfor -%}
  {%- endfor -%}
  {%- if primary_key | length == 0 -%}
    {{ exceptions.raise_compiler_error("pk_table " ~ this ~ ": config primary_key is empty") }}
  {%- endif -%}
  {%- for p in partition_by -%}
    {%- if p not in primary_key -%}
      {{ exceptions.raise_compiler_error("pk_table " ~ this ~ ": partition column '" ~ p
          ~ "' must be part of primary_key (cross-partition upsert is not supported)") }}
    {%- endif -%}
  {%- endfor -%}
  {%- for reserved in ['_bucket', '_commit_id', '_commit_time', '_live'] if reserved in names -%}
    {{ exceptions.raise_compiler_error("pk_table " ~ this ~ ": column name '" ~ reserved
        ~ "' is reserved (used by the table's bucket, audit log and state log); rename or drop it") }}
  {%- endfor -%}
  {%- set columns = [] -%}
  {%- for c in schema if c.name != 'rowkind' and c.name not in partition_by -%}{%- do columns.append(c) -%}{%- endfor -%}
  {%- for p in partition_by -%}
    {%- for c in schema if c.name == p -%}{%- do columns.append(c) -%}{%- endfor -%}
  {%- endfor -%}
  {{ return({'columns': columns, 'names': columns | map(attribute='name') | list, 'has_rowkind': 'rowkind' in names}) }}
{%- endmacro %}


{% macro pk_create_tables(target, tables, layout, fingerprint, primary_key, pcols, info) -%}
  {%- if not info[target.identifier]['exists'] %}
  {% call statement('pk_create_target') -%}
    create table if not exists {{ target }} (
      {%- for c in layout.columns %}
      {{ c.name }} {{ c.type }},
      {%- endfor %}
      _bucket int
    ) using parquet
    partitioned by ({% for p in pcols %}{{ p }}, {% endfor %}_bucket)
    tblproperties ('lakerank.layout' = '{{ fingerprint }}',
                   'lakerank.primary_key' = '{{ primary_key | join(",") }}')
  {%- endcall %}
  {%- endif %}
  {%- if not info[tables.audit.identifier]['exists'] %}
  {% call statement('pk_create_audit') -%}
    create table if not exists {{ tables.audit }} (
      rowkind string,
      {%- for c in layout.columns %}
      {{ c.name }} {{ c.type }},
      {%- endfor %}
      _commit_time timestamp,
      _commit_id bigint
    ) using parquet partitioned by (_commit_id)
  {%- endcall %}
  {%- endif %}
  {%- if not info[tables.state.identifier]['exists'] %}
  {% call statement('pk_create_state') -%}
    create table if not exists {{ tables.state }} (
      {%- for c in layout.columns %}
      {{ c.name }} {{ c.type }},
      {%- endfor %}
      _live boolean,
      _commit_id bigint
    ) using parquet partitioned by (_commit_id)
  {%- endcall %}
  {%- endif %}
  {%- if not info[tables.snapshots.identifier]['exists'] %}
  {% call statement('pk_create_snapshots') -%}
    create table if not exists {{ tables.snapshots }} (
      commit_time timestamp,
      commit_kind string,
      input_record_count bigint,
      touched_key_count bigint,
      changelog_record_count bigint,
      rewritten_partitions int,
      rewritten_bytes bigint,
      superseded_bytes bigint,
      snapshot_id bigint
    ) using parquet partitioned by (snapshot_id)
  {%- endcall %}
  {%- endif %}
{%- endmacro %}


{#- Bring the table back to its last recorded commit: finish a commit whose record was
    written, roll back one that died before, and drop log partitions of a dead attempt.
    Returns the last recorded snapshot id. -#}
{% macro pk_recover(target, tables, info) -%}
  {%- set snapshot_id = info[target.identifier]['properties'].get('lakerank.snapshot_id', '0') | int -%}
  {%- set intent = adapter.lakerank_read_intent(target) -%}
  {%- if intent is not none -%}
    {%- if intent['commit_id'] <= snapshot_id -%}
      {% do adapter.lakerank_finish_swap(target, intent) %}
    {%- else -%}
      {{ log("pk_table " ~ target ~ ": rolling back unfinished commit " ~ intent['commit_id'], info=true) }}
      {% do adapter.lakerank_rollback_swap(target, intent) %}
      {% do adapter.lakerank_clear_intent(target) %}
    {%- endif -%}
  {%- endif -%}
  {#- A run killed after writing its logs left partitions of the commit it never recorded. -#}
  {%- for rel, col in [(tables.audit, '_commit_id'), (tables.state, '_commit_id'), (tables.snapshots, 'snapshot_id')]
        if info[rel.identifier]['exists'] and adapter.lakerank_partition_exists(rel, col, snapshot_id + 1) -%}
    {% call statement('pk_drop_dead_' ~ col) -%}
      alter table {{ rel }} drop if exists partition ({{ col }} = {{ snapshot_id + 1 }})
    {%- endcall %}
  {%- endfor -%}
  {{ return(snapshot_id) }}
{%- endmacro %}


{% macro pk_kind_expr(has_rowkind, model_name) -%}
  {%- if has_rowkind -%}
    case
      when rowkind is null then '+I'
      when upper(rowkind) in ('+I', '-U', '+U', '-D') then upper(rowkind)
      else raise_error(concat('pk_table {{ model_name }}: unsupported rowkind ', rowkind,
                              ' (expected +I, -U, +U or -D)'))
    end
  {%- else -%}
    '+I'
  {%- endif -%}
{%- endmacro %}


{% macro pk_arrival_expr(order_by) -%}
  {%- if order_by -%}
    row_number() over (order by {{ order_by | join(', ') }})
  {%- else -%}
    monotonically_increasing_id()
  {%- endif -%}
{%- endmacro %}


{% macro pk_bucket_expr(spec) -%}
  {{ lakerank_lib.bucket_of(spec.bucket_key, spec.bucket) }}
{%- endmacro %}


{#- The pk_table bucket of key `columns` in a table with `buckets` buckets (option
    `bucket`; -1 or 1 = one bucket): use it to read only the buckets holding some keys. -#}
{% macro bucket_of(columns, buckets) -%}
  {%- if buckets | int > 1 -%}
    cast(pmod(hash({{ lakerank_lib.as_list(columns) | join(', ') }}), {{ buckets | int }}) as int)
  {%- else -%}
    0
  {%- endif -%}
{%- endmacro %}


{#- The "col=value/.../_bucket=n" name of a row's directory (matches metastore specs). -#}
{% macro pk_partition_string(partition_by) -%}
  concat_ws('/', {% for p in partition_by %}concat('{{ p }}=', cast({{ p }} as string)), {% endfor -%}
  concat('_bucket=', cast(_bucket as string)))
{%- endmacro %}


{#- Rows of the (partition, bucket) directories in `touched`: literal IN lists per column
    (static partition pruning) plus the exact combination. -#}
{% macro pk_touched_filter(partition_by, touched) -%}
  {%- set values = {} -%}
  {%- for t in touched -%}
    {%- for item in t.split('/') -%}
      {%- set kv = item.split('=', 1) -%}
      {%- do values.setdefault(kv[0], []) -%}
      {%- if kv[1] not in values[kv[0]] -%}{%- do values[kv[0]].append(kv[1]) -%}{%- endif -%}
    {%- endfor -%}
  {%- endfor -%}
  {%- for col in partition_by + ['_bucket'] -%}
    {{ lakerank_lib.partition_filter(col, values.get(col, [])) }} and
  {% endfor -%}
  {{ lakerank_lib.pk_partition_string(partition_by) }} in ({% for t in touched %}'{{ t }}'{{ ', ' if not loop.last }}{% endfor %})
{%- endmacro %}


{#- The commit's merge: stored rows of the touched keys + the input, per key, as one view
    (`__role` after/premerged/input/lookup, `__kind`, `__pos`; contract: python_udfs.pk_commit),
    computed once (its output feeds the data, the logs and the snapshot).
    SQL path (pk_sql_merge): deduplicate and first-row option sets that plain Spark SQL
    reproduces exactly (python_udfs.pk_commit.sql_mergeable); everything else goes through
    the Python kernel, with a SQL fast path for new keys with a single add row (Paimon's
    single-record shortcut) — unless the merge function must see it (lookup compaction on
    partial-update/aggregation) or rowkind.field decides kinds. -#}
{% macro pk_merge(target, views, layout, spec, partition_by, touched) -%}
  {%- set on_key = lakerank_lib.pk_key_match('a', 'b', spec.primary_key) -%}
  {% call statement('pk_stored') -%}
    create or replace temporary view {{ views.stored }} as
    select {% for c in layout.names %}a.{{ c }}{{ ', ' if not loop.last }}{% endfor %}
    from {{ target }} as a
    left semi join {{ views.input }} as b on {{ on_key }}
    where {{ lakerank_lib.pk_touched_filter(partition_by, touched) }}
  {%- endcall %}
  {%- if adapter.lakerank_pk_sql_mergeable(spec) -%}
    {% call statement('pk_merged') -%}
      create or replace temporary view {{ views.merged }} as
      {{ lakerank_lib.pk_sql_merge(views, layout, spec) }}
    {%- endcall %}
  {%- else -%}
    {% do lakerank_lib.pk_python_merge(views, layout, spec, on_key) %}
  {%- endif -%}
  {% do adapter.lakerank_materialize_view(views.merged) %}
{%- endmacro %}


{% macro pk_key_match(a, b, primary_key) -%}
  {%- for k in primary_key %}{{ a }}.{{ k }} <=> {{ b }}.{{ k }}{{ ' and ' if not loop.last }}{% endfor -%}
{%- endmacro %}


{#- The merge through python_udfs.pk_commit (applyInArrow), new single-row keys in SQL. -#}
{% macro pk_python_merge(views, layout, spec, on_key) -%}
  {%- set fast = spec.rowkind_field is none
        and (spec.engine in ['deduplicate', 'first-row'] or not spec.lookup_compaction) -%}
  {% call statement('pk_simple') -%}
    create or replace temporary view {{ views.simple }} as
    {% if fast -%}
    select a.* from {{ views.input }} as a
    left semi join (
      select {{ spec.primary_key | join(', ') }} from {{ views.input }}
      group by {{ spec.primary_key | join(', ') }}
      having count(*) = 1 and max(__kind) in ('+I', '+U') and min(__kind) in ('+I', '+U')
    ) as b on {{ on_key }}
    left anti join {{ views.stored }} as b on {{ on_key }}
    {%- else -%}
    select * from {{ views.input }} where false
    {%- endif %}
  {%- endcall %}
  {% call statement('pk_complex') -%}
    create or replace temporary view {{ views.complex }} as
    select a.* from {{ views.input }} as a
    left anti join {{ views.simple }} as b on {{ on_key }}
  {%- endcall %}
  {% do adapter.lakerank_pk_merge(views.complex, views.stored, spec, layout.names, views.merged_raw) %}
  {%- set cols = layout.names | join(', ') -%}
  {% call statement('pk_merged') -%}
    create or replace temporary view {{ views.merged }} as
    select * from {{ views.merged_raw }}
    union all
    select {{ cols }}, stack(4, 'after', '+I', 0, 'premerged', __kind, 1, 'input', __kind, 2,
                                'lookup', '+I', 3) as (__role, __kind, __pos)
    from {{ views.simple }}
  {%- endcall %}
{%- endmacro %}


{#- python_udfs.paimon_merge.commit_key for deduplicate / first-row in SQL, all keys at once.
    Per key, the write-filtered input rows and the stored row (arrival -1, kind +I) are
    ranked by merge order: the "winner" is the last (deduplicate: sequence fields, NULL
    smallest, then arrival) or the first (first-row: arrival) — the stored row loses ties
    to input rows under deduplicate and wins them under first-row, as in Paimon. `after` =
    the winner of stored + input if it is an add; `premerged` = the winner of the input
    alone; `lookup` = +I / -U,+U / -D from stored vs after (nothing when no input row
    survived the filters; first-row only +I; row-deduplicate drops -U/+U of equal rows).
    `__pos` = the kernel's emit position: after, premerged, inputs by arrival, lookup. -#}
{% macro pk_sql_merge(views, layout, spec) -%}
  {%- set cols = layout.names | join(', ') -%}
  {%- set pk = spec.primary_key | join(', ') -%}
  {%- set first_row = spec.engine == 'first-row' -%}
  {%- set order = [] -%}
  {%- for f in spec.sequence_fields -%}
    {%- do order.append(f ~ (' asc' if spec.seq_descending else ' desc') ~ ' nulls last') -%}
  {%- endfor -%}
  {%- do order.append('__arrival' ~ (' asc' if first_row else ' desc')) -%}
  {%- set compared = [] -%}
  {%- for c in layout.names if c not in spec.row_dedup_ignore -%}{%- do compared.append(c) -%}{%- endfor -%}
  {%- set is_add = "__kind in ('+I', '+U')" -%}
  with
  rows as (
    select {{ cols }}, __kind, cast(__arrival as bigint) as __arrival, false as __stored
    from {{ views.input }}
    where case
      when {{ is_add }} then true
      {%- if spec.ignore_delete %}
      else false
      {%- else %}
      {%- if spec.ignore_update_before %}
      when __kind = '-U' then false
      {%- endif %}
      else {{ "raise_error('By default, First row merge engine can not accept DELETE/UPDATE_BEFORE records.\\nYou can config \\'ignore-delete\\' to ignore the DELETE/UPDATE_BEFORE records.')" if first_row else 'true' }}
      {%- endif %}
    end
    union all
    select {{ cols }}, '+I' as __kind, cast(-1 as bigint) as __arrival, true as __stored
    from {{ views.stored }}
  ),
  ranked as (
    select *,
      row_number() over (partition by {{ pk }} order by {{ order | join(', ') }}) as __win,
      row_number() over (partition by {{ pk }} order by __stored, {{ order | join(', ') }}) as __pre,
      count_if(not __stored) over (partition by {{ pk }}) as __n,
      count_if(not __stored) over (partition by {{ pk }} order by __arrival
                                   rows between unbounded preceding and current row) as __i,
      max(__stored) over (partition by {{ pk }}) as __has_stored
    from rows
  ),
  keyed as (
    select *,
      max(__win = 1 and {{ is_add }}) over (partition by {{ pk }}) as __has_after
      {%- if spec.row_dedup and compared %},
      first(case when __win = 1 then struct({{ compared | join(', ') }}) end, true)
        over (partition by {{ pk }}) as __new,
      first(case when __stored then struct({{ compared | join(', ') }}) end, true)
        over (partition by {{ pk }}) as __old
      {%- endif %}
    from ranked
  ),
  judged as (
    select *,
      {% if first_row -%}
      __has_stored
      {%- elif spec.row_dedup -%}
      __has_stored and __has_after
        {%- for c in compared %} and __old.{{ c }} <=> __new.{{ c }}{% endfor %}
      {%- else -%}
      false
      {%- endif %} as __no_update
    from keyed
  )
  {#- Every output row from one pass over `judged` (a union of five filters would compute
      the windows five times). -#}
  select {{ cols }}, __out.__role, __out.__kind, __out.__pos
  from judged
  lateral view inline(array(
    named_struct('__role', 'after', '__kind', '+I', '__pos', 0,
      '__emit', __win = 1 and {{ is_add }}),
    named_struct('__role', 'premerged', '__kind', __kind, '__pos', cast(__has_after as int),
      '__emit', __pre = 1 and not __stored),
    named_struct('__role', 'input', '__kind', __kind, '__pos', cast(cast(__has_after as int) + __i as int),
      '__emit', not __stored),
    named_struct('__role', 'lookup', '__kind', case when __has_after then '-U' else '-D' end,
      '__pos', cast(cast(__has_after as int) + 1 + __n as int),
      '__emit', __stored and __n > 0 and not __no_update),
    named_struct('__role', 'lookup', '__kind', case when __has_stored then '+U' else '+I' end,
      '__pos', cast(2 + __n + cast(__has_stored as int) as int),
      '__emit', __win = 1 and {{ is_add }} and __n > 0 and not __no_update)
  )) __out
  where __out.__emit
{%- endmacro %}


{#- Complete new contents of the touched (partition, bucket) directories: their untouched
    keys as they were, plus the merged rows of the touched keys. -#}
{% macro pk_new_buckets(target, views, layout, spec, partition_by, touched) -%}
  select {% for c in layout.names %}kept.{{ c }}, {% endfor %}kept._bucket
  from {{ target }} as kept
  left anti join {{ views.input }} as input
    on {% for k in spec.primary_key %}kept.{{ k }} <=> input.{{ k }}{{ ' and ' if not loop.last }}{% endfor %}
  where {{ lakerank_lib.pk_touched_filter(partition_by, touched) }}
  union all
  select {% for c in layout.names %}{{ c }}, {% endfor %}{{ lakerank_lib.pk_bucket_expr(spec) }} as _bucket
  from {{ views.merged }}
  where __role = 'after'
{%- endmacro %}


{#- The commit's after-image per touched key (state log, for time travel) and its
    changelog per `changelog-producer` (audit log). -#}
{#- Does this commit run a full compaction (changelog-producer full-compaction), and from
    which earlier compaction does its changelog diff? -#}
{% macro pk_compaction(spec, options, commit_id, props) -%}
  {%- set requested = var('lakerank_full_compaction', false) -%}
  {%- if requested is not boolean and requested is not none -%}
    {%- set requested = this.identifier in lakerank_lib.as_list(requested) -%}
  {%- endif -%}
  {%- set periodic = 'full-compaction.delta-commits' in options and commit_id % spec.delta_commits == 0 -%}
  {%- set last = props.get('lakerank.full_compaction_id', '0') | int -%}
  {{ return({'full': (requested or periodic) and spec.changelog_producer == 'full-compaction', 'since': last}) }}
{%- endmacro %}


{#- A pk_table's (or side table's) location: from the commit's one metadata read when the
    table existed then, else asked now (the run created it). -#}
{% macro pk_location(relation, info) -%}
  {{- info[relation.identifier]['location'] or adapter.lakerank_table_location(relation) -}}
{%- endmacro %}


{#- Write partition `column = value` of log table `relation` as a directory (the caller's
    SELECT, cast to the table's columns) and register it: one write, one metastore call. -#}
{% macro pk_write_log_partition(relation, column, value, info) -%}
  {%- set location = lakerank_lib.pk_location(relation, info) ~ '/' ~ column ~ '=' ~ value -%}
  {% do adapter.lakerank_write_dirs(caller(), location, [], relation, fault=lakerank_lib.write_fault()) %}
  {%- if not adapter.lakerank_add_partition(relation, column, value, location) -%}
    {% call statement('pk_register_' ~ relation.identifier) -%}
      alter table {{ relation }} add if not exists partition ({{ column }} = {{ value }})
    {%- endcall %}
  {%- endif -%}
{%- endmacro %}


{#- The merged view's role that is the changelog of `changelog-producer` (full-compaction:
    between compactions, lookup's rows are not kept). -#}
{% macro pk_changelog_role(producer) -%}
  {{- {'none': 'premerged', 'input': 'input', 'lookup': 'lookup', 'full-compaction': 'lookup'}[producer] -}}
{%- endmacro %}


{#- The commit's audit-log rows per `changelog-producer`. -#}
{% macro pk_changelog(tables, views, layout, spec, commit_id, compaction) -%}
  {%- set producer = spec.changelog_producer -%}
  {% if producer == 'full-compaction' and not (compaction.full and compaction.since == commit_id - 1) -%}
    {%- if compaction.full -%}
      {{ lakerank_lib.pk_compaction_changelog(tables, layout, spec, compaction.since, commit_id) }}
    {%- else -%}
      select cast(null as string) as rowkind, {% for c in layout.names %}{{ c }}, {% endfor %}current_timestamp() as _commit_time
      from {{ views.merged }} where false
    {%- endif -%}
  {%- else -%}
    select __kind as rowkind, {% for c in layout.names %}{{ c }}, {% endfor %}current_timestamp() as _commit_time
    from {{ views.merged }}
    where __role = '{{ lakerank_lib.pk_changelog_role(producer) }}'
  {%- endif %}
{%- endmacro %}


{% macro pk_write_logs(tables, views, layout, spec, commit_id, compaction, info) -%}
  {% call lakerank_lib.pk_write_log_partition(tables.state, '_commit_id', commit_id, info) -%}
    select {% for c in layout.names %}{{ c }}, {% endfor %}true as _live
    from {{ views.merged }}
    where __role = 'after'
    union all
    select {% for c in layout.names %}stored.{{ c }}, {% endfor %}false as _live
    from {{ views.stored }} as stored
    left anti join (select * from {{ views.merged }} where __role = 'after') as after
      on {% for k in spec.primary_key %}stored.{{ k }} <=> after.{{ k }}{{ ' and ' if not loop.last }}{% endfor %}
  {%- endcall %}
  {% call lakerank_lib.pk_write_log_partition(tables.audit, '_commit_id', commit_id, info) -%}
    {{ lakerank_lib.pk_changelog(tables, views, layout, spec, commit_id, compaction) }}
  {%- endcall %}
{%- endmacro %}


{#- full-compaction changelog with `full-compaction.delta-commits` = k: at every k-th commit,
    the lookup rule between the state at the previous full compaction and now, for the keys
    changed in between (changes in between collapse into one before/after pair). -#}
{% macro pk_compaction_changelog(tables, layout, spec, from_commit, to_commit) -%}
  {%- set pk = spec.primary_key -%}
  {%- set compared = [] -%}
  {%- for c in layout.names if c not in pk and c not in spec.row_dedup_ignore -%}{%- do compared.append(c) -%}{%- endfor -%}
  with
  keys as (
    select distinct {{ pk | join(', ') }} from {{ tables.state }}
    where _commit_id > {{ from_commit }} and _commit_id <= {{ to_commit }}
  ),
  before_rows as (
    select b.* from {{ lakerank_lib.pk_state_at(tables.state, layout.names, pk, from_commit) }} as b
    left semi join keys on {% for k in pk %}b.{{ k }} <=> keys.{{ k }}{{ ' and ' if not loop.last }}{% endfor %}
  ),
  after_rows as (
    select a.* from {{ lakerank_lib.pk_state_at(tables.state, layout.names, pk, to_commit) }} as a
    left semi join keys on {% for k in pk %}a.{{ k }} <=> keys.{{ k }}{{ ' and ' if not loop.last }}{% endfor %}
  ),
  paired as (
    select
      {%- for c in layout.names %}
      b.{{ c }} as b__{{ c }}, a.{{ c }} as a__{{ c }},
      {%- endfor %}
      b.{{ pk[0] }} is not null as has_before,
      a.{{ pk[0] }} is not null as has_after
    from before_rows as b
    full outer join after_rows as a
      on {% for k in pk %}b.{{ k }} <=> a.{{ k }}{{ ' and ' if not loop.last }}{% endfor %}
    {%- if spec.row_dedup %}
    where not (b.{{ pk[0] }} is not null and a.{{ pk[0] }} is not null
      {%- for c in compared %} and b.{{ c }} <=> a.{{ c }}{% endfor %})
    {%- endif %}
  ),
  kinds as (
    select stack(2,
      case when has_after then '-U' else '-D' end, false,
      case when has_before then '+U' else '+I' end, true) as (rowkind, is_after),
      paired.*
    from paired
  )
  select rowkind,
    {%- for c in layout.names %}
    case when is_after then a__{{ c }} else b__{{ c }} end as {{ c }},
    {%- endfor %}
    current_timestamp() as _commit_time
  from kinds
  where (is_after and has_after) or (not is_after and has_before)
{%- endmacro %}


{#- Live rows of a pk_table as of `commit_id`, replayed from its state log. -#}
{% macro pk_state_at(state, names, primary_key, commit_id) -%}
  (select {{ names | join(', ') }} from (
     select *, row_number() over (
       partition by {{ primary_key | join(', ') }} order by _commit_id desc) as __newest
     from {{ state }} where _commit_id <= {{ commit_id }})
   where __newest = 1 and _live)
{%- endmacro %}


{% macro pk_write_snapshot(tables, views, spec, plan, commit_id, info) -%}
  {%- set written = [] -%}
  {%- set superseded = [] -%}
  {%- for item in plan['replace'] -%}{%- do written.append(item[2]) -%}{%- do superseded.append(item[1]) -%}{%- endfor -%}
  {%- for item in plan['create'] -%}{%- do written.append(item[1]) -%}{%- endfor -%}
  {%- for item in plan['drop'] -%}{%- do superseded.append(item[1]) -%}{%- endfor -%}
  {% call lakerank_lib.pk_write_log_partition(tables.snapshots, 'snapshot_id', commit_id, info) -%}
    select
      current_timestamp() as commit_time,
      'APPEND' as commit_kind,
      (select count(*) from {{ views.input }}) as input_record_count,
      count_if(__pos = 0) as touched_key_count,
      {% if spec.changelog_producer == 'full-compaction' -%}
      (select count(*) from {{ tables.audit }} where _commit_id = {{ commit_id }})
      {%- else -%}
      count_if(__role = '{{ lakerank_lib.pk_changelog_role(spec.changelog_producer) }}')
      {%- endif %} as changelog_record_count,
      {{ written | length }} as rewritten_partitions,
      {{ adapter.lakerank_path_bytes(written) }} as rewritten_bytes,
      {{ adapter.lakerank_path_bytes(superseded) }} as superseded_bytes
    from {{ views.merged }}
  {%- endcall %}
{%- endmacro %}


{#- Write-failure injection for tests: `lakerank_fault: "write:<part>"` (or per model, as
    below) makes this model's parquet write whose location contains <part> fail like a full
    disk, leaving a torn file behind (adapter.lakerank_write_dirs). -#}
{% macro write_fault() -%}
  {%- set fault = lakerank_lib.model_fault() -%}
  {{ return(fault if fault is string and fault.startswith('write:') else '') }}
{%- endmacro %}


{#- This model's `lakerank_fault` value (a plain value applies to every model). -#}
{% macro model_fault() -%}
  {%- set fault = var('lakerank_fault', '') -%}
  {%- if fault is mapping -%}{%- set fault = fault.get(this.name, '') -%}{%- endif -%}
  {{ return(fault) }}
{%- endmacro %}


{#- Crash injection for tests: `--vars '{lakerank_fault: swapped}'` stops the run right
    after that step (staged, logged, planned, swapped, recorded), leaving everything as a
    killed process would. A mapping (`{lakerank_fault: {model_a: logged, model_b: swapped}}`)
    stops each named model at its own step, so one run can crash several commits. -#}
{% macro fault_point(name) -%}
  {%- if lakerank_lib.model_fault() == name -%}
    {{ exceptions.raise_compiler_error("lakerank_fault: stopped after step '" ~ name ~ "'") }}
  {%- endif -%}
{%- endmacro %}
