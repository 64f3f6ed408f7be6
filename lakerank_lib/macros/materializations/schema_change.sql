{#-
  Schema and logic changes of an incremental lakerank model (pk_table, merge_on_read): the
  model's SELECT against the columns its stored table holds, and dbt's `on_schema_change`
  (reference: lakerank_lib/docs/pk_table.md, "Changing columns or logic"):
    fail (default for lakerank models)  stop, naming the model, the columns and the fixes
    ignore             keep the stored columns: new ones are not written, removed ones get NULL
    append_new_columns add the new columns (ALTER TABLE ... ADD COLUMNS on the table and each
                       side table holding the model's columns; stored rows read NULL); removed
                       ones are kept and get NULL
    sync_all_columns   as append_new_columns; a removed column stops the run (a parquet table
                       of Spark's v1 datasource cannot drop a column in place), naming it and
                       the --full-refresh command
  A changed column type stops the run in every mode.
-#}


{#- The model's on_schema_change: dbt's own default is `ignore`, lakerank's is `fail`, so
    only a value the project set (model file or YAML) counts. -#}
{% macro _on_schema_change_mode() -%}
  {%- set mode = model.get('unrendered_config', {}).get('on_schema_change') and config.get('on_schema_change') -%}
  {%- set mode = mode or 'fail' -%}
  {%- if mode not in ['fail', 'ignore', 'append_new_columns', 'sync_all_columns'] -%}
    {{ exceptions.raise_compiler_error(model.config.materialized ~ " " ~ this ~ ": on_schema_change '" ~ mode
        ~ "' is not one of fail, ignore, append_new_columns, sync_all_columns") }}
  {%- endif -%}
  {{ return(mode) }}
{%- endmacro %}


{#- `stored` and `incoming`: [{'name', 'type'}]. Names compare case-insensitively. -#}
{% macro _schema_diff(stored, incoming) -%}
  {%- set old = {} -%}
  {%- for c in stored -%}{%- do old.update({c.name | lower: c}) -%}{%- endfor -%}
  {%- set new = {} -%}
  {%- for c in incoming -%}{%- do new.update({c.name | lower: c}) -%}{%- endfor -%}
  {%- set diff = {'added': [], 'removed': [], 'changed': []} -%}
  {%- for c in incoming if c.name | lower not in old -%}{%- do diff.added.append(c) -%}{%- endfor -%}
  {%- for c in stored if c.name | lower not in new -%}{%- do diff.removed.append(c) -%}{%- endfor -%}
  {%- for c in incoming if c.name | lower in old and old[c.name | lower].type != c.type -%}
    {%- do diff.changed.append({'name': c.name, 'type': c.type, 'stored': old[c.name | lower].type}) -%}
  {%- endfor -%}
  {{ return(diff) }}
{%- endmacro %}


{#- The command that rebuilds the model and everything downstream from its upstream tables. -#}
{% macro _full_refresh_command() -%}
  dbt build --full-refresh --select {{ model.name }}+
{%- endmacro %}


{% macro _schema_change_error(kind, problem, fixes) -%}
  {{ exceptions.raise_compiler_error(kind ~ " " ~ this ~ ": " ~ problem ~ ". " ~ fixes
      ~ "rebuild it and everything downstream from its upstream tables: `"
      ~ lakerank_lib._full_refresh_command() ~ "`") }}
{%- endmacro %}


{#- Stop unless `mode` accepts `diff`; the message names the model, the columns and the fixes. -#}
{% macro _check_schema_change(kind, diff, mode) -%}
  {%- set parts = [] -%}
  {%- if diff.added -%}
    {%- do parts.append('added ' ~ lakerank_lib._describe_columns(diff.added)) -%}
  {%- endif -%}
  {%- if diff.removed -%}
    {%- do parts.append('removed ' ~ lakerank_lib._describe_columns(diff.removed)) -%}
  {%- endif -%}
  {%- set types = [] -%}
  {%- for c in diff.changed -%}{%- do types.append(c.name ~ ' ' ~ c.stored ~ ' -> ' ~ c.type) -%}{%- endfor -%}
  {%- if types -%}
    {{ lakerank_lib._schema_change_error(kind, "the type of a stored column changed (" ~ types | join(', ')
        ~ "), which no on_schema_change mode applies in place", "To change it, ") }}
  {%- elif parts and mode == 'fail' -%}
    {{ lakerank_lib._schema_change_error(kind, "the model's columns no longer match the stored table: "
        ~ parts | join('; ') ~ " (on_schema_change='fail', lakerank's default)",
        "Either set on_schema_change='append_new_columns' (stored rows read NULL in the new columns),"
        ~ " 'sync_all_columns' or 'ignore' in the model's config, or ") }}
  {%- elif diff.removed and mode == 'sync_all_columns' -%}
    {{ lakerank_lib._schema_change_error(kind, "on_schema_change='sync_all_columns' cannot drop "
        ~ lakerank_lib._describe_columns(diff.removed) ~ " in place (a parquet table cannot drop a column)",
        "Either use 'append_new_columns' (the column is kept and gets NULL), or ") }}
  {%- endif -%}
{%- endmacro %}


{% macro _describe_columns(columns) -%}
  {%- set out = [] -%}
  {%- for c in columns -%}{%- do out.append(c.name ~ ' ' ~ c.type) -%}{%- endfor -%}
  {{- out | join(', ') -}}
{%- endmacro %}


{#- The columns the model writes under `mode`: the stored ones in their order (a removed one
    as NULL of its type), then the added ones unless `mode` is ignore; `extra` input columns
    (pk_table's `rowkind`) pass through. A SELECT list over the model's query. -#}
{% macro _schema_change_select(stored, diff, mode, extra=[]) -%}
  {%- set removed = diff.removed | map(attribute='name') | map('lower') | list -%}
  {%- set cols = [] -%}
  {%- for c in stored -%}
    {%- do cols.append(('cast(null as ' ~ c.type ~ ') as ' ~ c.name) if c.name | lower in removed else c.name) -%}
  {%- endfor -%}
  {%- if mode != 'ignore' -%}
    {%- for c in diff.added -%}{%- do cols.append(c.name) -%}{%- endfor -%}
  {%- endif -%}
  {{- (cols + extra) | join(', ') -}}
{%- endmacro %}


{#- append_new_columns / sync_all_columns: add the new columns to each table of `tables`
    that lacks them (idempotent: a run killed between two tables adds the rest on rerun). -#}
{% macro _add_new_columns(tables, added) -%}
  {%- for relation in tables -%}
    {%- set have = adapter.lakerank_query_schema(relation | string) | map(attribute='name') | map('lower') | list -%}
    {%- set missing = [] -%}
    {%- for c in added if c.name | lower not in have -%}{%- do missing.append(c.name ~ ' ' ~ c.type) -%}{%- endfor -%}
    {%- if missing -%}
      {% call statement('add_columns_' ~ relation.identifier) -%}
        alter table {{ relation }} add columns ({{ missing | join(', ') }})
      {%- endcall %}
      {#- Without it the next write's schema lookup saw the table without the new columns
          in 2 of 4 trial runs (four threads); most likely Spark refreshes its cached
          relation before the ALTER runs, not after. -#}
      {% call statement('refresh_' ~ relation.identifier) -%} refresh table {{ relation }} {%- endcall %}
    {%- endif -%}
  {%- endfor -%}
{%- endmacro %}


{#- Apply the model's `on_schema_change` to a commit: `stored` are the stored columns,
    `incoming` the SELECT's, `tables` every table holding the model's columns. Returns
    {'changed': bool, 'select': the SELECT list over the model's query}. -#}
{% macro _apply_schema_change(kind, stored, incoming, tables, extra=[]) -%}
  {%- set diff = lakerank_lib._schema_diff(stored, incoming) -%}
  {%- if not (diff.added or diff.removed or diff.changed) -%}
    {{ return({'changed': false, 'select': '*'}) }}
  {%- endif -%}
  {%- set mode = lakerank_lib._on_schema_change_mode() -%}
  {% do lakerank_lib._check_schema_change(kind, diff, mode) %}
  {%- if mode in ['append_new_columns', 'sync_all_columns'] and diff.added -%}
    {% do lakerank_lib._add_new_columns(tables, diff.added) %}
  {%- endif -%}
  {%- set names = [] -%}
  {%- for c in diff.added -%}{%- do names.append('+' ~ c.name) -%}{%- endfor -%}
  {%- for c in diff.removed -%}{%- do names.append('-' ~ c.name) -%}{%- endfor -%}
  {{ log(kind ~ " " ~ this ~ ": on_schema_change='" ~ mode ~ "': " ~ names | join(' '), info=true) }}
  {{ return({'changed': true, 'select': lakerank_lib._schema_change_select(stored, diff, mode, extra),
             'added': diff.added if mode != 'ignore' else []}) }}
{%- endmacro %}


{#- merge_on_read: the model's SELECT against `<model>__base`; added columns go to the base
    and the audit log, and the view is redefined over them (same base commit and watermark)
    before this commit's diff reads it (`opened`: the commit's open record, which holds the
    base's columns and is updated with the added ones). Returns the query this run writes. -#}
{% macro _merge_on_read_schema_change(view_relation, parts, primary_key, fingerprint, opened) -%}
  {%- set probe = this.identifier ~ '__lr_schema' -%}
  {% call statement('merge_on_read_schema') -%}
    create or replace temporary view {{ probe }} as {{ sql }}
  {%- endcall %}
  {%- set incoming = adapter.lakerank_query_schema(probe) -%}
  {%- set stored = opened['base_columns'] -%}
  {%- set change = lakerank_lib._apply_schema_change('merge_on_read', stored, incoming, [parts['base'], parts['audit']]) -%}
  {%- if not change.changed -%}{{ return(sql) }}{%- endif -%}
  {%- if change.added -%}
    {%- do opened.update({'base_columns': stored + change.added}) -%}
    {% do lakerank_lib._merge_on_read_replace_view(view_relation, parts, primary_key,
          opened['properties'].get('lakerank.base_commit', '-1'),
          opened['properties'].get(lakerank_lib.commit_property(), '-1'), fingerprint,
          opened['base_columns'] | map(attribute='name') | list, true) %}
  {%- endif -%}
  {{ return('select ' ~ change.select ~ ' from (' ~ sql ~ ')') }}
{%- endmacro %}
