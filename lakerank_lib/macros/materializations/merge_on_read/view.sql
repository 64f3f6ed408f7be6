{#- (Re)define the view: the base with each key's newest change after `base_commit` on top
    (an after-image replaces the row, a delete removes it), and the model's watermark. An
    existing view is redefined in place (`alter view ... as`, then its properties: Spark's
    `create or replace view` drops the view first and a reader in between finds none). A
    kill between the two leaves the old watermark: the rerun compacts again. `cols`: the
    base's columns; `exists`: whether the view exists. -#}
{% macro _merge_on_read_replace_view(view_relation, parts, primary_key, base_commit, commit_id, fingerprint, cols, exists) -%}
  {%- set properties -%}
    tblproperties (
      '{{ lakerank_lib.commit_property() }}' = '{{ commit_id }}',
      'lakerank.base_commit' = '{{ base_commit }}',
      'lakerank.primary_key' = '{{ primary_key | join(',') }}'
      {%- if fingerprint %}, 'lakerank.fingerprint' = '{{ fingerprint }}'{% endif %})
  {%- endset -%}
  {% call statement('replace_view') -%}
    {{ lakerank_lib._define_view(view_relation, properties, exists) }}
    {{ lakerank_lib.merge_on_read_select(
        parts['base'], 'select * from ' ~ parts['audit'] ~ ' where _commit_id > ' ~ base_commit,
        cols, primary_key) }}
  {%- endcall %}
  {%- if exists -%}
    {% do lakerank_lib.fault_point('viewed') %}
    {% call statement('view_properties') -%} alter view {{ view_relation }} set {{ properties }} {%- endcall %}
  {%- endif -%}
{%- endmacro %}


{#- The rows of a merge-on-read table: `base` (a relation) with each key's newest row of
    `changes` (a query over its audit log) on top: an after-image replaces the key's row, a
    delete removes it. A change is the key's newest when no change of a later commit has its
    key (a commit writes at most one after-image per key: its before image, if any, is not
    an upsert). Both branches are anti-joins rather than a window over the changes, so a
    reader's filter on any column (a rewrite's scope, not only the key) reaches the base and
    the newest changes below the joins; a window by key would read every change first. The
    changes on the joins' other side are read whole unless the filter is put there too
    (`merge_on_read_rows`). -#}
{% macro merge_on_read_select(base, changes, cols, primary_key) -%}
    with changes as (
      {{ changes }}
    )
    select {% for c in cols %}base.{{ c }}{{ ', ' if not loop.last }}{% endfor %}
    from {{ base }} as base
    left anti join changes on
      {%- for k in primary_key %} base.{{ k }} = changes.{{ k }}{{ ' and' if not loop.last }}{% endfor %}
    union all
    select {% for c in cols %}newest.{{ c }}{{ ', ' if not loop.last }}{% endfor %}
    from changes as newest
    left anti join changes as later on
      {%- for k in primary_key %} newest.{{ k }} = later.{{ k }} and{% endfor %} later._commit_id > newest._commit_id
    where newest.rowkind in ('+I', '+U')
{%- endmacro %}
