{#-
  The rank rewrite: seed 000's stages 2-6 in one set-based pass over a build's contract
  changes, for the rank tables it maintains: `fct_contract_rank` (the fact),
  `dim_project_rank_version` (the zipper) and `int_project_rank_accumulation`.

  Per project with changes, `touched_from` is its earliest segment any change touches
  (before or after image). Everything before it is unchanged; from it on ("the tail") the
  project is re-ranked:
    - stage 2, segment ranking: `mem_rn`, the rank inside each (project, segment) slice;
    - stage 3, accumulation: `base`, the rank positions the project uses before
      `touched_from` - the `base_max_rn` of the old fact's first tail row, else (an empty
      old tail) the value of the zipper version in force at `touched_from`, else 0;
    - stage 6, lookup: `asc_rn = base + the rank over the tail`, `base_max_rn = asc_rn - mem_rn`
      (the positions the project's earlier segments use);
    - stage 5, zipper: one version per distinct sign time of the tail, plus the version in
      force at `touched_from`, whose end moves to the tail's first sign time;
    - the accumulation's row: positions used and latest sign time.

  It runs in two steps, so that each merge-on-read view is read once (Spark runs a CTE
  again at every reference): `rank_inputs()` reads what the pass needs - the touched
  projects ('scope'), each changed contract's latest image ('chg'), and the rows each rank
  table holds under its rewrite predicate ('fct_old', 'dim_old', 'acc_old', which each
  table's commit diffs against instead of reading its view again) - and
  `rank_results(inputs)` computes from those rows the complete new contents of each table
  under that predicate ('fct', 'dim', 'acc'). `int_contract_rank_rewrite` stores the inputs
  and then inserts the results; `rank_rewrite()` is both in one query, for a rank table that
  expands the rewrite itself (`rank_rewrite_for`).

  Its window is (the oldest watermark of the three tables, the ingest's head]: the old
  state it reads is each table's current rows, and a table ahead of the others (a build
  killed between two commits) holds changes the window applies again, which leaves a
  contract where it is. So the new rows are right for every table, whatever commit each
  is at, and each table diffs them against its own rows.
-#}
{% macro rank_rewrite(window) -%}
  {%- if not window['pending'] -%}
  {{ lakerank.rank_inputs(window) }}
  {%- else -%}
  with rank_inputs as (
      {{ lakerank.rank_inputs(window) }}
  )
  select * from rank_inputs
  union all
  select * from (
      {{ lakerank.rank_results('rank_inputs') }}
  ) as rank_results
  {%- endif -%}
{%- endmacro %}


{#- The rows the rank pass reads (parts scope, chg, fct_old, dim_old, acc_old), each rank
    table read once, with its rewrite predicate on its base and changes
    (`lakerank_lib.merge_on_read_rows`). `window`: the rewrite's (default: taken now). -#}
{% macro rank_inputs(window=none) -%}
  {%- set window = window or lakerank.rank_rewrite_window() -%}
  {%- if not window['pending'] -%}
  {#- nothing pending: no row, and no read of a merge-on-read view, whose analysis alone is
      most of an empty build's cost in a fresh JVM -#}
  {{ lakerank.rank_rewrite_row(none) }}
  where false
  {%- else -%}
  {%- set state = lakerank.rank_state(window) -%}
  with
  changes as (
      {{ lakerank.contract_changes(window) }}
  ),
  touched as (
      select
          project_id,
          min(segment_start) as touched_from
      from changes
      group by project_id
  ),
  latest as (
      select *
      from (
          select
              *,
              row_number() over (partition by contract_id order by _commit_id desc, _seq desc) as change_order
          from changes
      ) as ordered_changes
      where change_order = 1
  )
  {%- for part, source, table in [
        ('scope', 'touched', none), ('chg', 'latest', none), ('fct_old', none, 'fct'),
        ('dim_old', none, 'dim'), ('acc_old', none, 'acc')] %}
  {{ lakerank.rank_rewrite_row(part) }}
  {%- if source %}
  from {{ source }}
  {%- else %}
  {%- set predicate = lakerank.rank_rewrite_predicate(table, 'touched') %}
  from {{ lakerank_lib.merge_on_read_rows(state[table], predicate, lakerank.rank_columns(table))
          if state[table] is not string else state[table] }} as t
  where {{ predicate }}
  {%- endif %}
  {{ 'union all' if not loop.last }}
  {%- endfor %}
  {%- endif -%}
{%- endmacro %}


{#- The new rows of the rank tables (parts fct, dim, acc), from the rank pass's input rows
    in `inputs` (a relation or CTE holding `rank_inputs()`). -#}
{% macro rank_results(inputs) -%}
  {%- set open_end = lakerank_lib.open_version_end() -%}
  with
  {%- for part in ['scope', 'chg', 'fct_old', 'dim_old'] %}
  {{ part }}_rows as (
      select {{ lakerank.rank_columns(part.replace('_old', '')) | join(', ') }}
      from {{ inputs }}
      where part = '{{ part }}'
  ),
  {%- endfor %}
  head_version as (
      select dim_old_rows.*
      from dim_old_rows
      inner join scope_rows on dim_old_rows.project_id = scope_rows.project_id
      where dim_old_rows.ver_start < scope_rows.touched_from
  ),
  new_tail as (
      select fct_old_rows.project_id, fct_old_rows.contract_id, fct_old_rows.sign_time, fct_old_rows.amount, fct_old_rows.segment_start
      from fct_old_rows
      left anti join chg_rows on fct_old_rows.contract_id = chg_rows.contract_id
      union all
      select project_id, contract_id, sign_time, amount, segment_start
      from chg_rows
      where rowkind in ('+I', '+U')
  ),
  bases as (
      select
          scope_rows.project_id,
          coalesce(tail_base.base, head_version.base_max_rn, 0) as base
      from scope_rows
      left join (
          select project_id, min(base_max_rn) as base from fct_old_rows group by project_id
      ) as tail_base on scope_rows.project_id = tail_base.project_id
      left join head_version on scope_rows.project_id = head_version.project_id
  ),
  ranked as (
      select
          new_tail.project_id,
          new_tail.contract_id,
          new_tail.sign_time,
          new_tail.amount,
          new_tail.segment_start,
          cast({{ lakerank.rank_over('new_tail.project_id, new_tail.segment_start') }} as bigint) as mem_rn,
          bases.base + {{ lakerank.rank_over('new_tail.project_id') }} as asc_rn,
          bases.base + {{ lakerank.positions_through(lakerank.rank_over('new_tail.project_id'), 'new_tail.project_id') }}
              as positions_through
      from new_tail
      inner join bases on new_tail.project_id = bases.project_id
  ),
  points as (
      select project_id, sign_time as ver_start, max(positions_through) as base_max_rn, max(segment_start) as segment_start
      from ranked
      group by project_id, sign_time
      union all
      select project_id, ver_start, base_max_rn, segment_start
      from head_version
  ),
  versions as (
      {{ lakerank_lib.zipper(
          'points', ['project_id'], 'ver_start', ['base_max_rn', 'segment_start'],
          change_order=[], rowkind=none, open_end=open_end) }}
  ),
  accumulated as (
      select
          bases.project_id,
          coalesce(tail.positions, bases.base) as max_rn,
          coalesce(tail.max_sign_time, head_version.ver_start) as max_event_time
      from bases
      left join (
          select project_id, max(positions_through) as positions, max(sign_time) as max_sign_time
          from ranked
          group by project_id
      ) as tail on bases.project_id = tail.project_id
      left join head_version on bases.project_id = head_version.project_id
  )
  {%- for part, source, condition in [
        ('fct', 'ranked', ''), ('dim', 'versions', ''), ('acc', 'accumulated', 'where max_rn > 0')] %}
  {{ lakerank.rank_rewrite_row(part) }}
  from {{ source }} {{ condition }}
  {{ 'union all' if not loop.last }}
  {%- endfor %}
{%- endmacro %}


{#- One part of the rewrite's rows: `part`'s own columns, the others NULL (all typed), and
    `part` last (the table is partitioned by it). A new fact row's `base_max_rn` is
    `asc_rn - mem_rn`. -#}
{% macro rank_rewrite_row(part) -%}
  {%- set table = (part or '').replace('_old', '') -%}
  {%- set own = lakerank.rank_columns(table) if part else [] -%}
  select
  {%- for name, type in lakerank.rank_column_types().items() %}
      {% if part == 'fct' and name == 'base_max_rn' -%}
      cast(asc_rn - mem_rn as {{ type }})
      {%- elif name in own -%}
      cast({{ name }} as {{ type }})
      {%- else -%}
      cast(null as {{ type }})
      {%- endif %} as {{ name }},
  {%- endfor %}
      cast({{ "'" ~ part ~ "'" if part else 'null' }} as string) as part
{%- endmacro %}


{#- The rows of a rank table (`part`: fct, dim, acc; alias `t`) the rewrite recomputes: the
    touched projects' rows from `touched_from` on (the zipper: the versions that end at or
    after it). `scope`: a relation or CTE with `project_id`, `touched_from`. -#}
{% macro rank_rewrite_predicate(part, scope) -%}
  {%- if part == 'acc' -%}
    t.project_id in (select project_id from {{ scope }})
  {%- else -%}
    t.project_id in (select project_id from {{ scope }})
    and exists (
        select 1 from {{ scope }} as s
        where s.project_id = t.project_id
        and {{ 't.segment_start' if part == 'fct' else 'coalesce(t.ver_end, ' ~ lakerank_lib.open_version_end() ~ ')' }}
            >= s.touched_from)
  {%- endif -%}
{%- endmacro %}


{#- The type of every column the rewrite returns but `part`, in its order. -#}
{% macro rank_column_types() -%}
  {{ return({
      'project_id': 'bigint', 'touched_from': 'timestamp_ntz', 'contract_id': 'bigint',
      'sign_time': 'timestamp_ntz', 'amount': 'decimal(18,2)', 'segment_start': 'timestamp_ntz',
      'mem_rn': 'bigint', 'base_max_rn': 'bigint', 'asc_rn': 'bigint', 'ver_start': 'timestamp_ntz',
      'ver_end': 'timestamp_ntz', 'max_rn': 'bigint', 'max_event_time': 'timestamp_ntz',
      'rowkind': 'string',
  }) }}
{%- endmacro %}


{#- The columns of a rank table (`part`: fct, dim, acc), as the rewrite returns them, and of
    its touched projects (scope) and changed contracts' latest images (chg). -#}
{% macro rank_columns(part) -%}
  {{ return({
      'fct': ['project_id', 'contract_id', 'sign_time', 'amount', 'mem_rn', 'segment_start', 'base_max_rn', 'asc_rn'],
      'dim': ['project_id', 'ver_start', 'ver_end', 'base_max_rn', 'segment_start'],
      'acc': ['project_id', 'max_rn', 'max_event_time'],
      'scope': ['project_id', 'touched_from'],
      'chg': ['project_id', 'contract_id', 'sign_time', 'amount', 'segment_start', 'rowkind'],
  }[part]) }}
{%- endmacro %}


{#- A rank table's (`part`: fct, dim, acc) rewrite, for its model: `relation`, the rewrite it
    reads (`int_contract_rank_rewrite` when that was built in this invocation or for the
    window the rank tables need now, else the same SQL expanded here: a `--select` without
    the rewrite, a --full-refresh of one rank table), and what its merge_on_read commit
    replaces: `predicate` and, as the rows it diffs against, `prior`, the ones the rewrite
    read from this table (`<part>_old`, of `prior_columns`: a table with another column
    reads its view). No prior when the rewrite started from nothing (a rank table missing,
    or --full-refresh: it read no table, while this one may hold rows). The model passes
    the last three to `lakerank_lib.declare_rewrite`. -#}
{% macro rank_rewrite_for(part) -%}
  {%- set rewrite = ref('int_contract_rank_rewrite') -%}
  {%- set known = lakerank.rank_columns(part) -%}
  {%- set window = lakerank.rank_rewrite_window() -%}
  {%- if not execute -%}
    {{ return({'relation': rewrite, 'predicate': 'true', 'prior': none, 'prior_columns': known}) }}
  {%- endif -%}
  {%- if window['built'] -%}
    {%- set relation = rewrite | string -%}
  {%- else -%}
    {%- if window['pending'] -%}
    {%- do log(this ~ ": the rank rewrite was built for commits " ~ window['built_for'] | join('..')
               ~ ", the rank tables need " ~ window['from'] ~ ".." ~ window['to'] ~ "; expanding it here") -%}
    {%- endif -%}
    {%- set relation = '(\n' ~ lakerank.rank_rewrite(window) ~ '\n)' -%}
  {%- endif -%}
  {%- set prior = none -%}
  {%- if window['from'] != -1 -%}
    {%- set prior = 'select ' ~ known | join(', ') ~ ' from ' ~ relation ~ " where part = '" ~ part ~ "_old'" -%}
  {%- endif -%}
  {{ return({
      'relation': relation,
      'predicate': lakerank.rank_rewrite_predicate(part,
          '(select project_id, touched_from from ' ~ relation ~ " where part = 'scope')"),
      'prior': prior,
      'prior_columns': known,
  }) }}
{%- endmacro %}


{#- The rewrite's commit window {'from', 'to', 'pending', 'built', 'built_for', 'exists'}
    ('exists': whether `int_contract_rank_rewrite` is in the catalog): the one
    `int_contract_rank_rewrite` recorded when it was built in this invocation (`built`:
    it holds this window's rows), else (the oldest watermark of the three rank tables, the
    ingest's head], from -1 on --full-refresh or when one of them does not exist yet. So
    every rank table of a build reads the window the rewrite was built for, whatever
    commits of the others landed since (the rewrite runs first). One metastore call. -#}
{% macro rank_rewrite_window() -%}
  {%- set source = ref('stg_contract_changelog') -%}
  {%- if not execute -%}{{ return({'from': -1, 'to': -1, 'pending': false, 'built': false, 'built_for': [],
                                    'exists': false}) }}{%- endif -%}
  {#- by name, not `ref`: the rewrite model itself takes the window it is built for -#}
  {%- set rewrite = api.Relation.create(schema=this.schema, identifier='int_contract_rank_rewrite') -%}
  {%- set tables = lakerank.rank_tables().values() | list -%}
  {%- set info = adapter.lakerank_tables_info([source, rewrite] + tables) -%}
  {%- set recorded = info[rewrite.identifier]['properties'] -%}
  {%- set built_for = [recorded.get('lakerank.window_from', 'none'), recorded.get(lakerank_lib.commit_property(), 'none')] -%}
  {%- if recorded.get('lakerank.invocation_id') == invocation_id -%}
    {%- set from, head = built_for[0] | int, built_for[1] | int -%}
  {%- else -%}
    {%- set head = info[source.identifier]['properties'].get(lakerank_lib.commit_property(), '-1') | int -%}
    {%- set marks = [] -%}
    {%- for relation in tables -%}
      {%- set entry = info[relation.identifier] -%}
      {%- do marks.append(entry['properties'].get(lakerank_lib.commit_property(), '-1') | int if entry['exists'] else -1) -%}
    {%- endfor -%}
    {%- set from = -1 if should_full_refresh() else marks | min -%}
  {%- endif -%}
  {{ return({'from': from, 'to': head, 'pending': head > from,
             'built': built_for == [from | string, head | string], 'built_for': built_for,
             'exists': info[rewrite.identifier]['exists']}) }}
{%- endmacro %}


{#- The three rank tables, by role, in the target schema (read here by name, not `ref`: they
    are downstream of the rewrite, whose input is their state before this build). -#}
{% macro rank_tables() -%}
  {{ return({
      'fct': api.Relation.create(schema=this.schema, identifier='fct_contract_rank', type='view'),
      'dim': api.Relation.create(schema=this.schema, identifier='dim_project_rank_version', type='view'),
      'acc': api.Relation.create(schema=this.schema, identifier='int_project_rank_accumulation', type='view'),
  }) }}
{%- endmacro %}


{#- Each rank table's current rows, or an empty relation of its columns when the rewrite
    starts from nothing (--full-refresh, or the table is missing). -#}
{% macro rank_state(window) -%}
  {%- set fresh = window['from'] == -1 -%}
  {%- set types = lakerank.rank_column_types() -%}
  {%- set out = {} -%}
  {%- for part, relation in lakerank.rank_tables().items() -%}
    {%- if fresh -%}
      {%- set columns = [] -%}
      {%- for c in lakerank.rank_columns(part) -%}
        {%- do columns.append('cast(null as ' ~ types[c] ~ ') as ' ~ c) -%}
      {%- endfor -%}
      {%- do out.update({part: '(select ' ~ columns | join(', ') ~ ' where false)'}) -%}
    {%- else -%}
      {%- do out.update({part: relation}) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(out) }}
{%- endmacro %}


{#- Post-hook of int_contract_rank_rewrite, whose query stored the rank pass's inputs: adds
    the results, read from those stored rows (nothing when the window is empty). -#}
{% macro insert_rank_results() -%}
  {%- if execute and lakerank.rank_rewrite_window()['pending'] -%}
  insert into {{ this }}
  {{ lakerank.rank_results(this) }}
  {%- endif -%}
{%- endmacro %}


{#- Post-hook of int_contract_rank_rewrite: the window it was built for, and in which
    invocation (the rank tables of the same build read that window: rank_rewrite_window). -#}
{% macro record_rewrite_window() -%}
  {%- set w = lakerank.rank_rewrite_window() -%}
  {%- if execute -%}{% do lakerank_lib.fault_point('recording') %}{%- endif -%}
  {{ lakerank_lib.record_commit_sql(this, w['to'], properties={'lakerank.window_from': w['from'],
                                                               'lakerank.invocation_id': invocation_id}) }}
{%- endmacro %}


{#- Whether this build rewrote no project (the rewrite holds no scope row): the per-slice
    data test then has nothing to read, and says so without scanning the marts. -#}
{% macro rank_rewrite_is_empty() -%}
  {%- if not execute -%}{{ return(false) }}{%- endif -%}
  {%- set rewrite = ref('int_contract_rank_rewrite') -%}
  {%- if not adapter.lakerank_table_exists(rewrite) -%}{{ return(true) }}{%- endif -%}
  {{ return(lakerank_lib.query_values(
      "select count(*) from " ~ rewrite ~ " where part = 'scope'")[0] | int == 0) }}
{%- endmacro %}
