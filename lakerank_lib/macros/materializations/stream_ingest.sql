{#-
  stream_ingest — materialization for Python models that run a Structured Streaming
  query to completion (trigger availableNow) and write their own table, exactly once,
  through the query's checkpoint. The model returns a summary string. After it ran, the
  newest partition of the model's table (partitioned by `_commit_id`) is recorded in
  the table property `lakerank.commit_id`: the commit head downstream models read.
  Its data tests in the same invocation check only the commits this run wrote.
-#}
{% materialization stream_ingest, default, supported_languages=['python'] %}
  {%- set target_relation = this.incorporate(type='table') -%}
  {%- set before = lakerank_lib.watermark(target_relation) if load_cached_relation(this) is not none else -1 -%}
  {{ run_hooks(pre_hooks) }}
  {% call statement('main', language='python') -%}
{{ compiled_code }}

dbt = dbtObj(spark.table)
lakerank_result = model(dbt, spark)
  {%- endcall %}
  {% do lakerank_lib.fault_point('ingested') %}
  {%- set parts = adapter.lakerank_partition_locations(target_relation) -%}
  {%- set ids = [] -%}
  {%- for key in parts -%}{%- do ids.append(key.split('=')[1] | int) -%}{%- endfor -%}
  {%- if ids -%}
    {%- set head = ids | max -%}
    {%- if head > lakerank_lib.watermark(target_relation) -%}
      {% do lakerank_lib.record_commit(target_relation, head) %}
    {%- endif -%}
  {%- endif -%}
  {#- Its data tests in this invocation read only the commits it just wrote, named (a literal
      list the scan prunes partitions by), and nothing when it wrote none. -#}
  {% do lakerank_lib._remember_written(target_relation,
      lakerank_lib._partition_filter('_commit_id', ids | select('>', before) | list)) %}
  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
