{#- dbt's `incremental` materialization on lakerank: dbt-spark's, with every strategy on every
    file format. `append` and `insert_overwrite` are dbt-spark's statements; `merge`,
    `delete+insert` and `microbatch` (without `partition_by`) on a parquet (or other plain
    file-format) table rewrite the table: the rows they keep plus the new ones, written as the
    table's next version and swapped in with one metastore call (adapter.lakerank_rewrite_table),
    so readers and a killed run see the old rows or the new. On Delta, Iceberg and Hudi tables
    `merge` is dbt-spark's MERGE. -#}
{% materialization incremental, adapter='lakerank', supported_languages=['sql', 'python'] -%}
  {%- set file_format = dbt_spark_validate_get_file_format(config.get('file_format', default='parquet')) -%}
  {%- set strategy = lakerank__incremental_strategy(config.get('incremental_strategy') or 'append') -%}
  {%- set grant_config = config.get('grants') -%}
  {%- set unique_key = config.get('unique_key', none) -%}
  {%- set partition_by = config.get('partition_by', none) -%}
  {%- set language = model['language'] -%}
  {%- set on_schema_change = incremental_validate_on_schema_change(config.get('on_schema_change'), default='ignore') -%}
  {%- set incremental_predicates = config.get('predicates', none) or config.get('incremental_predicates', none) -%}
  {%- set target_relation = this -%}
  {%- set existing_relation = load_relation(this) -%}
  {%- set tmp_relation = this.incorporate(path={"identifier": this.identifier ~ '__dbt_tmp'}) -%}
  {%- if language == 'sql' -%}
    {#- a SQL model's rows are a temporary view, which has no database nor schema -#}
    {%- set tmp_relation = tmp_relation.include(database=false, schema=false) -%}
  {%- endif -%}
  {%- if strategy in ['insert_overwrite', 'microbatch'] and partition_by -%}
    {%- call statement() -%} set spark.sql.sources.partitionOverwriteMode = DYNAMIC {%- endcall -%}
  {%- endif -%}

  {{ run_hooks(pre_hooks) }}

  {%- if existing_relation is none or existing_relation.is_view or should_full_refresh() -%}
    {%- if existing_relation is not none and not (file_format == 'delta' and existing_relation.is_delta) -%}
      {% do adapter.drop_relation(existing_relation) %}
    {%- endif -%}
    {%- call statement('main', language=language) -%}
      {{ create_table_as(False, target_relation, compiled_code, language) }}
    {%- endcall -%}
    {% do persist_constraints(target_relation, model) %}
  {%- else -%}
    {%- call statement('create_tmp_relation', language=language) -%}
      {{ create_table_as(True, tmp_relation, compiled_code, language) }}
    {%- endcall -%}
    {%- do process_schema_changes(on_schema_change, tmp_relation, existing_relation) -%}
    {%- if lakerank__rewrites(strategy, existing_relation) -%}
      {%- set rows = lakerank__incremental_rows(strategy, tmp_relation, target_relation, unique_key,
                                                incremental_predicates) -%}
      {% do adapter.lakerank_rewrite_table(target_relation, rows) %}
      {%- call statement('main') -%} select '{{ strategy }}: rewritten' as status {%- endcall -%}
    {%- else -%}
      {%- call statement('main') -%}
        {{ lakerank__incremental_sql(strategy, tmp_relation, target_relation, existing_relation, unique_key,
                                     incremental_predicates) }}
      {%- endcall -%}
    {%- endif -%}
    {#- the new rows' temporary view (a Python model's table) is not left to the next run -#}
    {% call statement('drop_tmp_relation') -%}
      drop {{ 'table' if language == 'python' else 'view' }} if exists {{ tmp_relation }}
    {%- endcall %}
  {%- endif -%}

  {% set should_revoke = should_revoke(existing_relation, full_refresh_mode) %}
  {% do apply_grants(target_relation, grant_config, should_revoke) %}
  {% do persist_docs(target_relation, model) %}
  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [target_relation]}) }}
{%- endmaterialization %}


