{#-
  The rank rewrite: seed 000's stages 2-6 in one set-based pass over a build's contract
  changes, in the offsets layout (docs/decisions/0004-one-commit-per-batch.md). A project's
  contracts are cut into blocks, the months of their segment starts (`rank_block`); a rank
  is stored inside its block and resolved when read from one offset per (project, block),
  the positions the project's earlier blocks use. A late, moved or deleted contract then
  rewrites its own block and its project's offsets, never the later blocks' contracts. The
  rank tables it maintains (`rank_tables`), each committed as a diff against its own rows:
    - `int_contract_block_rank` (part 'blk'): each live contract with `mem_rn` (stage 2, its
      rank in its (project, segment) slice), its `block` and `block_rn`, its rank there;
    - `int_project_block_offset` (part 'off'): each (project, block) holding a contract, with
      its `positions` (the rank positions its contracts use), `block_offset` (stage 3's
      accumulation: the positions of the project's earlier blocks), its first and last sign
      time, and `next_start`, the first sign time of the project's next block;
    - `int_project_block_version` (part 'ver'): stage 5's zipper inside a block: a version
      per (project, distinct sign time), the positions used through it in its block, and
      the block's next sign time (`ver_end`, NULL for the block's last);
    - `int_project_rank_accumulation` (part 'acc'): stage 3's row a project.
  `fct_contract_rank` (stage 6, `asc_rn = block_offset + block_rn`), `dim_project_rank_version`
  and `fct_contract_rank_changelog` are views over them (macros/pipeline/rank_views.sql).

  Per project with changes, the touched blocks are those any change touches (before or
  after image): they are ranked again whole, and the offsets of all the project's blocks are
  summed again (an untouched block's positions come from its stored row).

  It runs in two steps, so that each merge-on-read view is read once (Spark runs a CTE
  again at every reference): `rank_inputs()` reads what the pass needs - the touched blocks
  ('scope'), each changed contract's latest image ('chg'), and the rows each rank table holds
  under its rewrite predicate ('<part>_old', which each table's commit diffs against instead
  of reading its view again) - and `rank_results(inputs)` (macros/pipeline/rank_results.sql)
  computes from those rows the complete new contents of each table under that predicate.
  `int_contract_rank_rewrite` stores the inputs and then inserts the results;
  `rank_rewrite()` is both in one query, for a rank table that expands the rewrite itself
  (`rank_rewrite_for`).

  Its window is (the oldest watermark of the rank tables, the ingest's head]: the old state
  it reads is each table's current rows, and a table ahead of the others (a build killed
  between two commits) holds changes the window applies again, which leaves a contract
  where it is. So the new rows are right for every table, whatever commit each is at, and
  each table diffs them against its own rows.
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


{#- The block of a segment start: its month, on the wall clock (zone-free). Ties share a
    sign time, so a segment, so a block. -#}
{% macro rank_block(segment_start) -%}
  cast(trunc(cast({{ segment_start }} as date), 'MM') as timestamp_ntz)
{%- endmacro %}


{#- The rows the rank pass reads (parts scope, chg and `<part>_old` for each rank table),
    each rank table read once, with its rewrite predicate on its base and changes
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
  {%- set parts = [('scope', 'touched'), ('chg', 'latest')] -%}
  {%- for table in state -%}{%- do parts.append((table ~ '_old', none)) -%}{%- endfor -%}
  with
  changes as (
      select
          *,
          {{ lakerank.rank_block('segment_start') }} as block
      from ({{ lakerank.contract_changes(window) }}) as window_changes
  ),
  touched as (
      select distinct
          project_id,
          block
      from changes
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
  {%- for part, source in parts %}
  {{ lakerank.rank_rewrite_row(part) }}
  {%- if source %}
  from {{ source }}
  {%- else %}
  {%- set table = part[:-4] %}
  {%- set predicate = lakerank.rank_rewrite_predicate(table, 'touched') %}
  from {{ lakerank_lib.merge_on_read_rows(state[table], predicate, lakerank.rank_columns(table))
          if state[table] is not string else state[table] }} as t
  where {{ predicate }}
  {%- endif %}
  {{ 'union all' if not loop.last }}
  {%- endfor %}
  {%- endif -%}
{%- endmacro %}


{#- One part of the rewrite's rows: `part`'s own columns, the others NULL (all typed), and
    `part` last (the table is partitioned by it). -#}
{% macro rank_rewrite_row(part) -%}
  {%- set table = (part or '').replace('_old', '') -%}
  {%- set own = lakerank.rank_columns(table) if part else [] -%}
  select
  {%- for name, type in lakerank.rank_column_types().items() %}
      cast({{ name if name in own else 'null' }} as {{ type }}) as {{ name }},
  {%- endfor %}
      cast({{ "'" ~ part ~ "'" if part else 'null' }} as string) as part
{%- endmacro %}


{#- The rows of a rank table (`part`, alias `t`) the rewrite recomputes: a touched project's
    rows of its touched blocks (blk, ver), or all of them (off, acc). `scope`: a relation or
    CTE with the touched (`project_id`, `block`). Each depends on the row's own columns
    (`lakerank_lib.merge_on_read_rows`). -#}
{% macro rank_rewrite_predicate(part, scope) -%}
    t.project_id in (select project_id from {{ scope }})
  {%- if part in ('blk', 'ver') %}
    and exists (select 1 from {{ scope }} as s where s.project_id = t.project_id and s.block = t.block)
  {%- endif -%}
{%- endmacro %}


{#- The type of every column the rewrite returns but `part`, in its order. -#}
{% macro rank_column_types() -%}
  {{ return({
      'project_id': 'bigint', 'block': 'timestamp_ntz', 'contract_id': 'bigint',
      'sign_time': 'timestamp_ntz', 'amount': 'decimal(18,2)', 'segment_start': 'timestamp_ntz',
      'mem_rn': 'bigint', 'block_rn': 'bigint', 'positions': 'bigint', 'block_offset': 'bigint',
      'first_sign_time': 'timestamp_ntz', 'last_sign_time': 'timestamp_ntz', 'next_start': 'timestamp_ntz',
      'ver_start': 'timestamp_ntz', 'ver_end': 'timestamp_ntz', 'positions_through': 'bigint',
      'max_rn': 'bigint', 'max_event_time': 'timestamp_ntz', 'rowkind': 'string',
  }) }}
{%- endmacro %}


{#- The columns of a rank table (`part`: blk, off, ver, acc), as the rewrite returns them, and
    of its touched blocks (scope) and changed contracts' latest images (chg). -#}
{% macro rank_columns(part) -%}
  {{ return({
      'blk': ['project_id', 'contract_id', 'sign_time', 'amount', 'segment_start', 'mem_rn', 'block', 'block_rn'],
      'off': ['project_id', 'block', 'positions', 'block_offset', 'first_sign_time', 'last_sign_time', 'next_start'],
      'ver': ['project_id', 'ver_start', 'ver_end', 'block', 'positions_through', 'segment_start'],
      'acc': ['project_id', 'max_rn', 'max_event_time'],
      'scope': ['project_id', 'block'],
      'chg': ['project_id', 'contract_id', 'sign_time', 'amount', 'segment_start', 'block', 'rowkind'],
  }[part]) }}
{%- endmacro %}


{#- A rank table model's SELECT (`part`: blk, off, ver, acc): declares its rewrite
    (`rank_rewrite_for`) and returns its new rows. -#}
{% macro rank_table_rows(part) -%}
  {%- set rewrite = lakerank.rank_rewrite_for(part) -%}
  {%- do lakerank_lib.declare_rewrite(rewrite.predicate, prior=rewrite.prior, prior_columns=rewrite.prior_columns) -%}
  select {{ lakerank.rank_columns(part) | join(', ') }}
  from {{ rewrite.relation }}
  where part = '{{ part }}'
{%- endmacro %}


{#- A rank table's (`part`: blk, off, ver, acc) rewrite, for its model: `relation`, the rewrite it
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
          '(select project_id, block from ' ~ relation ~ " where part = 'scope')"),
      'prior': prior,
      'prior_columns': known,
  }) }}
{%- endmacro %}


{#- The rewrite's commit window {'from', 'to', 'pending', 'built', 'built_for', 'exists'}
    ('exists': whether `int_contract_rank_rewrite` is in the catalog): the one
    `int_contract_rank_rewrite` recorded when it was built in this invocation (`built`:
    it holds this window's rows), else (the oldest watermark of the four rank tables, the
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


{#- The rank tables, by part, in the target schema (read here by name, not `ref`: they are
    downstream of the rewrite, whose input is their state before this build). -#}
{% macro rank_tables() -%}
  {%- set out = {} -%}
  {%- for part, name in [('blk', 'int_contract_block_rank'), ('off', 'int_project_block_offset'),
                         ('ver', 'int_project_block_version'), ('acc', 'int_project_rank_accumulation')] -%}
    {%- do out.update({part: api.Relation.create(schema=this.schema, identifier=name, type='view')}) -%}
  {%- endfor -%}
  {{ return(out) }}
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
