{#-
  Seed 000 `dwd_project_contract_table`: the contract changes in this model's pending
  commit window, each with its event-time segment start. -U/-D rows carry the before
  image (where the contract was), +I/+U rows the after image (where it is now).
-#}
{% macro contract_changes() -%}
  select
    rowkind, project_id, contract_id, sign_time, amount,
    {{ lakerank.segment_start('sign_time') }} as segment_start,
    _seq, _commit_id
  from {{ lakerank.pending_rows(ref('stg_contract_changelog')) }}
{%- endmacro %}


{#- Project bucket of a project-keyed state table (var project_buckets). -#}
{% macro project_bucket(col='project_id') -%}
  cast(pmod(xxhash64({{ col }}), {{ var('project_buckets', 8) | int }}) as int)
{%- endmacro %}


{#- Segment partitions touched by the pending changes (compile-time list). -#}
{% macro touched_segments() -%}
  {{ return(lakerank.query_values(
      "select distinct cast(segment_start as string) from (" ~ lakerank.contract_changes() ~ ")")) }}
{%- endmacro %}


{#-
  Scope of a rank rewrite, as SQL: for every project with pending changes,
  `touched_from` = its earliest touched segment and `rewrite_from` = the segment before
  that one holding the project's previous live contracts (its zipper version covering
  `touched_from` lives there). Segment lists come from the accumulation (after this
  commit) and from its audit log's before images (as it was before the window).
-#}
{% macro rank_rewrite_scope() -%}
  {%- set w = lakerank.commit_window() -%}
  with changes as ({{ lakerank.contract_changes() }}),
  touched as (
    select project_id, min(segment_start) as touched_from
    from changes group by project_id
  ),
  lists as (
    select a.project_id, s.segment_start
    from {{ ref('int_project_rank_accumulation') }} as a
    lateral view explode(a.segments) e as s
    where a.project_bucket in (select distinct {{ lakerank.project_bucket() }} from touched)
      and a.project_id in (select project_id from touched)
    union all
    select a.project_id, s.segment_start
    from {{ lakerank.audit_log(ref('int_project_rank_accumulation')) }} as a
    lateral view explode(a.segments) e as s
    where a._commit_id > {{ w['from'] }} and a._commit_id <= {{ w['to'] }}
      and a.rowkind in ('-U', '-D')
    union all
    select project_id, segment_start from changes
  ),
  scope as (
    select t.project_id, t.touched_from,
      coalesce(max(case when l.segment_start < t.touched_from then l.segment_start end),
               t.touched_from) as rewrite_from
    from touched as t
    left join lists as l on t.project_id = l.project_id
    group by t.project_id, t.touched_from
  )
{%- endmacro %}


{#- Partitions (segment starts) that a rank rewrite replaces: every listed segment of a
    scoped project from its `rewrite_from` on. Computed once per window. -#}
{% macro rank_rewrite_partitions() -%}
  {%- set w = lakerank.commit_window() -%}
  {%- set key = 'rank_rewrite:' ~ invocation_id ~ ':' ~ w['from'] ~ ':' ~ w['to'] -%}
  {%- set cached = adapter.lakerank_memo_get(key) -%}
  {%- if cached is not none -%}{{ return(cached) }}{%- endif -%}
  {%- set q -%}
    {{ lakerank.rank_rewrite_scope() }}
    select distinct cast(l.segment_start as string)
    from lists as l
    inner join scope as s on l.project_id = s.project_id
    where l.segment_start >= s.rewrite_from
  {%- endset -%}
  {%- set values = lakerank.query_values(q) -%}
  {%- if execute -%}{%- do adapter.lakerank_memo_set(key, values) -%}{%- endif -%}
  {{ return(values) }}
{%- endmacro %}


{#- Rank positions used by each scoped project before each of its segments, from the
    accumulation's per-segment index (a running sum over earlier segments). -#}
{% macro segment_bases() -%}
  select
    project_id,
    segment_start,
    coalesce(sum(positions) over (
      partition by project_id order by segment_start
      rows between unbounded preceding and 1 preceding), 0) as base_positions
  from (
    select a.project_id, s.segment_start, s.positions
    from {{ ref('int_project_rank_accumulation') }} as a
    lateral view explode(a.segments) e as s
    where a.project_bucket in (select distinct {{ lakerank.project_bucket() }} from scope)
      and a.project_id in (select project_id from scope)
  )
{%- endmacro %}
