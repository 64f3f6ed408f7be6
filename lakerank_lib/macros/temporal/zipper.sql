{#-
  lakerank_lib.zipper(source, key, version_time, columns, change_order=['_commit_id'],
                  rowkind='rowkind', open_end=none, collapse_unchanged=false)

  A SELECT (no trailing semicolon) building a zipper table (拉链表, SCD type 2) from any
  audit log / changelog. Output columns: <key columns>, ver_start, ver_end, <columns>.
  Reference: lakerank_lib/docs/zipper.md.

  Arguments
  - source: a relation (ref/source), a CTE name, or a parenthesised subquery.
  - key: a column name or a list of them (the entity's key).
  - version_time: the column holding when a change takes effect: business time (e.g.
    update_time), or `_commit_time` for a processing-time zipper. Rows where it is NULL
    are ignored.
  - columns: the value column(s) the versions carry.
  - change_order: column(s) ordering several changes of one key at the same version_time,
    oldest first (default ['_commit_id']; [] for none). NULL sorts oldest.
  - rowkind: the row-kind column (`+I`, `-U`, `+U`, `-D`); none = every row is an add.
  - open_end: SQL expression for the end of the open (current) version; default
    lakerank_lib.open_version_end() (timestamp_ntz '9999-12-31 23:59:59'); 'null' for NULL.
  - collapse_unchanged: merge consecutive versions whose values are equal (NULL-safe).

  Semantics
  - An add row (`+I`, `+U`, NULL or any kind other than `-U`/`-D`) says "from version_time
    on, the entity is <columns>"; a `-D` row says "from version_time on, it is absent"
    (a tombstone); `-U` rows are before-images and are ignored.
  - Several changes at the same (key, version_time): the last one wins, ordered by
    change_order ascending (NULLs first), then retract before add (at equal change_order an
    add beats a `-D`: -D then +I is a delete and re-insert), then by the values of
    `columns` ascending, NULLs first (the greatest wins; identical rows are interchangeable).
    This is how a late correction or a re-correction replaces a version.
  - A tombstone is a version boundary that is not output: it ends the previous version and
    nothing starts there; a later add re-inserts the key.
  - ver_start = version_time of the winning add; ver_end = the next version_time of the key
    that has a winning change (add or tombstone); the open version ends at open_end.
  - Everything is recomputed from the whole log on every run, so a late change landing
    between two existing versions also corrects the previous version's ver_end.
  - Without collapse_unchanged, consecutive versions with identical values are all kept (one
    row per change point); with it, a change point whose state (absent, or the values)
    equals the previous point's is dropped, and repeated tombstones with it.
  - Columns must be orderable (no map types). Names starting with `_lr_` are reserved.

  Cost: one shuffle of the log by key and one sort per key (a single window pass; collapse
  adds two more windows on the same partitioning). Materialise it as a table.
-#}
{% macro zipper(source, key, version_time, columns, change_order=['_commit_id'], rowkind='rowkind', open_end=none, collapse_unchanged=false) -%}
  {%- set key = [key] if key is string else key -%}
  {%- set columns = [columns] if columns is string else columns -%}
  {%- set change_order = [] if change_order is none else ([change_order] if change_order is string else change_order) -%}
  {%- if key | length == 0 -%}
    {{ exceptions.raise_compiler_error("lakerank_lib.zipper: `key` must name at least one column") }}
  {%- endif -%}
  {%- set end_expr = lakerank_lib.open_version_end() if open_end is none else open_end -%}
  {%- set part = key | join(', ') -%}
  {%- set order = ['_lr_t asc'] -%}
  {%- for c in change_order %}{% do order.append('_lr_o' ~ loop.index0 ~ ' asc nulls first') %}{% endfor -%}
  {%- do order.append('_lr_add asc') -%}
  {%- for c in columns %}{% do order.append(c ~ ' asc nulls first') %}{% endfor -%}
  {%- set window = 'partition by ' ~ part ~ ' order by ' ~ (order | join(', ')) -%}
  {%- set out = key + ['ver_start', 'ver_end'] + columns -%}
  {#- The last change of each version_time (the next row, if any, is a later version_time):
      key, _lr_t, _lr_add, columns and _lr_next, the next version_time. -#}
  {%- set last_changes -%}
select * from (
    select
        {{ part }}, _lr_t, _lr_add, {{ columns | join(', ') }},
        lead(_lr_t) over ({{ window }}) as _lr_next
    from (
        {{ lakerank_lib._zipper_changes(source, key, version_time, columns, change_order, rowkind) | indent(8) }}
    ) as _lr_c
) as _lr_n
where not (_lr_next <=> _lr_t)
  {%- endset -%}
select {{ out | join(', ') }}
from (
    select
        {{ part }},
        _lr_t as ver_start,
        coalesce(_lr_next, {{ end_expr }}) as ver_end,
        _lr_add,
        {{ columns | join(', ') }}
    from (
  {%- if not collapse_unchanged %}
        {{ last_changes | indent(8) }}
    ) as _lr_n
  {%- else %}
        select
            {{ part }}, _lr_t, _lr_add, {{ columns | join(', ') }},
            lead(_lr_t) over (partition by {{ part }} order by _lr_t) as _lr_next
        from (
            select
                {{ part }}, _lr_t, _lr_add, {{ columns | join(', ') }},
                lag(_lr_add) over (partition by {{ part }} order by _lr_t) as _lr_prev_add,
                {%- for c in columns %}
                lag({{ c }}) over (partition by {{ part }} order by _lr_t) as _lr_prev{{ loop.index0 }}{{ ',' if not loop.last }}
                {%- endfor %}
            from (
                {{ last_changes | indent(16) }}
            ) as _lr_p
        ) as _lr_l
        {#- keep a change point only if the state differs from the previous point's #}
        where
            _lr_prev_add is null
            or _lr_add <> _lr_prev_add
            or (_lr_add and not ({% for c in columns %}{{ c }} <=> _lr_prev{{ loop.index0 }}{{ ' and ' if not loop.last }}{% endfor %}))
    ) as _lr_n
  {%- endif %}
) as _lr_v
where _lr_add
{%- endmacro %}


{#- The change rows of a zipper's source, normalised: key, _lr_t, _lr_o<i>, _lr_add, columns. -#}
{% macro _zipper_changes(source, key, version_time, columns, change_order, rowkind) -%}
select
    {{ key | join(', ') }},
    {{ version_time }} as _lr_t,
    {%- for c in change_order %}
    {{ c }} as _lr_o{{ loop.index0 }},
    {%- endfor %}
    {%- if rowkind is none %}
    true as _lr_add,
    {%- else %}
    coalesce({{ rowkind }}, '+I') <> '-D' as _lr_add,
    {%- endif %}
    {{ columns | join(', ') }}
from {{ source }} as _lr_src
where {{ version_time }} is not null
{%- if rowkind is not none %}
    and coalesce({{ rowkind }}, '+I') <> '-U'
{%- endif %}
{%- endmacro %}
