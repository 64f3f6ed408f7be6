{#- Steps every lakerank materialization takes around a commit. -#}

{#- Where this run stages commit `commit_id` of a table whose files live under `root`:
    `<root>/_v/<kind><commit>_<run>` (kind `c` a commit, `b` a base, `p` a publication): the
    Jinja twin of the commit protocol's `stage_dir` (python_udfs/commit/protocol.py), which
    the Python writers use. A rerun after a crash writes beside a dead attempt's files,
    never into them; the protocol sweeps the dead ones. On the shared catalog the name ends in
    the writer's id (`-w<8 hex>`), by which sweep and recovery leave a live writer's stage.
    `writer`: the commit's open record's `writer` (else the adapter is asked). -#}
{% macro stage_dir(root, kind, commit_id, writer=none) -%}
  {%- set suffix = writer['suffix'] if writer is not none else adapter.lakerank_stage_suffix() -%}
  {{ return(root ~ '/_v/' ~ kind ~ commit_id ~ '_' ~ invocation_id[:8] ~ suffix) }}
{%- endmacro %}


{#- Drop a staging table that a killed run left behind. -#}
{% macro _drop_leftover(relation) -%}
  {%- if adapter.lakerank_table_exists(relation) -%}
    {% call statement('drop_leftover_' ~ relation.identifier) -%} drop table if exists {{ relation }} {%- endcall %}
  {%- endif -%}
{%- endmacro %}


{#- A view's header: `create view <relation> <properties> as` the first time, then `alter view
    <relation> as`, one metastore call that swaps the definition (Spark's `create or replace
    view` drops the view, then creates it, and a reader in between finds no view; an
    existing view's properties need their own `alter view ... set`). `exists`: whether the
    view exists, when the caller already knows. -#}
{% macro _define_view(relation, properties='', exists=none) -%}
  {%- set exists = adapter.lakerank_table_exists(relation) if exists is none else exists -%}
  {%- if exists -%}alter view {{ relation }} as
  {%- else -%}create view {{ relation }} {{ properties }} as{%- endif -%}
{%- endmacro %}
