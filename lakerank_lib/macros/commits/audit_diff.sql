{#- The row-level diff from `old_rows` to `new_rows` (two relations or parenthesised
    queries with columns `cols`), keyed by `primary_key`, as audit-log rows: rowkind
    (-U/+U for a changed row, +I new, -D gone), the columns, `_commit_time` and (unless
    `with_commit_id` is false) `_commit_id`. A key on both sides is a change when one of the
    `compared` columns (default: every non-key column) differs; `keep_unchanged` emits -U/+U
    for every key on both sides (Paimon's lookup changelog without row deduplication). -#}
{% macro _audit_diff(old_rows, new_rows, cols, primary_key, commit_id, with_commit_id=true, compared=none, keep_unchanged=false) -%}
  {%- if compared is none -%}
    {%- set compared = [] -%}
    {%- for c in cols if c not in primary_key -%}{%- do compared.append(c) -%}{%- endfor -%}
  {%- endif -%}
  with old_rows as (select * from {{ old_rows }}),
  new_rows as (select * from {{ new_rows }}),
  paired as (
    select
      {%- for c in cols %}
      o.{{ c }} as o__{{ c }}, n.{{ c }} as n__{{ c }},
      {%- endfor %}
      o.{{ primary_key[0] }} is not null as has_old,
      n.{{ primary_key[0] }} is not null as has_new
    from old_rows as o
    full outer join new_rows as n
      on {{ lakerank_lib._key_match('o', 'n', primary_key) }}
  ),
  changed as (
    select * from paired
    {%- if not keep_unchanged %}
    where not (has_old and has_new)
      {%- for c in compared %}
      or not (o__{{ c }} <=> n__{{ c }})
      {%- endfor %}
    {%- endif %}
  ),
  kinds as (
    select stack(2,
      case when has_new then '-U' else '-D' end, false,
      case when has_old then '+U' else '+I' end, true) as (rowkind, is_after),
      changed.*
    from changed
  )
  select rowkind,
    {%- for c in cols %}
    case when is_after then n__{{ c }} else o__{{ c }} end as {{ c }},
    {%- endfor %}
    current_timestamp() as _commit_time
    {%- if with_commit_id %},
    cast({{ commit_id }} as bigint) as _commit_id
    {%- endif %}
  from kinds
  where (is_after and has_new) or (not is_after and has_old)
{%- endmacro %}
