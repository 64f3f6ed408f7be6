{#-
  As-of lookup of a versioned (zipper) relation: for each row of `left_sql` (a query with
  `key` and `time_col`), the `value_col` of the version of the same key in force just
  before `time_col`: ver_start < t <= ver_end. "Just before" makes a lookup at a segment
  start exclude rows at exactly that instant (they belong to the segment itself).
  Keys without a version get no row (left-join it and coalesce).
-#}
{% macro as_of_lookup(left_sql, versions, time_col, value_col, key='project_id') -%}
  select l.{{ key }}, l.{{ time_col }}, v.{{ value_col }}
  from ({{ left_sql }}) as l
  inner join {{ versions }} as v
    on l.{{ key }} = v.{{ key }}
    and v.ver_start < l.{{ time_col }}
    and v.ver_end >= l.{{ time_col }}
{%- endmacro %}


{#- The end of an open (current) version in lakerank's zipper tables. -#}
{% macro open_version_end() -%}
  timestamp_ntz '9999-12-31 23:59:59'
{%- endmacro %}
