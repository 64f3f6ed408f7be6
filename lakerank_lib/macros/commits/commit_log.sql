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
    `properties`. `statement_name` 'main' when it is the materialization's last statement. -#}
{% macro record_commit(relation, commit_id, fingerprint=none, kind='table', properties={},
                       statement_name='lakerank_record_commit') -%}
  {% call statement(statement_name) -%}
    {{ lakerank_lib.record_commit_sql(relation, commit_id, fingerprint, kind, properties) }}
  {%- endcall %}
{%- endmacro %}


{#- The statement record_commit runs (also usable as a post-hook). -#}
{% macro record_commit_sql(relation, commit_id, fingerprint=none, kind='table', properties={}) -%}
  {%- set recorded = {} -%}
  {%- if commit_id is not none -%}{%- do recorded.update({lakerank_lib.commit_property(): commit_id}) -%}{%- endif -%}
  {%- if fingerprint -%}{%- do recorded.update({'lakerank.fingerprint': fingerprint}) -%}{%- endif -%}
  {%- do recorded.update(properties) -%}
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
    `ref('...')` or `source('...', '...')` so that the DAG shows the dependency. The model's
    SQL calls it first, directly or through `pending_rows(ref(...))`; the window is kept for
    the invocation, and the materialization reads the same one with no argument (none when
    the model declared no source). On --full-refresh, or before the table exists,
    `from` is -1. -#}
{% macro commit_window(source=none) -%}
  {%- set key = 'window:' ~ invocation_id ~ ':' ~ this -%}
  {%- set cached = adapter.lakerank_memo_get(key) -%}
  {%- if cached is not none -%}{{ return(cached) }}{%- endif -%}
  {%- if source is none -%}{{ return(none) }}{%- endif -%}
  {%- if not execute -%}{{ return({'from': -1, 'to': -1, 'pending': false}) }}{%- endif -%}
  {%- set head = lakerank_lib.watermark(source) -%}
  {%- if should_full_refresh() -%}
    {%- set wm = -1 -%}
  {%- else -%}
    {%- set wm = lakerank_lib.watermark(this) -%}
  {%- endif -%}
  {%- set window = {'from': wm, 'to': head, 'pending': head > wm} -%}
  {%- do adapter.lakerank_memo_set(key, window) -%}
  {{ return(window) }}
{%- endmacro %}


{#- The window of a model that must have one (merge_on_read). -#}
{% macro _required_commit_window(materialization) -%}
  {%- set window = lakerank_lib.commit_window() -%}
  {%- if window is none -%}
    {{ exceptions.raise_compiler_error(materialization ~ " model " ~ this ~ " has no commit source: its SQL"
         ~ " must read it with lakerank_lib.pending_rows(ref('<model>')) or call"
         ~ " lakerank_lib.commit_window(ref('<model>')) first") }}
  {%- endif -%}
  {{ return(window) }}
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
