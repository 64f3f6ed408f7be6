{#- The pipeline's rank function (var `rank_function`): dense_rank (default), rank, or
    row_number with ties broken by contract_id. Fails at compile time on anything else. -#}
{% macro rank_function() -%}
  {%- set fn = var('rank_function', 'dense_rank') -%}
  {%- if fn not in ['dense_rank', 'rank', 'row_number'] -%}
    {{ exceptions.raise_compiler_error("var rank_function must be one of dense_rank, rank, row_number; got '" ~ fn ~ "'") }}
  {%- endif -%}
  {{ return(fn) }}
{%- endmacro %}


{#- Rank of each row within `partition_by`, ordered by `order_col` (ties by `tie_col` for row_number). -#}
{% macro rank_over(partition_by, order_col='sign_time', tie_col='contract_id') -%}
  {%- set fn = lakerank.rank_function() -%}
  {{ fn }}() over (partition by {{ partition_by }} order by {{ order_col }}{{ ', ' ~ tie_col if fn == 'row_number' }})
{%- endmacro %}


{#- Rank positions used by the rows of a window partition whose rank column is `rank_col`:
    distinct sign times for dense_rank (= the largest dense rank), rows for rank and row_number. -#}
{% macro positions_used(rank_col, partition_by) -%}
  {%- if lakerank.rank_function() == 'dense_rank' -%}
    max({{ rank_col }}) over (partition by {{ partition_by }})
  {%- else -%}
    count(*) over (partition by {{ partition_by }})
  {%- endif -%}
{%- endmacro %}


{#- Rank positions used by the rows of `partition_by` with order value <= the current row's
    (ties included): the zipper value at a point in time. -#}
{% macro positions_through(rank_col, partition_by, order_col='sign_time') -%}
  {%- if lakerank.rank_function() == 'dense_rank' -%}
    {{ rank_col }}
  {%- else -%}
    count(*) over (partition by {{ partition_by }} order by {{ order_col }}
                   range between unbounded preceding and current row)
  {%- endif -%}
{%- endmacro %}


{#- The settings the pipeline's incremental state depends on (stored with every commit), and
    the layout of the rank tables (`offsets`: ranks stored inside their block with one offset
    per block, docs/pipeline.md; a home built by an earlier layout is rebuilt with
    --full-refresh). -#}
{% macro pipeline_fingerprint() -%}
  {{- 'rank_function=' ~ lakerank.rank_function() ~ ';segment_seconds=' ~ var('segment_seconds') ~ ';layout=offsets' -}}
{%- endmacro %}
