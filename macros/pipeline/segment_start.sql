{#-
  Seed 000 stage 1 — event-time segment start (`event_time_group_start_point`).
  Floors a business time (a TIMESTAMP_NTZ wall-clock value of the business time zone)
  to the start of its segment of `segment_seconds` (var, default 86400), so a daily
  segment starts at 00:00 business time. A value at exactly a boundary (00:00:00)
  belongs to the segment that starts there. Zone-free arithmetic on the wall clock: a
  daylight-saving day is still one segment from 00:00 to 00:00, and a local time inside
  a spring-forward gap stays where it was written.
-#}
{% macro segment_start(ts, segment_seconds=none) -%}
  {%- set seconds = segment_seconds or var('segment_seconds', 86400) | int -%}
  {%- if seconds <= 0 -%}
    {{ exceptions.raise_compiler_error("var segment_seconds must be a positive number of seconds, got " ~ seconds) }}
  {%- endif -%}
  timestampadd(
    second,
    floor({{ lakerank.wall_seconds(ts) }} / {{ seconds }}) * {{ seconds }},
    timestamp_ntz'1970-01-01 00:00:00'
  )
{%- endmacro %}


{#- Whole seconds of a wall-clock time since 1970-01-01 00:00:00, from its fields (zone-free:
    `timestampdiff` goes through the session zone and shifts times in a DST gap). -#}
{% macro wall_seconds(ts) -%}
  (datediff(cast(cast({{ ts }} as timestamp_ntz) as date), date'1970-01-01') * 86400
    + hour(cast({{ ts }} as timestamp_ntz)) * 3600 + minute(cast({{ ts }} as timestamp_ntz)) * 60
    + second(cast({{ ts }} as timestamp_ntz)))
{%- endmacro %}
