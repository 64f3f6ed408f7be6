{#- Declare which current rows this run of a merge_on_read model recomputes: a SQL
    predicate over the table's columns (alias `t`); and, optionally, `prior`: a query that
    returns exactly those rows as they stand (the model read them already), which the commit
    diffs against instead of reading the view, and `prior_columns`, the columns it returns:
    when the table has a column the prior does not return (a column added to the model), the
    commit reads the view instead. -#}
{% macro declare_rewrite(predicate, prior=none, prior_columns=none) -%}
  {%- do adapter.lakerank_memo_set('rewrite:' ~ invocation_id ~ ':' ~ this, predicate) -%}
  {%- do adapter.lakerank_memo_set('rewrite-prior:' ~ invocation_id ~ ':' ~ this,
                                   none if prior is none else {'query': prior, 'columns': prior_columns}) -%}
{%- endmacro %}
