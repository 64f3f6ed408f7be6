{#-
  A view model is redefined in place: `alter view ... as` when the view exists (one metastore
  call that swaps its text and schema), `create or replace view` (dbt-spark's) otherwise.
  Spark runs `create or replace view` on an existing view as a drop and then a create, and a
  query that resolves the view in between fails with TABLE_OR_VIEW_NOT_FOUND: every build
  would open that gap for every reader of every view model (seen in CI through the published
  reader view of fct_contract_rank_changelog, which reads the dbt view of that name).
  dbt-spark's path is kept where `alter view` cannot say everything: comments (persist_docs)
  and an enforced contract. Used through the project's dispatch config (search_order with
  lakerank_lib before dbt; the package README).
-#}
{% macro lakerank__create_view_as(relation, sql) -%}
  {%- set existing = adapter.get_relation(relation.database, relation.schema, relation.identifier) -%}
  {%- set contract = config.get('contract') -%}
  {%- if existing is not none and existing.is_view
        and not config.persist_relation_docs() and not config.persist_column_docs()
        and not (contract and contract.enforced) -%}
  alter view {{ relation }} as
    {{ sql }}
  {%- else -%}
  {{ spark__create_view_as(relation, sql) }}
  {%- endif -%}
{%- endmacro %}
