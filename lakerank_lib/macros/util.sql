{#- Small helpers every part of the library uses. -#}


{% macro as_list(value) -%}
  {%- if value is none -%}{{ return([]) }}
  {%- elif value is string -%}{{ return([value]) }}
  {%- else -%}{{ return(value | list) }}
  {%- endif -%}
{%- endmacro %}
