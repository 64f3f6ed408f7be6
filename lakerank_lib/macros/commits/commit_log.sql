{#-
  lakerank commits. A model's watermark — the last commit it fully applied — is the
  table property `lakerank.commit_id` of its table, set (one metastore call) only after
  its data is in place. Commit ids come from the model's commit source (for the
  pipeline: the streaming batch ids of stg_contract_changelog, whose newest is that
  table's own `lakerank.commit_id`). A model's pending window is (watermark, head].
-#}

{% macro commit_property() -%}lakerank.commit_id{%- endmacro %}


{% macro watermark(relation) -%}
  {%- if not execute -%}{{ return(-1) }}{%- endif -%}
  {{ return(adapter.lakerank_get_property(relation, lakerank_lib.commit_property(), '-1') | int) }}
{%- endmacro %}


{#- Record a commit on `relation` in one metastore call (the protocol's record step): its
    watermark `commit_id` (none: the table has no commit source), its state fingerprint and
    `properties`. `statement_name` 'main' when it is the materialization's last statement. On
    the shared catalog the call is conditional on the watermark this build read before its
    commit (adapter.lakerank_record_fenced: docs/deployment.md, "Several writers"). `writer`:
    the commit's open record's `writer` (else the adapter is asked whether it is fenced). -#}
{% macro record_commit(relation, commit_id, fingerprint=none, kind='table', properties={},
                       statement_name='lakerank_record_commit', writer=none) -%}
  {%- if execute and (writer['fenced'] if writer is not none else adapter.lakerank_fenced()) -%}
    {% do adapter.lakerank_record_fenced(relation, lakerank_lib._recorded(commit_id, fingerprint, properties)) %}
    {% call statement(statement_name) -%} select 'recorded' as status {%- endcall %}
  {%- else -%}
    {% call statement(statement_name) -%}
      {{ lakerank_lib.record_commit_sql(relation, commit_id, fingerprint, kind, properties) }}
    {%- endcall %}
  {%- endif -%}
{%- endmacro %}


{#- The properties a commit records: its watermark, fingerprint and `properties`. -#}
{% macro _recorded(commit_id, fingerprint=none, properties={}) -%}
  {%- set recorded = {} -%}
  {%- if commit_id is not none -%}{%- do recorded.update({lakerank_lib.commit_property(): commit_id}) -%}{%- endif -%}
  {%- if fingerprint -%}{%- do recorded.update({'lakerank.fingerprint': fingerprint}) -%}{%- endif -%}
  {%- do recorded.update(properties) -%}
  {{ return(recorded) }}
{%- endmacro %}


{#- The statement record_commit runs (also usable as a post-hook). -#}
{% macro record_commit_sql(relation, commit_id, fingerprint=none, kind='table', properties={}) -%}
  {%- set recorded = lakerank_lib._recorded(commit_id, fingerprint, properties) -%}
    alter {{ kind }} {{ relation }} set tblproperties (
      {%- for key, value in recorded.items() %}{{ ', ' if not loop.first }}'{{ key }}' = '{{ value }}'{% endfor %})
{%- endmacro %}


{#- A table's state depends on settings such as the rank function: its `state_fingerprint`
    config is stored with each commit, and a run with different settings stops with a
    clear message instead of mixing two kinds of state (unless --full-refresh). -#}
{% macro _check_fingerprint(relation, fingerprint, properties=none) -%}
  {%- if fingerprint and execute -%}
    {%- set stored = properties.get('lakerank.fingerprint', '') if properties is not none
                     else adapter.lakerank_get_property(relation, 'lakerank.fingerprint', '') -%}
    {%- if stored and stored != fingerprint -%}
      {{ exceptions.raise_compiler_error(
          relation ~ " was built with " ~ stored ~ " but this run uses " ~ fingerprint
          ~ ". Its incremental state cannot be reused: run `dbt build --full-refresh` to rebuild it"
          ~ " from the changelog.") }}
    {%- endif -%}
  {%- endif -%}
{%- endmacro %}


{#- The model's pending commit window {'from', 'to', 'pending'}: (its watermark, head of
    `source`], where `source` is the relation whose commits drive the model, given as
    `ref('...')` or `source('...', '...')` so that the DAG shows the dependency. Taken the
    first time the invocation asks (the model's SQL, or its materialization from config
    `commit_source`) and the same afterwards: it is the model's commit record's
    (dbt/adapters/lakerank/records.py). With no argument: the record's window, or the one
    config `commit_source` names, else none. On --full-refresh, or before the table exists,
    `from` is -1. -#}
{% macro commit_window(source=none) -%}
  {%- set source = source if source is not none else lakerank_lib._commit_source() -%}
  {%- if not execute -%}{{ return({'from': -1, 'to': -1, 'pending': false} if source is not none else none) }}{%- endif -%}
  {{ return(adapter.lakerank_commit_window(this, source, should_full_refresh())) }}
{%- endmacro %}


{#- The relation config `commit_source` names (a model, seed or snapshot of the project, by
    name), or none. -#}
{% macro _commit_source() -%}
  {%- set name = config.get('commit_source') -%}
  {%- if not name -%}{{ return(none) }}{%- endif -%}
  {%- for node in graph.nodes.values() if node.resource_type in ('model', 'seed', 'snapshot') and node.name == name -%}
    {{ return(api.Relation.create(schema=node.schema, identifier=node.alias or node.name)) }}
  {%- endfor -%}
  {{ exceptions.raise_compiler_error("config commit_source='" ~ name ~ "' of " ~ this ~ " names no model, seed or snapshot") }}
{%- endmacro %}


{#- Rows of `source_relation` in the model's pending window, or in `window` (a dict with
    `from`, `to`, `pending`) when given (a parenthesised subquery). An empty window is `where
    false`, which Spark's optimizer folds into an empty relation before planning any scan or
    join of the query around it (a range filter it would run). -#}
{% macro pending_rows(source_relation, commit_column='_commit_id', window=none) -%}
  {%- set w = window if window is not none else lakerank_lib.commit_window(source_relation) -%}
  (select * from {{ source_relation }}
  {%- if w['pending'] %}
   where {{ commit_column }} > {{ w['from'] }} and {{ commit_column }} <= {{ w['to'] }})
  {%- else %}
   where false)
  {%- endif -%}
{%- endmacro %}
