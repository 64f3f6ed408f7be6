{#- The rank rewrite's checks, on the rows it staged, before any rank table commits them
    (issue Q's "checks inside the commit"): `check_rank_results` is a post-hook of
    int_contract_rank_rewrite that stops the build with the failing rows in its message;
    `rank_slice_problems` is the per-slice query it runs, which the audit test
    `assert_fct_ranks_exact_per_slice` runs too (`dbt test --selector audit`). -#}


{#- The rows of the rewrite `rewrite` (a relation) that break an invariant, one row each, as
    (problem, detail): each (project, segment) slice the rewrite produced holds exact ranks -
    `mem_rn` is the rank function recomputed over the slice, `asc_rn = mem_rn + base_max_rn`,
    `base_max_rn` is the value of the zipper version in force just before the slice's
    segment start (the seed's lookup; 0 before a project's first version), every contract's
    rank agrees with the zipper version that starts at its sign time (positions used by
    contracts signed at or before it: dense_rank equals it; rank is it minus the ties at
    that time plus one; row_number lies within the ties), and every rewritten zipper version
    starts at a live contract's sign time; and the staged fact and zipper rows have their
    key once and no NULL in a column they need. The invariants hold slice by slice (ties share a sign time,
    so a slice), so it reads the rewrite's new rows (parts 'fct' and 'dim': the complete
    contents of each touched project's tail), never the marts' history. -#}
{% macro rank_slice_problems(rewrite) -%}
{%- set fn = lakerank.rank_function() -%}
with

scope as (
    select
        project_id,
        touched_from
    from {{ rewrite }}
    where part = 'scope'
),

fct as (
    select {{ lakerank.rank_columns('fct') | join(', ') }}
    from {{ rewrite }}
    where part = 'fct'
),

zipper as (
    select
        dim.project_id,
        dim.ver_start,
        dim.base_max_rn,
        dim.ver_start < scope.touched_from as is_head
    from {{ rewrite }} as dim
    inner join scope on dim.project_id = scope.project_id
    where dim.part = 'dim'
),

recomputed as (
    select
        *,
        {{ lakerank.rank_over('project_id, segment_start') }} as want_mem_rn,
        min(base_max_rn) over (partition by project_id, segment_start) as slice_base_low,
        max(base_max_rn) over (partition by project_id, segment_start) as slice_base_high,
        count(*) over (partition by project_id, sign_time) as n_ties
    from fct
),

slice_bases as (
    {#- the value of the latest version starting strictly before each slice: slices and
        versions in time order per project, a slice before a version at the same time -#}
    select
        project_id,
        t as segment_start,
        coalesce(last_value(version_base, true) over (
            partition by project_id order by t, is_version
            rows between unbounded preceding and 1 preceding), 0) as want_base,
        is_version
    from (
        select distinct project_id, segment_start as t, 0 as is_version, cast(null as bigint) as version_base
        from fct
        union all
        select project_id, ver_start as t, 1 as is_version, base_max_rn as version_base
        from zipper
    ) as points
),

checked as (
    select
        coalesce(recomputed.project_id, zipper.project_id) as project_id,
        recomputed.segment_start,
        recomputed.contract_id,
        zipper.ver_start,
        recomputed.mem_rn,
        recomputed.want_mem_rn,
        recomputed.base_max_rn,
        recomputed.slice_base_low,
        recomputed.slice_base_high,
        slice_bases.want_base,
        recomputed.asc_rn,
        zipper.base_max_rn as positions_through,
        recomputed.n_ties
    from recomputed
    left join slice_bases
        on
            recomputed.project_id = slice_bases.project_id
            and recomputed.segment_start = slice_bases.segment_start
            and slice_bases.is_version = 0
    full outer join zipper
        on
            recomputed.project_id = zipper.project_id
            and recomputed.sign_time = zipper.ver_start
    where
        recomputed.contract_id is not null
        or not zipper.is_head
)

select
    'slice' as problem,
    to_json(struct(checked.*)) as detail
from checked
where
    contract_id is null
    or mem_rn <> want_mem_rn
    or slice_base_low <> slice_base_high
    or asc_rn <> mem_rn + base_max_rn
    or base_max_rn <> want_base
    or positions_through is null
{%- if fn == 'dense_rank' %}
    or asc_rn <> positions_through
{%- elif fn == 'rank' %}
    or asc_rn <> positions_through - n_ties + 1
{%- else %}
    or asc_rn > positions_through
    or asc_rn <= positions_through - n_ties
{%- endif %}

union all
select
    'duplicate key or NULL column' as problem,
    to_json(struct(part, k1, k2, count(*) as n_rows)) as detail
from (
    select
        part,
        if(part = 'fct', contract_id, project_id) as k1,
        if(part = 'dim', ver_start, null) as k2,
        case part
            when 'fct' then
                sign_time is null or segment_start is null or mem_rn is null
                or base_max_rn is null or asc_rn is null
            else ver_end is null or base_max_rn is null
        end as incomplete
    from {{ rewrite }}
    where part in ('fct', 'dim')
) as staged_keys
group by part, k1, k2
having
    count(*) > 1
    or k1 is null
    or (part = 'dim' and k2 is null)
    or max(incomplete)
{%- endmacro %}


{#- Post-hook of int_contract_rank_rewrite (`rewrite`: `this`), after its results are in:
    stops the build when `rank_slice_problems` finds a row, naming up to 20 of them, so a
    wrong rank never reaches a table. Renders no SQL: the check is a query it runs itself.
    `pending` (default: whether the build's window holds changes): false skips the query,
    as when nothing was rewritten. Also `dbt run-operation check_rank_results --args
    '{rewrite: <schema>.int_contract_rank_rewrite, pending: true}'`. -#}
{% macro check_rank_results(rewrite, pending=none) -%}
  {%- if pending is none and execute -%}{%- set pending = lakerank.rank_rewrite_window()['pending'] -%}{%- endif -%}
  {%- if execute and pending -%}
    {%- set found = run_query("select problem, detail from (" ~ lakerank.rank_slice_problems(rewrite)
                              ~ ") as problems limit 20") -%}
    {%- if found.rows | length > 0 -%}
      {%- set lines = [] -%}
      {%- for row in found.rows -%}{%- do lines.append(row[0] ~ ': ' ~ row[1]) -%}{%- endfor -%}
      {{ exceptions.raise_compiler_error("rank rewrite " ~ rewrite ~ ": its new rows fail the per-slice"
           ~ " check (first " ~ lines | length ~ "), nothing committed:\n" ~ lines | join('\n')) }}
    {%- endif -%}
  {%- endif -%}
{%- endmacro %}
