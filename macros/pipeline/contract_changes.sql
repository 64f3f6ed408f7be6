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
  from {{ lakerank_lib.pending_rows(ref('stg_contract_changelog')) }}
{%- endmacro %}


{#- The pipeline's commit window: every pipeline model's commit source is
    stg_contract_changelog (lakerank_lib.commit_window). -#}
{% macro contract_window() -%}
  {{ return(lakerank_lib.commit_window(ref('stg_contract_changelog'))) }}
{%- endmacro %}


{#- The rows of a rank table (`fct_contract_rank`, `dim_project_rank_version`) a rank
    rewrite recomputes, as a merge_on_read predicate (alias `t`): the scoped projects'
    segments from `boundary` (`touched_from` or `rewrite_from`) on. -#}
{% macro rank_rewrite_predicate(boundary) -%}
(t.project_id, t.segment_start) in (
        select project_id, segment_start from {{ lakerank.rank_scope_relation() }}
        where segment_start >= {{ boundary }})
{%- endmacro %}


{#- The rank positions a project's segments before this one use: the running sum of
    `positions` over the project's earlier segments (rows with `project_id`, `segment_start`). -#}
{% macro positions_before(positions='positions') -%}
  coalesce(sum({{ positions }}) over (
      partition by project_id order by segment_start
      rows between unbounded preceding and 1 preceding), 0)
{%- endmacro %}


{#- The accumulation's per-segment index of the projects in a `scope` CTE (with `project_id`):
    the rank positions each project uses in (`positions`) and before (`base_positions`) each
    of its segments. The per-slice data test checks the marts against it; the scope table
    computes the same entries with the window's emptied segments added. -#}
{% macro segment_index() -%}
  select
    project_id,
    segment_start,
    positions,
    {{ lakerank.positions_before() }} as base_positions
  from (
    select a.project_id, s.segment_start, s.positions
    from {{ ref('int_project_rank_accumulation') }} as a
    lateral view explode(a.segments) e as s
    where a.project_id in (select project_id from scope)
  )
{%- endmacro %}


{#- The index entries of the slices a rank rewrite recomputes, from the scope table (which
    read them from the accumulation once for the build): the zipper and the fact join this
    small table instead of each reading the accumulation's merge-on-read view. -#}
{% macro segment_bases() -%}
  select project_id, segment_start, positions, base_positions
  from {{ lakerank.rank_scope_relation() }}
{%- endmacro %}


{#- The scope every rank rewrite starts from, as a CTE: per touched project,
    `touched_from` and `rewrite_from`. -#}
{% macro rank_rewrite_scope() -%}
scope as (
    select distinct
        project_id,
        touched_from,
        rewrite_from
    from {{ lakerank.rank_scope_relation() }}
)
{%- endmacro %}
