{#- The rank rewrite's results and check computed in the driver (`rewrite_table`'s path for
    a build's batch): Spark reads the pass's inputs (`inputs_sql`, the model's query) and the
    driver collects them as Arrow, DuckDB computes the results (`rank_results`) and the check
    (`rank_slice_problems`) over them from the same macros translated to its dialect, and
    Spark writes every row with the model's `create table as`
    (python_udfs/driver_sql.py; decision 0004, "Spark's floor cold, and the results in the
    driver": ~20 short Spark jobs fewer a batch). Returns {'view': the global temporary view
    holding the rows, 'name': its name}, or none for Spark's path: with `--full-refresh`
    or the first build (the window starts from nothing: every contract is an input), with
    more than var `rank_in_driver_max_rows` inputs (default 2,000,000; 0: always Spark), or
    on a target without a driver lakerank controls. A wrong rank stops the build here, as
    `check_rank_results` does on Spark's path. -#}
{% macro rank_rows_in_driver(inputs_sql, window, rewrite) -%}
  {%- set max_rows = var('rank_in_driver_max_rows', 2000000) | int -%}
  {%- if not execute or max_rows <= 0 or window['from'] == -1 or not window['pending'] -%}
    {{ return(none) }}
  {%- endif -%}
  {%- set name = 'lakerank_rank_rows_' ~ invocation_id | replace('-', '_') -%}
  {%- set found = adapter.lakerank_rows_in_driver(inputs_sql, lakerank.rank_results('driver_inputs'),
                                                  lakerank.rank_problems_query('driver_rows'), name, max_rows) -%}
  {%- if found is none -%}
    {%- do log(rewrite ~ ": more than " ~ max_rows ~ " input rows (var rank_in_driver_max_rows): ranked by Spark") -%}
    {{ return(none) }}
  {%- endif -%}
  {%- if found['problems'] | length > 0 -%}
    {%- do adapter.lakerank_drop_driver_rows(name) -%}
    {%- do lakerank.raise_rank_problems(rewrite, found['problems']) -%}
  {%- endif -%}
  {{ return({'view': 'global_temp.' ~ name, 'name': name}) }}
{%- endmacro %}
