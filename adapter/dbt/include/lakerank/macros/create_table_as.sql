{#- dbt's `create_table_as` on lakerank: dbt-spark's, after clearing the folder a managed table
    of that name would live in when the catalog holds no such table. A build killed inside a
    `create table ... as select` leaves the files it wrote there (`_temporary/`, or whole
    partitions) with nothing in the catalog, and Spark then refuses every later create of the
    table (LOCATION_ALREADY_EXISTS: "remove the existing location first"); on S3 an empty
    folder the store lists but S3A cannot delete does the same (the delete repairs it:
    docs/deployment.md, "Folders S3 lists but cannot delete"). The folder is the default
    location of a table that does not exist, so nothing reads it. A model with its own
    `location_root` (an external table, whose files a drop keeps on purpose) is left as
    dbt-spark leaves it. -#}
{% macro lakerank__create_table_as(temporary, relation, compiled_code, language='sql') -%}
  {%- if execute and not temporary and not config.get('location_root') -%}
    {%- do lakerank_clear_dead_table_folder(relation) -%}
  {%- endif -%}
  {{ spark__create_table_as(temporary, relation, compiled_code, language) }}
{%- endmacro %}


{#- Delete the default folder of `relation` when the catalog has no table of that name. -#}
{% macro lakerank_clear_dead_table_folder(relation) -%}
  {%- if relation.schema and not adapter.lakerank_table_exists(relation) -%}
    {%- set root = adapter.lakerank_schema_location(relation.schema) -%}
    {%- if root and adapter.lakerank_delete_path(root.rstrip('/') ~ '/' ~ relation.identifier | lower) -%}
      {% do log("lakerank: " ~ relation ~ ": deleted the files a killed or failed create left in its folder", info=true) %}
    {%- endif -%}
  {%- endif -%}
{%- endmacro %}
