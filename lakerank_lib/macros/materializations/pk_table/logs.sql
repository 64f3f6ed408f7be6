{#- pk_table: the commit's after-image per touched key (state log, for time travel) and its
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
