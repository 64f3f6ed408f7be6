{#-
  The build's one-screen summary (no seed table: Flink shows this in its web UI),
  an on-run-end hook of every `dbt build` / `dbt run`: events landed, applied and quarantined,
  the contracts whose rank in their block was written and the projects touched, models and tests by outcome, seconds per stage. It is
  logged and appended to `<target schema>.build_summary` (one row a build), for a scheduler to
  alert on (docs/operations.md). Its events are the ingest's commits since the last row's
  `to_commit` (the ingest's head then), its ranks the stored ranks' commits since the last
  row's `ranks_to_commit` (their watermark then), so every event and rank change is counted
  in exactly one row, also when a build failed half-way, or ran the ingest alone, and the
  next one finished its commits.
  LAKERANK_BUILD_SUMMARY=off in the environment skips it (lakerank's own tests do, but
  test_pipeline_exact).
-#}
{% macro build_summary(results) -%}
  {%- if not execute or flags.WHICH not in ('build', 'run') or env_var('LAKERANK_BUILD_SUMMARY', 'on') == 'off' -%}
    {{ return('') }}
  {%- endif -%}
  {%- set summary = adapter.Relation.create(schema=target.schema, identifier='build_summary', type='table') -%}
  {%- set changelog = adapter.Relation.create(schema=target.schema, identifier='stg_contract_changelog') -%}
  {%- set ingest_log = adapter.Relation.create(schema=target.schema, identifier='stg_contract_ingest_log') -%}
  {%- set blk = adapter.Relation.create(schema=target.schema, identifier='int_contract_block_rank', type='view') -%}
  {%- set ranks = adapter.Relation.create(schema=target.schema, identifier='int_contract_block_rank__audit_log') -%}
  {%- set offsets = adapter.Relation.create(schema=target.schema, identifier='int_project_block_offset__audit_log') -%}
  {%- set info = adapter.lakerank_tables_info([summary, changelog, ingest_log, blk, ranks, offsets]) -%}
  {%- set recorded = info[summary.identifier]['properties'] -%}
  {%- set to_commit = info[changelog.identifier]['properties'].get(lakerank_lib.commit_property(), '-1') | int -%}
  {#- Two windows: the events of the ingest's commits since the last row's `to_commit`, the
      ranks of the rank tables' commits since its `ranks_to_commit` (the stored ranks'
      watermark then: an ingest run alone leaves them behind, and the build that commits them
      counts them). A table from before `ranks_to_commit` gains the column, its rows' NULL
      read as their `to_commit`. -#}
  {%- set old_table = info[summary.identifier]['exists'] and recorded.get('lakerank.ranks_commit_id') is none
        and 'ranks_to_commit' not in adapter.get_columns_in_relation(summary) | map(attribute='name') | list -%}
  {%- if old_table -%}
    {% call statement('add_ranks_to_commit') -%}
      alter table {{ summary }} add columns (ranks_to_commit bigint)
    {%- endcall %}
  {%- endif -%}
  {%- set since = '(select coalesce(max(to_commit), -1) from ' ~ summary ~ ')' if info[summary.identifier]['exists'] else '-1' -%}
  {%- set ranks_since = '(select coalesce(max(coalesce(ranks_to_commit, to_commit)), -1) from ' ~ summary ~ ')'
                        if info[summary.identifier]['exists'] else '-1' -%}
  {%- set ranks_to = info[blk.identifier]['properties'].get(lakerank_lib.commit_property(), '-1') | int -%}
  {%- set window = '_commit_id > ' ~ since ~ ' and _commit_id <= ' ~ to_commit -%}
  {%- set ranks_window = '_commit_id > ' ~ ranks_since ~ ' and _commit_id <= ' ~ ranks_to -%}
  {%- set parts = [since] -%}
  {#- projects with a changed stored rank or a changed block (the offsets' log, once it exists) -#}
  {%- set changed = [ranks] + ([offsets] if info[offsets.identifier]['exists'] else []) -%}
  {%- set selects = [] -%}
  {%- for rel in changed -%}{%- do selects.append("select project_id from " ~ rel ~ " where " ~ ranks_window) -%}{%- endfor -%}
  {%- set touched = "(select count(distinct project_id) from (" ~ selects | join(' union all ') ~ ") as changed)" -%}
  {%- for rel, exprs, where, none_yet in [
        (ingest_log, 'coalesce(sum(events_landed), 0), coalesce(sum(applied), 0), coalesce(sum(quarantined), 0)',
         window, '0,0,0'),
        (ranks, "count_if(rowkind = '+I'), count_if(rowkind = '+U'), count_if(rowkind = '-D'), " ~ touched,
         ranks_window, '0,0,0,0')] -%}
    {%- if info[rel.identifier]['exists'] -%}
      {%- do parts.append("(select concat_ws(',', " ~ exprs ~ ") from " ~ rel ~ " where " ~ where ~ ")") -%}
    {%- else -%}
      {%- do parts.append("'" ~ none_yet ~ "'") -%}
    {%- endif -%}
  {%- endfor -%}
  {#- the last summary's windows, recorded on the table after its row: when both are at their
      heads nothing is new since that row and the counts are zero without a read (a kill
      between the row and the record leaves them behind, and the query below counts from the
      rows) -#}
  {%- if recorded.get(lakerank_lib.commit_property()) == to_commit | string
        and recorded.get('lakerank.ranks_commit_id') == ranks_to | string -%}
    {%- set values = [to_commit, 0, 0, 0, 0, 0, 0, 0] -%}
  {%- else -%}
    {%- set values = lakerank_lib.query_values("select concat_ws(',', " ~ parts | join(', ') ~ ")")[0].split(',') | map('int') | list -%}
  {%- endif -%}
  {%- set from_commit = values[0] -%}
  {%- set counts = dict(zip(['events_landed', 'events_applied', 'events_quarantined', 'ranks_inserted',
                             'ranks_updated', 'ranks_deleted', 'projects_touched'], values[1:])) -%}
  {%- set times = lakerank_lib.run_stage_times(results) -%}
  {%- set failed = times.status.get('model:error', 0) + times.status.get('test:fail', 0) + times.status.get('test:error', 0) -%}
  {%- set status = 'error' if failed else 'success' -%}
  {#- total_seconds is typed, not a bare literal: the table takes its column types from its first row -#}
  {%- set row = {
        'invocation_id': "'" ~ invocation_id ~ "'",
        'command': "'" ~ flags.WHICH ~ "'",
        'finished_at': 'current_timestamp()',
        'status': "'" ~ status ~ "'",
        'from_commit': from_commit, 'to_commit': to_commit,
        'ranks_to_commit': 'cast(' ~ ranks_to ~ ' as bigint)',
        'events_landed': counts.events_landed, 'events_applied': counts.events_applied,
        'events_quarantined': counts.events_quarantined,
        'ranks_inserted': counts.ranks_inserted, 'ranks_updated': counts.ranks_updated,
        'ranks_deleted': counts.ranks_deleted, 'projects_touched': counts.projects_touched,
        'nodes': "'" ~ tojson(times.status) ~ "'",
        'stage_seconds': "'" ~ tojson(times.seconds) ~ "'",
        'total_seconds': 'cast(' ~ '%.3f' | format(times.total) ~ ' as decimal(12, 3))',
  } -%}
  {% do lakerank_lib.append_summary_row(summary, row, info[summary.identifier]['exists']) %}
  {% call statement('record_' ~ summary.identifier) -%}
    {{ lakerank_lib.record_commit_sql(summary, to_commit, properties={'lakerank.ranks_commit_id': ranks_to}) }}
  {%- endcall %}
  {%- set lines = [
        'lakerank build summary: ' ~ status ~ ', commits ' ~ (from_commit + 1) ~ '..' ~ to_commit
          ~ ' (invocation ' ~ invocation_id[:8] ~ ', table ' ~ summary ~ ')',
        '  events  landed ' ~ counts.events_landed ~ '  applied ' ~ counts.events_applied
          ~ '  quarantined ' ~ counts.events_quarantined ~ '  not applied (no-op, stale, before-image, skipped) '
          ~ (counts.events_landed - counts.events_applied - counts.events_quarantined),
        '  ranks   +I ' ~ counts.ranks_inserted ~ '  +U ' ~ counts.ranks_updated ~ '  -D ' ~ counts.ranks_deleted
          ~ '  projects touched ' ~ counts.projects_touched,
        '  nodes   ' ~ lakerank.summary_pairs(times.status, '%d'),
        '  seconds ' ~ lakerank.summary_pairs(times.seconds, '%.1f') ~ '  (total ' ~ '%.3f' | format(times.total) ~ ')',
  ] -%}
  {{ log(lines | join('\n'), info=true) }}
  {{ return('') }}
{%- endmacro %}


{#- `key value` pairs of a dict, sorted by key, values formatted with `fmt`. -#}
{% macro summary_pairs(values, fmt) -%}
  {%- set out = [] -%}
  {%- for key, value in values.items() | sort -%}{%- do out.append(key ~ ' ' ~ fmt | format(value)) -%}{%- endfor -%}
  {{ return(out | join('  ')) }}
{%- endmacro %}
