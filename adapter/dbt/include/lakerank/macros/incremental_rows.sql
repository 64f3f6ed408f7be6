{#- The rows an incremental rewrite writes (lakerank's `incremental` materialization): the
    target's rows a strategy keeps, then the new ones, in the target's columns. `source` is the
    model's new rows (DBT_INTERNAL_SOURCE), `target` the table (DBT_INTERNAL_DEST); dbt's
    `incremental_predicates` name them so. -#}
{% macro lakerank__incremental_rows(strategy, source, target, unique_key, incremental_predicates) -%}
  {%- set keys = [] if not unique_key else ([unique_key] if unique_key is string else unique_key) -%}
  {%- set predicates = [] + (incremental_predicates or []) -%}
  {%- if strategy == 'merge' -%}
    {{ return(lakerank__merge_rows(source, target, keys, predicates)) }}
  {%- elif strategy == 'delete+insert' -%}
    {{ return(lakerank__delete_insert_rows(source, target, keys, predicates)) }}
  {%- else -%}
    {{ return(lakerank__microbatch_rows(source, target, predicates)) }}
  {%- endif -%}
{%- endmacro %}


{#- dbt's MERGE: a target row matched (unique key and predicates) by a new row takes the new
    row's `merge_update_columns` (all but `merge_exclude_columns`; all by default); a new row
    that matches none is inserted. No unique key: every new row is inserted. -#}
{% macro lakerank__merge_rows(source, target, keys, predicates) -%}
  {%- set dest_columns = adapter.get_columns_in_relation(target) -%}
  {%- set have = adapter.get_columns_in_relation(source) | map(attribute='name') | map('lower') | list -%}
  {#- dbt-spark's update columns: none configured means all -#}
  {%- set updates = get_merge_update_columns(config.get('merge_update_columns'), config.get('merge_exclude_columns'),
                                             dest_columns) or dest_columns | map(attribute='quoted') | list -%}
  {%- set updates = updates | map('replace', '`', '') | map('lower') | list -%}
  {%- set on = [] -%}
  {%- for key in keys -%}
    {%- do on.append('DBT_INTERNAL_SOURCE.' ~ key ~ ' = DBT_INTERNAL_DEST.' ~ key) -%}
  {%- endfor -%}
  {%- set on = (on + predicates) if keys else ['false'] -%}
  {%- set matched -%}
    select
    {%- for column in dest_columns %}
      {% if column.name | lower in updates and column.name | lower in have -%}
      case when DBT_INTERNAL_SOURCE.`__lakerank_matched` then DBT_INTERNAL_SOURCE.{{ column.quoted }}
           else DBT_INTERNAL_DEST.{{ column.quoted }} end as {{ column.quoted }}
      {%- else -%}DBT_INTERNAL_DEST.{{ column.quoted }}{%- endif -%}{{ ',' if not loop.last }}
    {%- endfor %}
    from {{ target }} as DBT_INTERNAL_DEST
    left join (select *, true as `__lakerank_matched` from {{ source }}) as DBT_INTERNAL_SOURCE
      on {{ on | join(' and ') }}
  {%- endset -%}
  {%- set inserted -%}
    {{ lakerank__select_target_columns(source, target, 'DBT_INTERNAL_SOURCE', dest_columns, have) }}
    left anti join {{ target }} as DBT_INTERNAL_DEST on {{ on | join(' and ') }}
  {%- endset -%}
  {{ return(matched ~ '\nunion all\n' ~ inserted) }}
{%- endmacro %}


{#- dbt's delete+insert: the target's rows whose unique key a new row has (and which pass the
    predicates) are deleted, then every new row is inserted. No unique key: an append. -#}
{% macro lakerank__delete_insert_rows(source, target, keys, predicates) -%}
  {%- set kept -%}
    {%- if keys -%}
    select DBT_INTERNAL_DEST.* from {{ target }} as DBT_INTERNAL_DEST
    left join (select distinct
      {%- for key in keys %} {{ key }} as `__lakerank_key{{ loop.index }}`{{ ',' if not loop.last }}{% endfor %}
      from {{ source }}) as DBT_INTERNAL_SOURCE
      on {% for key in keys -%}
        DBT_INTERNAL_DEST.{{ key }} = DBT_INTERNAL_SOURCE.`__lakerank_key{{ loop.index }}`{{ ' and ' if not loop.last }}
      {%- endfor %}
    where DBT_INTERNAL_SOURCE.`__lakerank_key1` is null
      {%- if predicates %} or not coalesce(({{ predicates | join(') and (') }}), false){% endif %}
    {%- else -%}
    select * from {{ target }}
    {%- endif -%}
  {%- endset -%}
  {{ return(kept ~ '\nunion all\n' ~ lakerank__select_target_columns(source, target)) }}
{%- endmacro %}


{#- dbt's microbatch on an unpartitioned table: the target's rows in the batch's event-time
    window [start, end) (and passing the predicates) are replaced by the batch's rows. The
    window's bounds are UTC wall-clock times, as dbt computes them. -#}
{% macro lakerank__microbatch_rows(source, target, predicates) -%}
  {%- if not model.batch or not model.batch.event_time_start or not model.batch.event_time_end -%}
    {%- do exceptions.raise_compiler_error('microbatch ' ~ target ~ ': dbt gave no start and end for the batch') -%}
  {%- endif -%}
  {%- set event_time = config.get('event_time') -%}
  {%- set window = [
        event_time ~ " >= timestamp'" ~ model.batch.event_time_start.strftime('%Y-%m-%d %H:%M:%S.%f') ~ "'",
        event_time ~ " < timestamp'" ~ model.batch.event_time_end.strftime('%Y-%m-%d %H:%M:%S.%f') ~ "'"] -%}
  {%- set kept -%}
    select * from {{ target }} as DBT_INTERNAL_DEST
    where not coalesce(({{ (window + predicates) | join(') and (') }}), false)
  {%- endset -%}
  {{ return(kept ~ '\nunion all\n' ~ lakerank__select_target_columns(source, target)) }}
{%- endmacro %}
