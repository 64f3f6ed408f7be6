{#- Steps every lakerank materialization takes around a commit. -#}

{#- A run with nothing pending writes nothing; the model's data tests read no rows. -#}
{% macro commit_nothing(relation) -%}
  {% do lakerank_lib.remember_written(relation, 'false') %}
  {% call statement('main') -%}
    select 'no pending commits' as status
  {%- endcall %}
{%- endmacro %}


{#- This run's attempt at commit `commit_id`, the name of its directory `_v/c<attempt>`: a
    rerun after a crash writes beside a dead attempt's files, never into them. -#}
{% macro commit_attempt(commit_id) -%}
  {{ return(commit_id ~ '_' ~ invocation_id[:8]) }}
{%- endmacro %}


{#- Drop a staging table that a killed run left behind. -#}
{% macro drop_leftover(relation) -%}
  {%- if adapter.lakerank_table_exists(relation) -%}
    {% call statement('drop_leftover_' ~ relation.identifier) -%} drop table if exists {{ relation }} {%- endcall %}
  {%- endif -%}
{%- endmacro %}
