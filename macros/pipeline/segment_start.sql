{#-
  Seed 000 stage 1 — event-time segment start (`event_time_group_start_point`).
  Floors a TIMESTAMP to the start of its segment of `segment_seconds` (var, default
  86400), counted on the wall clock of the business time zone (the session time zone
  set in the profile), so a daily segment starts at 00:00 business time. A value at
  exactly a boundary (00:00:00) belongs to the segment that starts there.
-#}
{% macro segment_start(ts, segment_seconds=none) -%}
  {%- set seconds = segment_seconds or var('segment_seconds', 86400) | int -%}
  {%- if seconds <= 0 -%}
    {{ exceptions.raise_compiler_error("var segment_seconds must be a positive number of seconds, got " ~ seconds) }}
  {%- endif -%}
  cast(timestampadd(
    second,
    floor(timestampdiff(second, timestamp_ntz'1970-01-01 00:00:00', cast({{ ts }} as timestamp_ntz)) / {{ seconds }}) * {{ seconds }},
    timestamp_ntz'1970-01-01 00:00:00'
  ) as timestamp)
{%- endmacro %}
