{#- Small helpers every part of the library uses. -#}


{% macro _as_list(value) -%}
  {%- if value is none -%}{{ return([]) }}
  {%- elif value is string -%}{{ return([value]) }}
  {%- else -%}{{ return(value | list) }}
  {%- endif -%}
{%- endmacro %}


{#- `a.k <=> b.k and ...` over the key columns `keys` of two aliases (null-safe). -#}
{% macro _key_match(a, b, keys) -%}
  {%- for k in keys %}{{ a }}.{{ k }} <=> {{ b }}.{{ k }}{{ ' and ' if not loop.last }}{% endfor -%}
{%- endmacro %}
