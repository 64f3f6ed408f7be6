{#- pk_table: a model whose columns or merge rules changed since its table was built
    (lakerank_lib/macros/materializations/schema_change.sql; docs: pk_table.md). -#}


{#- The options the stored state was merged under: the merge engine, sequence fields,
    per-field rules (aggregate functions, sequence groups, ...) and the engines' own keys.
    (ignore-delete / ignore-update-before and the layout are checked on their own.) -#}
{% macro _pk_state_options(options) -%}
  {%- set out = {'merge-engine': options.get('merge-engine', 'deduplicate') | string} -%}
  {%- for key, value in options.items() -%}
    {%- if key == 'rowkind.field' or key.startswith('sequence.field') or key.startswith('fields.')
          or key.startswith('partial-update.') or key.startswith('aggregation.') -%}
      {%- do out.update({key: value | string}) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(out) }}
{%- endmacro %}


{#- The table property value recording them (`lakerank.options`, JSON, SQL-quoted). -#}
{% macro _pk_state_options_property(options) -%}
  {{- tojson(lakerank_lib._pk_state_options(options), sort_keys=true) | replace('\\', '\\\\') | replace("'", "\\'") -}}
{%- endmacro %}


{#- Stop when an option the stored state depends on changed: state merged under one rule
    cannot be continued under another. A rule for a column this run adds is new, not changed. -#}
{% macro _pk_check_state_options(options, props, added) -%}
  {%- set text = props.get('lakerank.options', '') -%}
  {%- if not text -%}{{ return(none) }}{%- endif -%}
  {%- set stored = fromjson(text) -%}
  {%- set now = lakerank_lib._pk_state_options(options) -%}
  {%- set new_columns = added | map(attribute='name') | map('lower') | list -%}
  {%- set changed = [] -%}
  {%- for key in (stored.keys() | list + now.keys() | list) | unique | sort
        if stored.get(key) != now.get(key) -%}
    {%- set fields = key.split('.')[1].split(',') if key.startswith('fields.') and key.count('.') >= 2 else [] -%}
    {%- set about_new = fields and (fields | map('lower') | reject('in', new_columns) | list | length == 0) -%}
    {%- if not about_new -%}
      {%- do changed.append("'" ~ key ~ "' " ~ (stored.get(key) or '(unset)') ~ " -> " ~ (now.get(key) or '(unset)')) -%}
    {%- endif -%}
  {%- endfor -%}
  {%- if changed -%}
    {{ lakerank_lib._schema_change_error('pk_table', "option " ~ changed | join(', option ')
        ~ ": its stored rows were merged under the old rule and cannot be continued under the new one",
        "Put the old value back, or ") }}
  {%- endif -%}
{%- endmacro %}


{#- The commit's schema after on_schema_change: the SELECT (temporary view `source`, schema
    `schema`) against the stored table's columns `stored_columns` (minus `_bucket`); the side
    tables holding the model's columns gain the added ones; `source` is redefined over the
    columns to write. -#}
{% macro _pk_schema_change(target, tables, source, schema, options, info, stored_columns) -%}
  {%- set stored = [] -%}
  {%- for c in stored_columns if c.name != '_bucket' -%}{%- do stored.append(c) -%}{%- endfor -%}
  {%- set incoming = [] -%}
  {%- for c in schema if c.name | lower != 'rowkind' -%}{%- do incoming.append(c) -%}{%- endfor -%}
  {%- set rowkind = [] -%}
  {%- for c in schema if c.name | lower == 'rowkind' -%}{%- do rowkind.append(c.name) -%}{%- endfor -%}
  {%- set diff = lakerank_lib._schema_diff(stored, incoming) -%}
  {% do lakerank_lib._pk_check_state_options(options, info[target.identifier]['properties'], diff.added) %}
  {%- set holding = [] -%}
  {%- for t in [target, tables.audit, tables.state] if info[t.identifier]['exists'] -%}{%- do holding.append(t) -%}{%- endfor -%}
  {%- set change = lakerank_lib._apply_schema_change('pk_table', stored, incoming, holding, rowkind) -%}
  {%- if not change.changed -%}{{ return(schema) }}{%- endif -%}
  {% call statement('pk_source_evolved') -%}
    create or replace temporary view {{ source }} as
    select {{ change.select }} from ({{ sql }})
  {%- endcall %}
  {{ return(adapter.lakerank_query_schema(source)) }}
{%- endmacro %}
