{#- pk_table: one commit's merge of the input into the stored rows of the keys it touches. -#}


{% macro _pk_bucket_expr(spec) -%}
  {{ lakerank_lib.bucket_of(spec.bucket_key, spec.bucket) }}
{%- endmacro %}


{#- The "col=value/.../_bucket=n" name of a row's directory (matches metastore specs). -#}
{% macro _pk_partition_string(partition_by) -%}
  concat_ws('/', {% for p in partition_by %}concat('{{ p }}=', cast({{ p }} as string)), {% endfor -%}
  concat('_bucket=', cast(_bucket as string)))
{%- endmacro %}


{#- Rows of the (partition, bucket) directories in `touched`: literal IN lists per column
    (static partition pruning) plus the exact combination. -#}
{% macro _pk_touched_filter(partition_by, touched) -%}
  {%- set values = {} -%}
  {%- for t in touched -%}
    {%- for item in t.split('/') -%}
      {%- set kv = item.split('=', 1) -%}
      {%- do values.setdefault(kv[0], []) -%}
      {%- if kv[1] not in values[kv[0]] -%}{%- do values[kv[0]].append(kv[1]) -%}{%- endif -%}
    {%- endfor -%}
  {%- endfor -%}
  {%- for col in partition_by + ['_bucket'] -%}
    {{ lakerank_lib._partition_filter(col, values.get(col, [])) }} and
  {% endfor -%}
  {{ lakerank_lib._pk_partition_string(partition_by) }} in ({% for t in touched %}'{{ t }}'{{ ', ' if not loop.last }}{% endfor %})
{%- endmacro %}


{#- The commit's merge: stored rows of the touched keys + the input, per key, as one view
    (`__role` after/premerged/input/lookup, `__kind`, `__pos`; contract: python_udfs.commit.pk_commit),
    computed once (its output feeds the data, the logs and the snapshot).
    SQL path (_pk_sql_merge): deduplicate and first-row option sets that plain Spark SQL
    reproduces exactly (python_udfs.commit.pk_commit.sql_mergeable); everything else goes through
    the Python kernel, with a SQL fast path for new keys with a single add row (Paimon's
    single-record shortcut) — unless the merge function must see it (lookup compaction on
    partial-update/aggregation) or rowkind.field decides kinds. -#}
{% macro _pk_merge(target, views, layout, spec, partition_by, touched) -%}
  {%- set on_key = lakerank_lib._key_match('a', 'b', spec.primary_key) -%}
  {% call statement('pk_stored') -%}
    create or replace temporary view {{ views.stored }} as
    select {% for c in layout.names %}a.{{ c }}{{ ', ' if not loop.last }}{% endfor %}
    from {{ target }} as a
    left semi join {{ views.input }} as b on {{ on_key }}
    where {{ lakerank_lib._pk_touched_filter(partition_by, touched) }}
  {%- endcall %}
  {%- if spec.sql_mergeable -%}
    {% call statement('pk_merged') -%}
      create or replace temporary view {{ views.merged }} as
      {{ lakerank_lib._pk_sql_merge(views, layout, spec) }}
    {%- endcall %}
  {%- else -%}
    {% do lakerank_lib._pk_python_merge(views, layout, spec, on_key) %}
  {%- endif -%}
  {#- (the commit computes the merged view once, as its rows: adapter.lakerank_pk_commit) -#}
{%- endmacro %}


{#- The merge through python_udfs.commit.pk_commit (applyInArrow), new single-row keys in SQL. -#}
{% macro _pk_python_merge(views, layout, spec, on_key) -%}
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


{#- python_udfs.paimon.merge.commit_key for deduplicate / first-row in SQL, all keys at once.
    Per key, the write-filtered input rows and the stored row (arrival -1, kind +I) are
    ranked by merge order: the "winner" is the last (deduplicate: sequence fields, NULL
    smallest, then arrival) or the first (first-row: arrival) — the stored row loses ties
    to input rows under deduplicate and wins them under first-row, as in Paimon. `after` =
    the winner of stored + input if it is an add; `premerged` = the winner of the input
    alone; `lookup` = +I / -U,+U / -D from stored vs after (nothing when no input row
    survived the filters; first-row only +I; row-deduplicate drops -U/+U of equal rows).
    `__pos` = the kernel's emit position: after, premerged, inputs by arrival, lookup. -#}
{% macro _pk_sql_merge(views, layout, spec) -%}
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
{% macro _pk_new_buckets(target, views, layout, spec, partition_by, touched) -%}
  select {% for c in layout.names %}kept.{{ c }}, {% endfor %}kept._bucket
  from {{ target }} as kept
  left anti join {{ views.input }} as input
    on {{ lakerank_lib._key_match('kept', 'input', spec.primary_key) }}
  where {{ lakerank_lib._pk_touched_filter(partition_by, touched) }}
  union all
  select {% for c in layout.names %}{{ c }}, {% endfor %}{{ lakerank_lib._pk_bucket_expr(spec) }} as _bucket
  from {{ views.merged }}
  where __role = 'after'
{%- endmacro %}
