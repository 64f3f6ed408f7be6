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


{#- The storage partition of a segment: its `segment_start` cut to the period of var
    `segment_period` (`day`, `month` (default) or `year`), as a string such as '2024-03'.
    The segment-keyed tables are partitioned by it, not by the segment itself: a daily
    partition per segment means ~1,100 partitions over three years, and every partition
    costs a file, metastore rows and a listing entry on each write and read (issue C
    measured ~20 ms a file written and ~30 ms a metastore partition). Zone-free: the text
    of a TIMESTAMP_NTZ is its wall clock. -#}
{% macro segment_period(segment_start='segment_start') -%}
  {%- set period = var('segment_period', 'month') -%}
  {%- set width = {'day': 10, 'month': 7, 'year': 4}.get(period) -%}
  {%- if width is none -%}
    {{ exceptions.raise_compiler_error("var segment_period must be day, month or year, got " ~ period) }}
  {%- endif -%}
  substr(cast({{ segment_start }} as string), 1, {{ width }})
{%- endmacro %}
