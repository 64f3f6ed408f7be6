{#-
  The scope of a rank rewrite, for the commit window of the model that expands it (no
  seed table: the seed re-ranks in Flink state). For every project with pending changes:
  `touched_from`, its earliest touched segment, and `rewrite_from`, the segment before it
  that holds the project's previous live contracts (the zipper version in force at
  `touched_from` lives there); one row per segment of the project from `rewrite_from` on,
  before or after this window. The zipper and the fact table rewrite exactly these
  (project, segment) partitions. Segment lists come from the accumulation after the window
  (which this build has already committed) and from the window's changes: segments before
  `touched_from` are untouched by the window, and a segment emptied by the window has a
  change in it. (Before images of the accumulation are not needed, and reading them by
  commit id was the defect of issue F.1: the accumulation's audit log numbers its own
  commits.)
-#}
{% macro contract_rank_scope() -%}
  {%- do ref('int_project_rank_accumulation') -%}  {#- read below, when anything is pending -#}
  {%- if not lakerank.contract_window()['pending'] -%}
  {#- nothing pending: no row, and no read of the accumulation's merge-on-read view, whose
      analysis alone is most of an empty build's cost in a fresh JVM -#}
  select
      cast(null as bigint) as project_id,
      cast(null as timestamp_ntz) as segment_start,
      cast(null as timestamp_ntz) as touched_from,
      cast(null as timestamp_ntz) as rewrite_from,
      cast(null as bigint) as positions,
      cast(null as bigint) as base_positions
  where false
  {%- else -%}
  with

  changes as (
      {{ lakerank.contract_changes() }}
  ),

  touched as (
      select
          project_id,
          min(segment_start) as touched_from
      from changes
      group by project_id
  ),

  accumulation as (
      select * from {{ ref('int_project_rank_accumulation') }}
      where project_id in (select touched.project_id from touched)
  ),

  listed_segments as (
      select
          accumulation.project_id,
          entry.segment_start,
          entry.positions
      from accumulation
          lateral view explode(accumulation.segments) exploded as entry
      union all
      select
          project_id,
          segment_start,
          cast(null as bigint) as positions
      from changes
  ),

  segment_positions as (
      select
          listed_segments.project_id,
          listed_segments.segment_start,
          coalesce(max(listed_segments.positions), 0) as positions
      from listed_segments
      left semi join touched on listed_segments.project_id = touched.project_id
      group by listed_segments.project_id, listed_segments.segment_start
  ),

  project_segments as (
      select
          project_id,
          segment_start,
          positions,
          {{ lakerank.positions_before() }} as base_positions
      from segment_positions
  ),

  bounds as (
      select
          touched.project_id,
          touched.touched_from,
          coalesce(
              max(
                  case
                      when project_segments.segment_start < touched.touched_from
                          then project_segments.segment_start
                  end
              ),
              touched.touched_from
          ) as rewrite_from
      from touched
      inner join project_segments on touched.project_id = project_segments.project_id
      group by touched.project_id, touched.touched_from
  )

  select
      bounds.project_id,
      project_segments.segment_start,
      bounds.touched_from,
      bounds.rewrite_from,
      cast(project_segments.positions as bigint) as positions,
      cast(project_segments.base_positions as bigint) as base_positions
  from bounds
  inner join project_segments
      on
          bounds.project_id = project_segments.project_id
          and bounds.rewrite_from <= project_segments.segment_start
  {%- endif -%}
{%- endmacro %}


{#- The scope relation a rank rewrite reads: `int_contract_rank_scope` when that table was
    built for this model's own commit window (every build after a clean one), else the
    same SQL expanded for this model's window (a consumer left behind by a failed or
    partial build, or a `--select` without the scope). The scope never reads its
    consumers' state; the consumer checks the scope's recorded window (upstream state). -#}
{% macro rank_scope_relation() -%}
  {%- set scope = ref('int_contract_rank_scope') -%}
  {%- do ref('int_project_rank_accumulation') -%}  {#- read when the scope is expanded -#}
  {%- if not execute -%}{{ return(scope) }}{%- endif -%}
  {%- set key = 'scope:' ~ invocation_id ~ ':' ~ this -%}
  {%- set cached = adapter.lakerank_memo_get(key) -%}
  {%- if cached is not none -%}{{ return(cached) }}{%- endif -%}
  {%- set mine = lakerank.contract_window() -%}
  {%- set props = adapter.lakerank_tables_info([scope])[scope.identifier]['properties'] -%}  {#- one metastore call -#}
  {%- set built_for = [props.get('lakerank.window_from', 'none'), props.get(lakerank_lib.commit_property(), 'none')] -%}
  {%- if built_for == [mine['from'] | string, mine['to'] | string] -%}
    {%- set relation = scope | string -%}
  {%- else -%}
    {%- do log(this ~ ": the scope table was built for commits " ~ built_for | join('..')
               ~ ", this model's window is " ~ mine['from'] ~ ".." ~ mine['to']
               ~ "; expanding the scope for its own window") -%}
    {%- set relation = '(\n' ~ lakerank.contract_rank_scope() ~ '\n)' -%}
  {%- endif -%}
  {%- do adapter.lakerank_memo_set(key, relation) -%}
  {{ return(relation) }}
{%- endmacro %}


{#- Post-hook of int_contract_rank_scope: the commit window it was built for. -#}
{% macro record_scope_window() -%}
  {%- set w = lakerank.contract_window() -%}
  {%- if execute -%}{% do lakerank_lib.fault_point('recording') %}{%- endif -%}
  {{ lakerank_lib.record_commit_sql(this, w['to'], properties={'lakerank.window_from': w['from']}) }}
{%- endmacro %}


{#- Whether this build rewrote no slice (the scope table is empty): the per-slice data tests
    then have nothing to read, and say so without scanning the marts (7 s each at 1e7). -#}
{% macro rank_scope_is_empty() -%}
  {%- if not execute -%}{{ return(false) }}{%- endif -%}
  {%- if not adapter.lakerank_table_exists(ref('int_contract_rank_scope')) -%}{{ return(true) }}{%- endif -%}
  {{ return(lakerank_lib.query_values(
      "select count(*) from " ~ ref('int_contract_rank_scope'))[0] | int == 0) }}
{%- endmacro %}


{#- Whether `relations` (one schema) all exist at one commit: a check that compares them is
    meaningful only then. The zipper and the fact are built side by side from the same
    index, so a selection that builds one (`--select +fct_contract_rank`) leaves the other
    absent or at an older commit. -#}
{% macro at_one_commit(relations) -%}
  {%- if not execute -%}{{ return(true) }}{%- endif -%}
  {%- set info = adapter.lakerank_tables_info(relations) -%}  {#- one metastore call -#}
  {%- set commits = [] -%}
  {%- for r in relations -%}
    {%- if not info[r.identifier]['exists'] -%}{{ return(false) }}{%- endif -%}
    {%- do commits.append(info[r.identifier]['properties'].get(lakerank_lib.commit_property(), 'none')) -%}
  {%- endfor -%}
  {{ return(commits | unique | list | length == 1) }}
{%- endmacro %}