{#- The strategy, or a compile error naming the ones lakerank has. -#}
{% macro lakerank__incremental_strategy(strategy) -%}
  {%- set known = ['append', 'merge', 'delete+insert', 'insert_overwrite', 'microbatch'] -%}
  {%- if strategy not in known -%}
    {%- do exceptions.raise_compiler_error("Invalid incremental strategy provided: " ~ strategy
                                            ~ "\n    Expected one of: '" ~ known | join("', '") ~ "'") -%}
  {%- endif -%}
  {%- if strategy in ['insert_overwrite', 'microbatch'] and target.endpoint -%}
    {%- do exceptions.raise_compiler_error("Invalid incremental strategy provided: " ~ strategy
                                            ~ "\n    You cannot use this strategy when connecting via endpoint") -%}
  {%- endif -%}
  {{ return(strategy) }}
{%- endmacro %}


{#- Whether `relation` is a Delta, Iceberg or Hudi table: one with MERGE, DELETE and column
    changes of its own, where dbt-spark's statements apply and lakerank rewrites nothing. -#}
{% macro lakerank__merges_itself(relation) -%}
  {{ return(relation.is_delta or relation.is_iceberg or relation.is_hudi) }}
{%- endmacro %}


{#- Whether `strategy` on `relation` is a rewrite: every strategy that deletes or updates rows,
    on a table of a plain file format. -#}
{% macro lakerank__rewrites(strategy, relation) -%}
  {%- if lakerank__merges_itself(relation) -%}
    {%- if strategy == 'delete+insert' -%}
      {%- do exceptions.raise_compiler_error("delete+insert on " ~ relation ~ ": use 'merge' on a Delta, Iceberg or Hudi table") -%}
    {%- endif -%}
    {{ return(false) }}
  {%- endif -%}
  {{ return(strategy in ['merge', 'delete+insert'] or (strategy == 'microbatch' and not config.get('partition_by'))) }}
{%- endmacro %}


{#- dbt-spark's statement for a strategy that is not a rewrite, with the target's columns a
    new model lacks (`append_new_columns` after a column was removed) inserted as NULL. -#}
{% macro lakerank__incremental_sql(strategy, source, target, existing, unique_key, incremental_predicates) -%}
  {%- if strategy == 'append' -%}
    insert into table {{ target }} {{ lakerank__select_target_columns(source, target) }}
  {%- elif strategy in ['insert_overwrite', 'microbatch'] -%}
    {%- if strategy == 'microbatch' and not config.get('partition_by') -%}
      {%- do exceptions.raise_compiler_error("microbatch on " ~ target ~ ": a table of this format needs a partition_by") -%}
    {%- endif -%}
    insert overwrite table {{ target }} {{ partition_cols(label="partition") }}
    {{ lakerank__select_target_columns(source, target) }}
  {%- else -%}
    {{ get_merge_sql(target, source, unique_key, dest_columns=none, incremental_predicates=incremental_predicates) }}
  {%- endif -%}
{%- endmacro %}


{#- `select` of `target`'s columns from `source`, NULL for those `source` lacks
    (`dest_columns`, `have`: the target's columns and the source's names, when the caller
    read them already). -#}
{% macro lakerank__select_target_columns(source, target, alias='', dest_columns=none, have=none) -%}
  {%- set have = have if have is not none
                 else adapter.get_columns_in_relation(source) | map(attribute='name') | map('lower') | list -%}
  {%- set prefix = alias ~ '.' if alias else '' -%}
  select
  {%- for column in (dest_columns if dest_columns is not none else adapter.get_columns_in_relation(target)) %}
    {% if column.name | lower in have %}{{ prefix }}{{ column.quoted }}{% else %}cast(null as {{ column.data_type }}) as {{ column.quoted }}{% endif %}
    {%- if not loop.last %},{% endif %}
  {%- endfor %}
  from {{ source }} {{ alias }}
{%- endmacro %}
