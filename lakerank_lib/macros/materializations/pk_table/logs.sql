{#- pk_table: the commit's after-image per touched key (state log, for time travel) and its
    changelog per `changelog-producer` (audit log). -#}


{#- Does this commit run a full compaction (changelog-producer full-compaction), and from
    which earlier compaction does its changelog diff? -#}
{% macro _pk_compaction(spec, options, commit_id, props) -%}
  {%- set requested = var('lakerank_full_compaction', false) -%}
  {%- if requested is not boolean and requested is not none -%}
    {%- set requested = this.identifier in lakerank_lib._as_list(requested) -%}
  {%- endif -%}
  {%- set periodic = 'full-compaction.delta-commits' in options and commit_id % spec.delta_commits == 0 -%}
  {%- set last = props.get('lakerank.full_compaction_id', '0') | int -%}
  {{ return({'full': (requested or periodic) and spec.changelog_producer == 'full-compaction', 'since': last}) }}
{%- endmacro %}


{#- A log table's partition `column = value` as the commit writes it (the adapter's
    `lakerank_pk_commit`): the relation, the partition, its directory and its rows. -#}
{% macro _pk_log_partition(relation, column, value, info, sql) -%}
  {{ return({'relation': relation, 'spec': column ~ '=' ~ value,
             'location': lakerank_lib._pk_location(relation, info) ~ '/' ~ column ~ '=' ~ value, 'sql': sql}) }}
{%- endmacro %}


{#- The merged view's role that is the changelog of `changelog-producer` (full-compaction:
    between compactions, lookup's rows are not kept). -#}
{% macro _pk_changelog_role(producer) -%}
  {{- {'none': 'premerged', 'input': 'input', 'lookup': 'lookup', 'full-compaction': 'lookup'}[producer] -}}
{%- endmacro %}


{#- The commit's audit-log rows per `changelog-producer`. -#}
{% macro _pk_changelog(tables, views, layout, spec, commit_id, compaction) -%}
  {%- set producer = spec.changelog_producer -%}
  {% if producer == 'full-compaction' and not (compaction.full and compaction.since == commit_id - 1) -%}
    {%- if compaction.full -%}
      {{ lakerank_lib._pk_compaction_changelog(tables, layout, spec, compaction.since, commit_id) }}
    {%- else -%}
      select cast(null as string) as rowkind, {% for c in layout.names %}{{ c }}, {% endfor %}current_timestamp() as _commit_time
      from {{ views.merged }} where false
    {%- endif -%}
  {%- else -%}
    select __kind as rowkind, {% for c in layout.names %}{{ c }}, {% endfor %}current_timestamp() as _commit_time
    from {{ views.merged }}
    where __role = '{{ lakerank_lib._pk_changelog_role(producer) }}'
  {%- endif %}
{%- endmacro %}


{#- The commit's state-log and audit-log partitions. -#}
{% macro _pk_logs(tables, views, layout, spec, commit_id, compaction, info) -%}
  {%- set state_rows -%}
    select {% for c in layout.names %}{{ c }}, {% endfor %}true as _live
    from {{ views.merged }}
    where __role = 'after'
    union all
    select {% for c in layout.names %}stored.{{ c }}, {% endfor %}false as _live
    from {{ views.stored }} as stored
    left anti join (select * from {{ views.merged }} where __role = 'after') as after
      on {{ lakerank_lib._key_match('stored', 'after', spec.primary_key) }}
  {%- endset -%}
  {{ return([
      lakerank_lib._pk_log_partition(tables.state, '_commit_id', commit_id, info, state_rows),
      lakerank_lib._pk_log_partition(tables.audit, '_commit_id', commit_id, info,
          lakerank_lib._pk_changelog(tables, views, layout, spec, commit_id, compaction)),
  ]) }}
{%- endmacro %}


{#- full-compaction changelog with `full-compaction.delta-commits` = k: at every k-th commit,
    the lookup rule between the state at the previous full compaction and now, for the keys
    changed in between (changes in between collapse into one before/after pair). -#}
{% macro _pk_compaction_changelog(tables, layout, spec, from_commit, to_commit) -%}
  {%- set pk = spec.primary_key -%}
  {%- set compared = [] -%}
  {%- for c in layout.names if c not in pk and c not in spec.row_dedup_ignore -%}{%- do compared.append(c) -%}{%- endfor -%}
  {%- set keys -%}
    (select distinct {{ pk | join(', ') }} from {{ tables.state }}
     where _commit_id > {{ from_commit }} and _commit_id <= {{ to_commit }})
  {%- endset -%}
  {%- set sides = [] -%}
  {%- for commit in [from_commit, to_commit] -%}
    {%- do sides.append('(select s.* from ' ~ lakerank_lib._pk_state_at(tables.state, layout.names, pk, commit)
          ~ ' as s left semi join ' ~ keys ~ ' as keys on ' ~ lakerank_lib._key_match('s', 'keys', pk) ~ ')') -%}
  {%- endfor -%}
  {{ lakerank_lib._audit_diff(sides[0], sides[1], layout.names, pk, to_commit, with_commit_id=false,
                             compared=compared, keep_unchanged=not spec.row_dedup) }}
{%- endmacro %}
