{#-
  lakerank_lib.as_of_join(facts, fact_time, dimension, key, columns, mode='event_time',
                      ver_start='ver_start', ver_end='ver_end', bounds='[)', fact_key=none,
                      strategy='window')

  A SELECT of every column of `facts` (in order) followed by the requested `columns` of the
  `dimension` (a zipper: key, ver_start, ver_end, values) version that matches each fact;
  NULL when none matches. Facts are never dropped or duplicated (strategy 'window' and mode
  'latest' guarantee it; strategy 'range_join' only if the versions of a key do not overlap).
  Reference: lakerank_lib/docs/as_of_join.md.

  Arguments
  - facts, dimension: a relation (ref/source), a CTE name, or a parenthesised subquery.
  - fact_time: the fact column (or expression) holding the fact's time (mode 'event_time').
  - key: the dimension's key column(s); fact_key: the facts' matching column(s), in the same
    order (default: the same names as `key`). A NULL key component never matches.
  - columns: dimension columns to add; an item may be 'col as alias' to rename it.
  - mode: 'event_time' = temporal join, the version valid at fact_time;
          'latest' = lookup join (processing time): the key's open (current) version, the one
          whose ver_end is NULL or >= lakerank_lib.open_version_end(), whatever the fact's time.
  - ver_start, ver_end: the dimension's interval columns. ver_end NULL means open.
  - bounds: '[)' (ver_start <= t < ver_end, the zipper's own convention) or '(]'
    (ver_start < t <= ver_end, the pipeline's "just before" lookup).
  - strategy (event_time only): 'window' (default): facts and versions are unioned, shuffled
    by key and sorted by time once; each fact takes the last version started before it
    (last_value ... ignore nulls over a running frame), then checks its end. Linear in
    facts + versions whatever the number of versions per key. 'range_join': a left join on
    the key with the interval as a residual condition (Spark: sort-merge join, or broadcast
    if Spark itself finds the dimension small); cost per key = facts x versions.

  Neither strategy collects the dimension to the driver or adds a broadcast hint.
  Names starting with `_lr_` are reserved.
-#}
{% macro as_of_join(facts, fact_time, dimension, key, columns, mode='event_time', ver_start='ver_start', ver_end='ver_end', bounds='[)', fact_key=none, strategy='window') -%}
  {%- set key = [key] if key is string else key -%}
  {%- set fact_key = key if fact_key is none else ([fact_key] if fact_key is string else fact_key) -%}
  {%- set columns = [columns] if columns is string else columns -%}
  {%- if key | length == 0 or key | length != fact_key | length -%}
    {{ exceptions.raise_compiler_error("lakerank_lib.as_of_join: `key` and `fact_key` must name the same (non-zero) number of columns") }}
  {%- endif -%}
  {%- if bounds not in ['[)', '(]'] -%}
    {{ exceptions.raise_compiler_error("lakerank_lib.as_of_join: bounds must be '[)' or '(]', got " ~ bounds) }}
  {%- endif -%}
  {%- set cols = [] -%}
  {%- for item in columns -%}
    {%- set parts = item.split(' as ') if ' as ' in item else item.split(' AS ') -%}
    {%- do cols.append({'src': parts[0] | trim, 'name': (parts[-1] | trim)}) -%}
  {%- endfor -%}
  {%- set key_not_null = [] -%}
  {%- for k in key %}{% do key_not_null.append('_lr_d.' ~ k ~ ' is not null') %}{% endfor -%}

  {%- if mode == 'latest' -%}
select
    _lr_f.*{% for c in cols %},
    _lr_d.{{ c.src }} as {{ c.name }}{% endfor %}
from {{ facts }} as _lr_f
left join (
    select {{ key | join(', ') }}{% for c in cols %}, {{ c.src }}{% endfor %}
    from (
        select
            _lr_d.*,
            row_number() over (
                partition by {% for k in key %}_lr_d.{{ k }}{{ ', ' if not loop.last }}{% endfor %}
                order by _lr_d.{{ ver_start }} desc
            ) as _lr_rn
        from {{ dimension }} as _lr_d
        where
            {{ key_not_null | join(' and ') }}
            and (_lr_d.{{ ver_end }} is null or _lr_d.{{ ver_end }} >= {{ lakerank_lib.open_version_end() }})
    ) as _lr_o
    where _lr_rn = 1
) as _lr_d
    on {% for k in key %}_lr_f.{{ fact_key[loop.index0] }} = _lr_d.{{ k }}{{ ' and ' if not loop.last }}{% endfor %}

  {%- elif mode != 'event_time' -%}
    {{ exceptions.raise_compiler_error("lakerank_lib.as_of_join: mode must be 'event_time' or 'latest', got " ~ mode) }}

  {%- elif strategy == 'range_join' -%}
select
    _lr_f.*{% for c in cols %},
    _lr_d.{{ c.src }} as {{ c.name }}{% endfor %}
from {{ facts }} as _lr_f
left join {{ dimension }} as _lr_d
    on {% for k in key %}_lr_f.{{ fact_key[loop.index0] }} = _lr_d.{{ k }} and {% endfor %}
    {%- if bounds == '[)' %}
    _lr_d.{{ ver_start }} <= _lr_f.{{ fact_time }}
    and (_lr_d.{{ ver_end }} is null or _lr_f.{{ fact_time }} < _lr_d.{{ ver_end }})
    {%- else %}
    _lr_d.{{ ver_start }} < _lr_f.{{ fact_time }}
    and (_lr_d.{{ ver_end }} is null or _lr_f.{{ fact_time }} <= _lr_d.{{ ver_end }})
    {%- endif %}

  {%- elif strategy == 'window' -%}
    {#- At equal times, '[)' puts versions before facts (a version starting at t applies to t),
        '(]' puts facts first (it does not). -#}
    {%- set fact_order = 'asc' if bounds == '[)' else 'desc' -%}
    {%- set in_end = '<' if bounds == '[)' else '<=' -%}
select
    _lr_u._lr_fact.*{% for c in cols %},
    case when _lr_u._lr_hit then _lr_u._lr_dim._lr_c{{ loop.index0 }} end as {{ c.name }}{% endfor %}
from (
    select
        _lr_fact,
        _lr_dim,
        _lr_dim is not null
        and (_lr_dim._lr_end is null or _lr_t {{ in_end }} _lr_dim._lr_end) as _lr_hit
    from (
        select
            _lr_is_fact,
            _lr_t,
            _lr_fact,
            last(_lr_dim, true) over (
                partition by {% for k in key %}_lr_k{{ loop.index0 }}{{ ', ' if not loop.last }}{% endfor %}
                order by _lr_t asc nulls first, _lr_is_fact {{ fact_order }}, _lr_end_order asc nulls last
                rows between unbounded preceding and current row
            ) as _lr_dim
        from (
            select
                {%- for k in fact_key %}
                _lr_f.{{ k }} as _lr_k{{ loop.index0 }},
                {%- endfor %}
                _lr_f.{{ fact_time }} as _lr_t,
                true as _lr_is_fact,
                null as _lr_end_order,
                struct(_lr_f.*) as _lr_fact,
                null as _lr_dim
            from {{ facts }} as _lr_f
            union all
            select
                {%- for k in key %}
                _lr_d.{{ k }} as _lr_k{{ loop.index0 }},
                {%- endfor %}
                _lr_d.{{ ver_start }} as _lr_t,
                false as _lr_is_fact,
                _lr_d.{{ ver_end }} as _lr_end_order,
                null as _lr_fact,
                named_struct(
                    '_lr_end', _lr_d.{{ ver_end }}{% for c in cols %},
                    '_lr_c{{ loop.index0 }}', _lr_d.{{ c.src }}{% endfor %}
                ) as _lr_dim
            from {{ dimension }} as _lr_d
            where {{ key_not_null | join(' and ') }} and _lr_d.{{ ver_start }} is not null
        ) as _lr_all
    ) as _lr_w
    where _lr_is_fact
) as _lr_u

  {%- else -%}
    {{ exceptions.raise_compiler_error("lakerank_lib.as_of_join: strategy must be 'window' or 'range_join', got " ~ strategy) }}
  {%- endif -%}
{%- endmacro %}
