{#- The new rows of the rank tables (parts blk, off, ver, acc: macros/pipeline/rank_rewrite.sql),
    from the rank pass's input rows in `inputs` (a relation or CTE holding `rank_inputs()`):
    the touched blocks' contracts ranked again (stage 2 and the rank in the block), their
    zipper versions (stage 5 inside the block), every block of a touched project with its
    offset (stage 3, a running sum of the blocks' positions) and the project's accumulation. -#}
{% macro rank_results(inputs) -%}
  with
  {%- for part in ['scope', 'chg', 'blk_old', 'off_old'] %}
  {{ part }}_rows as (
      select {{ lakerank.rank_columns(part.replace('_old', '')) | join(', ') }}
      from {{ inputs }}
      where part = '{{ part }}'
  ),
  {%- endfor %}
  block_contracts as (
      select blk_old_rows.project_id, blk_old_rows.contract_id, blk_old_rows.sign_time, blk_old_rows.amount,
          blk_old_rows.segment_start, blk_old_rows.block
      from blk_old_rows
      left anti join chg_rows on blk_old_rows.contract_id = chg_rows.contract_id
      union all
      select project_id, contract_id, sign_time, amount, segment_start, block
      from chg_rows
      where rowkind in ('+I', '+U')
  ),
  block_ranked as (
      select
          *,
          cast({{ lakerank.rank_over('project_id, segment_start') }} as bigint) as mem_rn,
          cast({{ lakerank.rank_over('project_id, block') }} as bigint) as block_rn
      from block_contracts
  ),
  block_points as (
      select
          project_id,
          block,
          sign_time as ver_start,
          max(positions_through) as positions_through,
          max(segment_start) as segment_start
      from (
          select
              *,
              {{ lakerank.positions_through('block_rn', 'project_id, block') }} as positions_through
          from block_ranked
      ) as through
      group by project_id, block, sign_time
  ),
  versions as (
      select
          *,
          lead(ver_start) over (partition by project_id, block order by ver_start) as ver_end
      from block_points
  ),
  blocks as (
      {{ lakerank.rank_block_totals('versions') }}
      union all
      select off_old_rows.project_id, off_old_rows.block, off_old_rows.positions, off_old_rows.first_sign_time,
          off_old_rows.last_sign_time
      from off_old_rows
      left anti join scope_rows
          on off_old_rows.project_id = scope_rows.project_id and off_old_rows.block = scope_rows.block
  ),
  offsets as (
      select
          *,
          coalesce(sum(positions) over (
              partition by project_id order by block rows between unbounded preceding and 1 preceding), 0)
              as block_offset,
          lead(first_sign_time) over (partition by project_id order by block) as next_start
      from blocks
  ),
  accumulated as (
      select
          project_id,
          sum(positions) as max_rn,
          max(last_sign_time) as max_event_time
      from blocks
      group by project_id
  )
  {%- for part, source in [('blk', 'block_ranked'), ('off', 'offsets'), ('ver', 'versions'), ('acc', 'accumulated')] %}
  {{ lakerank.rank_rewrite_row(part) }}
  from {{ source }}
  {{ 'union all' if not loop.last }}
  {%- endfor %}
{%- endmacro %}


{#- Each block's positions, first and last sign time, from its versions (`versions`: rows
    with project_id, block, ver_start, positions_through). -#}
{% macro rank_block_totals(versions) -%}
  select
      project_id,
      block,
      max(positions_through) as positions,
      min(ver_start) as first_sign_time,
      max(ver_start) as last_sign_time
  from {{ versions }}
  group by project_id, block
{%- endmacro %}
