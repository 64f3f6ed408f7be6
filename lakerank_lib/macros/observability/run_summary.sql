{#-
  A run's summary for a scheduler: seconds per stage and node counts per status
  from dbt's `results` (an on-run-end hook's context), and one row of it appended to a table.
  The pipeline's `lakerank.build_summary` adds its own counts (events, rank changes).
-#}

{#- `{'seconds': {stage: s}, 'status': {status: n}, 'total': s}` of `results`. A model's stage
    is its folder under models/ (staging, intermediate, marts, ...); data tests are 'tests'. -#}
{% macro run_stage_times(results) -%}
  {%- set seconds = {} -%}
  {%- set status = {} -%}
  {%- set total = namespace(s=0.0) -%}
  {%- for r in results -%}
    {%- set node = r.node -%}
    {%- if node.resource_type == 'test' -%}
      {%- set stage = 'tests' -%}
    {%- elif node.fqn | length > 2 -%}
      {%- set stage = node.fqn[1] -%}
    {%- else -%}
      {%- set stage = node.resource_type -%}
    {%- endif -%}
    {%- do seconds.update({stage: seconds.get(stage, 0.0) + r.execution_time}) -%}
    {%- set s = node.resource_type ~ ':' ~ (r.status | string) -%}
    {%- do status.update({s: status.get(s, 0) + 1}) -%}
    {%- set total.s = total.s + r.execution_time -%}
  {%- endfor -%}
  {%- set rounded = {} -%}
  {%- for stage, s in seconds.items() -%}{%- do rounded.update({stage: s | round(2)}) -%}{%- endfor -%}
  {{ return({'seconds': rounded, 'status': status, 'total': total.s}) }}
{%- endmacro %}


{#- Append one row to `relation` (created on first use): `row` maps column names to SQL
    expressions (the table's columns, in order). `exists`: whether the table exists, when
    the caller knows. -#}
{% macro append_summary_row(relation, row, exists=none) -%}
  {%- set select_row -%}
    select {% for name, expr in row.items() %}{{ expr }} as {{ name }}{{ ', ' if not loop.last }}{% endfor %}
  {%- endset -%}
  {%- if not (adapter.lakerank_table_exists(relation) if exists is none else exists) -%}
    {% call statement('create_' ~ relation.identifier) -%}
      create table {{ relation }} using parquet as {{ select_row }} where false
    {%- endcall %}
  {%- endif -%}
  {% call statement('append_' ~ relation.identifier) -%}
    insert into {{ relation }} ({{ row.keys() | join(', ') }}) {{ select_row }}
  {%- endcall %}
{%- endmacro %}


{#- A progress line of this model's long work (`<model>: <message>`, dbt's info level): one
    per commit, so a build is never silent for minutes and the log stays one screen. -#}
{% macro _progress(message) -%}
  {%- if execute -%}{{ log(this.identifier ~ ': ' ~ message, info=true) }}{%- endif -%}
{%- endmacro %}
