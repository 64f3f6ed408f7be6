{#-
  lakerank's commit log: one row per (model, commit) a model has fully applied.
  A commit id is the id of an upstream commit (for the pipeline: the streaming
  batch id of stg_contract_changelog). A model's watermark is the last commit
  it applied; its pending window is (watermark, head of its commit source].
-#}

{% macro commit_log_relation() -%}
  {{ return(api.Relation.create(schema=target.schema, identifier='lakerank_commits', type='table')) }}
{%- endmacro %}


{% macro ensure_commit_log() -%}
  {% call statement('lakerank_ensure_commit_log') -%}
    create table if not exists {{ lakerank.commit_log_relation() }} (
      model string, commit_id bigint, committed_at timestamp, detail string
    ) using parquet
  {%- endcall %}
{%- endmacro %}


{% macro record_commit(model_name, commit_id, detail='') -%}
  {% call statement('lakerank_record_commit') -%}
    insert into {{ lakerank.commit_log_relation() }}
    select '{{ model_name }}', {{ commit_id }}, current_timestamp(), '{{ detail | replace("'", "") }}'
  {%- endcall %}
{%- endmacro %}


{#- The model's pending commit window, computed once per invocation and shared by the
    model's SQL and its materialization. Returns {'from': wm, 'to': head, 'pending': bool}.
    On --full-refresh the watermark is -1: everything is recomputed from the commit source. -#}
{% macro commit_window(source_model=none) -%}
  {%- set source_model = source_model or config.get('commit_source') -%}
  {%- set key = 'window:' ~ invocation_id ~ ':' ~ this -%}
  {%- set cached = adapter.lakerank_memo_get(key) -%}
  {%- if cached is not none -%}{{ return(cached) }}{%- endif -%}
  {%- if not execute -%}{{ return({'from': -1, 'to': -1, 'pending': false}) }}{%- endif -%}
  {%- do lakerank.ensure_commit_log() -%}
  {%- set q -%}
    select
      coalesce(max(case when model = '{{ this.identifier }}' then commit_id end), -1) as wm,
      coalesce(max(case when model = '{{ source_model }}' then commit_id end), -1) as head
    from {{ lakerank.commit_log_relation() }}
    where model in ('{{ this.identifier }}', '{{ source_model }}')
  {%- endset -%}
  {%- set row = run_query(q).rows[0] -%}
  {%- set wm = -1 if (should_full_refresh() or load_cached_relation(this) is none) else row['wm'] | int -%}
  {%- set window = {'from': wm, 'to': row['head'] | int, 'pending': (row['head'] | int) > wm} -%}
  {%- do adapter.lakerank_memo_set(key, window) -%}
  {{ return(window) }}
{%- endmacro %}


{#- Rows of `source_relation` in the model's pending window (a parenthesised subquery). -#}
{% macro pending_rows(source_relation, commit_column='_commit_id') -%}
  {%- set w = lakerank.commit_window() -%}
  (select * from {{ source_relation }}
   where {{ commit_column }} > {{ w['from'] }} and {{ commit_column }} <= {{ w['to'] }})
{%- endmacro %}
