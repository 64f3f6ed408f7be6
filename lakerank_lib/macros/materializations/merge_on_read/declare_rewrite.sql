{#- Declare which current rows this run of a merge_on_read model recomputes (its commit
    record's `rewrite`, dbt/adapters/lakerank/records.py): a SQL
    predicate over the table's columns (alias `t`); and, optionally, `prior`: a query that
    returns exactly those rows as they stand (the model read them already), which the commit
    diffs against instead of reading the view, and `prior_columns`, the columns it returns:
    when the table has a column the prior does not return (a column added to the model), the
    commit reads the view instead. -#}
{% macro declare_rewrite(predicate, prior=none, prior_columns=none) -%}
  {%- if execute -%}{%- do adapter.lakerank_declare_rewrite(this, predicate, prior, prior_columns) -%}{%- endif -%}
{%- endmacro %}
