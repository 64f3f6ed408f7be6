{#-
  stream_ingest — materialization for Python models that run a Structured Streaming
  query to completion (trigger availableNow) and write their own table, exactly once,
  through the query's checkpoint. The model returns a summary string. After it ran, the
  newest partition of the model's table (partitioned by `_commit_id`) is recorded in
  `lakerank_commits`, which is what downstream models use as their commit head.
-#}
{% materialization stream_ingest, default, supported_languages=['python'] %}
  {%- set target_relation = this.incorporate(type='table') -%}
  {{ run_hooks(pre_hooks) }}
  {% do lakerank.ensure_commit_log() %}
  {% call statement('main', language='python') -%}
{{ compiled_code }}

dbt = dbtObj(spark.table)
lakerank_result = model(dbt, spark)
  {%- endcall %}
  {%- set parts = adapter.lakerank_partition_locations(target_relation) -%}
  {%- set ids = [] -%}
  {%- for key in parts -%}{%- do ids.append(key.split('=')[1] | int) -%}{%- endfor -%}
  {%- if ids -%}
    {%- set head = ids | max -%}
    {%- set window = lakerank.commit_window(this.identifier) -%}
    {%- if head > window['to'] -%}
      {% do lakerank.record_commit(this.identifier, head, 'stream head') %}
    {%- endif -%}
  {%- endif -%}
  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
