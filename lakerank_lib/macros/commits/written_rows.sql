{#- What a commit wrote, for its model's data tests in the same invocation (the
    `get_where_subquery` override, tests/where_subquery.sql, reads them back). -#}

{#- `filter`: a SQL predicate over the relation's columns (alias `t`) selecting the rows
    this run wrote, e.g. `lakerank_lib._partition_filter(column, values)`. `rows`, instead:
    a query returning exactly the relation's current rows that this run wrote, cheaper to
    read than the relation (a merge-on-read model's own commit partition: the relation is a
    view over the whole base). -#}
{% macro _remember_written(relation, filter=none, rows=none, commit_id=none) -%}
  {%- do adapter.lakerank_note_written(relation, filter, rows, commit_id) -%}
{%- endmacro %}


{#- What a view over a merge-on-read model's audit log (config `lakerank_audit_log_of`: that
    model's name, e.g. a changelog view) gained in this invocation: the model's commit
    partition when it committed, nothing when it ran without committing, unknown (none) when
    it did not run or rewrote itself whole. -#}
{% macro _audit_log_written(relation) -%}
  {%- for node in graph.nodes.values() if node.resource_type == 'model'
        and (node.alias or node.name) == relation.identifier and node.schema == relation.schema
        and node.config.get('lakerank_audit_log_of') -%}
    {%- set of = node.config.get('lakerank_audit_log_of') -%}
    {%- for source in graph.nodes.values() if source.resource_type == 'model' and source.name == of -%}
      {%- set source_relation = api.Relation.create(schema=source.schema, identifier=source.alias or source.name) -%}
      {%- set written = adapter.lakerank_written(source_relation) -%}
      {%- if written is not none and written['filter'] == 'false' -%}
        {{ return({'filter': 'false', 'rows': none}) }}
      {%- elif written is not none and written.get('commit_id') is not none -%}
        {{ return({'filter': 't._commit_id = ' ~ written['commit_id'], 'rows': none}) }}
      {%- endif -%}
    {%- endfor -%}
  {%- endfor -%}
  {{ return(none) }}
{%- endmacro %}
