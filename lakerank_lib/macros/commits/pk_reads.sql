{#-
  Reading a pk_table's history (reference: lakerank_lib/docs/pk_table.md).
-#}

{#- Paimon's `incremental-between`: the audit log of commits in (from_commit, to_commit]
    — start exclusive, end inclusive. -#}
{% macro changes(relation, from_commit, to_commit) -%}
  (select * from {{ lakerank_lib.audit_log(relation) }}
   where _commit_id > {{ from_commit }} and _commit_id <= {{ to_commit }})
{%- endmacro %}


{#- Time travel: the table's rows as they were right after commit `commit_id` (Paimon's
    `scan.snapshot-id` / `VERSION AS OF`), replayed from the state log. An id outside the
    table's snapshots fails like Paimon does. -#}
{% macro as_of(relation, commit_id) -%}
  {%- set state = lakerank_lib._side_table(relation, 'state_log') -%}
  {%- set names = [] -%}
  {%- set primary_key = [] -%}
  {%- if execute -%}
    {%- set latest = adapter.lakerank_get_property(relation, 'lakerank.snapshot_id', '0') | int -%}
    {%- if commit_id | int < 1 or commit_id | int > latest -%}
      {{ exceptions.raise_compiler_error("The specified scan snapshotId " ~ commit_id ~ " is out of available snapshotId range [1, "
          ~ latest ~ "] of " ~ relation) }}
    {%- endif -%}
    {%- set primary_key = adapter.lakerank_get_property(relation, 'lakerank.primary_key', '').split(',') -%}
    {%- for c in adapter.get_columns_in_relation(state) if c.name not in ['_live', '_commit_id'] -%}
      {%- do names.append(c.name) -%}
    {%- endfor -%}
  {%- endif -%}
  {{ lakerank_lib._pk_state_at(state, names or ['*'], primary_key or ['1'], commit_id) }}
{%- endmacro %}


{#- Paimon's `$snapshots`: one row per commit of a pk_table (snapshot_id, commit_time,
    commit_kind, record counts, and what the commit rewrote in bytes). -#}
{% macro snapshots(relation) -%}
  (select snapshot_id, commit_time, commit_kind, input_record_count, touched_key_count,
          changelog_record_count, rewritten_partitions, rewritten_bytes, superseded_bytes
   from {{ lakerank_lib._side_table(relation, 'snapshots') }}
   {{ lakerank_lib._committed_filter(relation, 'snapshot_id') }})
{%- endmacro %}
