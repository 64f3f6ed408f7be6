{#-
  Seed 000 `dwd_project_contract_table`: the contract changes in a commit window (default:
  this model's pending one), each with its event-time segment start. -U/-D rows carry the
  before image (where the contract was), +I/+U rows the after image (where it is now).
-#}
{% macro contract_changes(window=none) -%}
  select
    rowkind, project_id, contract_id, sign_time, amount,
    {{ lakerank.segment_start('sign_time') }} as segment_start,
    _seq, _commit_id
  from {{ lakerank_lib.pending_rows(ref('stg_contract_changelog'), window=window) }}
{%- endmacro %}
