{#- pk_table: the model's columns against its config, and the input's row kind and arrival order. -#}


{#- Stored columns (partition columns last, `rowkind` dropped) and checks of the config
    against the model's columns. -#}
{% macro _pk_layout(schema, primary_key, partition_by, order_by) -%}
  {%- set names = schema | map(attribute='name') | list -%}
  {%- for group, cols in [('primary_key', primary_key), ('partition_by', partition_by), ('order_by', order_by)] -%}
    {%- for c in cols -%}
      {%- if c not in names -%}
        {{ exceptions.raise_compiler_error("pk_table " ~ this ~ ": " ~ group ~ " column '" ~ c
            ~ "' is not a column of the model (columns: " ~ names | join(', ') ~ ")") }}
      {%- endif -%}
    {%- endfor -%}
  {%- endfor -%}
  {%- if primary_key | length == 0 -%}
    {{ exceptions.raise_compiler_error("pk_table " ~ this ~ ": config primary_key is empty") }}
  {%- endif -%}
  {%- for p in partition_by -%}
    {%- if p not in primary_key -%}
      {{ exceptions.raise_compiler_error("pk_table " ~ this ~ ": partition column '" ~ p
          ~ "' must be part of primary_key (cross-partition upsert is not supported)") }}
    {%- endif -%}
  {%- endfor -%}
  {%- for reserved in ['_bucket', '_commit_id', '_commit_time', '_live'] if reserved in names -%}
    {{ exceptions.raise_compiler_error("pk_table " ~ this ~ ": column name '" ~ reserved
        ~ "' is reserved (used by the table's bucket, audit log and state log); rename or drop it") }}
  {%- endfor -%}
  {%- set columns = [] -%}
  {%- for c in schema if c.name != 'rowkind' and c.name not in partition_by -%}{%- do columns.append(c) -%}{%- endfor -%}
  {%- for p in partition_by -%}
    {%- for c in schema if c.name == p -%}{%- do columns.append(c) -%}{%- endfor -%}
  {%- endfor -%}
  {{ return({'columns': columns, 'names': columns | map(attribute='name') | list, 'has_rowkind': 'rowkind' in names}) }}
{%- endmacro %}


{% macro _pk_kind_expr(has_rowkind, model_name) -%}
  {%- if has_rowkind -%}
    case
      when rowkind is null then '+I'
      when upper(rowkind) in ('+I', '-U', '+U', '-D') then upper(rowkind)
      else raise_error(concat('pk_table {{ model_name }}: unsupported rowkind ', rowkind,
                              ' (expected +I, -U, +U or -D)'))
    end
  {%- else -%}
    '+I'
  {%- endif -%}
{%- endmacro %}


{% macro _pk_arrival_expr(order_by) -%}
  {%- if order_by -%}
    row_number() over (order by {{ order_by | join(', ') }})
  {%- else -%}
    monotonically_increasing_id()
  {%- endif -%}
{%- endmacro %}
