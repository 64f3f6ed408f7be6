{#- The rows of merge-on-read table `relation` that satisfy `predicate` (SQL over its
    columns, alias `t`), as a parenthesised query: of `columns` (default: all of them) when
    pushed, of all the table's columns when the view is filtered as is.

    Filtering the view from outside reaches its base and its newest changes, but not the
    changes on the other side of its anti-joins: every key of the audit log since the base
    is read and broadcast twice, whatever the filter. Here the predicate is applied to the
    base and to every change first. That is exact because a commit writes each changed
    key's before image (-U, -D) beside its after image: any change that supersedes a row
    satisfying the predicate carries that row's image, so it passes the predicate too and
    still removes the row. The predicate must therefore depend on the row's own columns
    (a subquery over other relations is fine; a comparison with other rows of this table is
    not). Pushing costs extra joins of the predicate, which small changes do not repay: the
    view is filtered as is while the changes since the base hold less than `push_min_bytes`
    (where the pipeline's rank rewrite lost and where it gained: docs/decisions/0002-batch-cost.md), and
    for a relation that is not a merge-on-read view (no recorded base). -#}
{% macro merge_on_read_rows(relation, predicate, columns=none, push_min_bytes=33554432) -%}
  {%- set state = adapter.lakerank_merge_on_read_state(relation, push_min_bytes) -%}
  {%- if state['base_commit'] is none or state['change_bytes'] < push_min_bytes -%}
    (select * from {{ relation }} as t where {{ predicate }})
  {%- else -%}
    {%- set base = lakerank_lib._side_table(relation, 'base') -%}
    ({{ lakerank_lib.merge_on_read_select(
        '(select * from ' ~ base ~ ' as t where ' ~ predicate ~ ')',
        'select * from ' ~ lakerank_lib._side_table(relation, 'audit_log') ~ ' as t where _commit_id > '
          ~ state['base_commit'] ~ ' and (' ~ predicate ~ ')',
        columns or state['base_columns'], state['primary_key']) }})
  {%- endif -%}
{%- endmacro %}
