{#-
  publication — a consistent read layer: every published table at one complete commit.

  The model publishes the models it depends on (`-- depends_on: {{ ref('<model>') }}` lines in
  its SQL, dbt's way of naming a dependency that the SELECT does not read); they must all stand at one commit
  (their watermarks, `lakerank.commit_id`). The model's schema (e.g. `+schema: read`) gets,
  per published relation, a view of the same name that reads it *as of the published commit*
  P, and the model's own table holds P (a row per recent publication: `commit_id`,
  `published_at`, `invocation_id`, `tables`, and `bases`, the base versions its views read).
  Publishing commit N:
    1. each reader view is redefined (`alter view ... as`: one metastore call; Spark's
       `create or replace view` drops and recreates) so that it returns the relation at P for P = the commit
       published now *and* for P = N: a merge_on_read model is read as its base version (the
       parquet directory, not the base table, which a compaction re-points) plus the audit
       log's changes in (base commit, P], with both the previous and the current base written
       in, each used for the P it belongs to; any other relation must have a `_commit_id`
       column and is read `where _commit_id <= P`, or be a view over published merge_on_read
       models, read as its own text over their reader views (defined first);
    2. P becomes N in one metastore call: the model's table (partitioned by `commit_id`, so
       that every query lists its partitions afresh instead of a session's cached listing)
       gains partition N. Every reader view reads P, its newest partition, so all of them
       move together. Publications but the last three are dropped;
    3. the model's table records N, the bases its views read and a digest of each view's
       text (`lakerank.commit_id`, `lakerank.published_bases`, `lakerank.published_views`):
       a build that finds every relation still there (nothing new) runs no statement but
       the metastore read (`_publication_current`), and step 1 skips a view whose text is
       the one already defined (a new commit on the same bases and columns).
  (In the terms of lakerank's commit protocol, python_udfs/commit/protocol.py: begin sweeps a
  dead attempt, stage writes the publication's row, swap adds partition N, finish retires
  the old publications.)
  A reader never sees a commit that is not complete in every published table: models that
  failed, were killed, or whose data tests failed leave the publication where it was (dbt
  skips this model), and partitions of an unfinished commit lie above P. Before the first
  publication the reader views do not exist. Not covered: a `--full-refresh` of a published
  model deletes the base versions readers use (readers fail until it is published again), and
  two compactions of one model between publications delete the base the publication reads.
  A query that reads two reader views resolves P once per view (the same one unless P moves
  during that query's planning: microseconds).

  Config: none besides the schema. Needs the driver (targets local, cluster, connect).
-#}
{% materialization publication, default %}
  {%- do adapter.lakerank_require_driver('publication') -%}
  {%- set published = lakerank_lib._publication_relations() -%}
  {%- if not published -%}
    {{ exceptions.raise_compiler_error("publication model " ~ this ~ " depends on no model: name the ones it"
         ~ " publishes with `-- depends_on:` lines that ref them") }}
  {%- endif -%}
  {{ run_hooks(pre_hooks) }}
  {#- every table and view the publication reads or redefines, one metastore call a schema -#}
  {%- set readers = [] -%}
  {%- for relation in published -%}
    {%- do readers.append(this.incorporate(path={'identifier': relation.identifier}, type='view')) -%}
    {%- do readers.append(lakerank_lib._side_table(relation, 'base')) -%}
  {%- endfor -%}
  {%- set info = adapter.lakerank_tables_info([this] + published + readers, qualified=true, view_text=true) -%}
  {%- if info[this.schema ~ '.' ~ this.identifier]['exists'] -%}
    {%- set root = info[this.schema ~ '.' ~ this.identifier]['location'] -%}
  {%- else -%}
    {%- set root = adapter.lakerank_schema_location(this.schema) ~ '/' ~ this.identifier -%}
    {% call statement('create_publication') -%}
      create table {{ this }} (published_at timestamp, invocation_id string, tables string, bases string,
                               commit_id bigint)
      using parquet partitioned by (commit_id) location '{{ root }}'
    {%- endcall %}
  {%- endif -%}
  {%- set own = info[this.schema ~ '.' ~ this.identifier]['properties'] -%}
  {%- set bases = lakerank_lib._publication_bases(published, info) -%}
  {%- if lakerank_lib._publication_current(published, info, own, bases) -%}
    {#- nothing new: every relation at the commit this table records as published, on the
        bases it records, and every reader view in place (no other read) -#}
    {% call statement('main') -%} select 'nothing new to publish' as status {%- endcall %}
    {{ run_hooks(post_hooks) }}
    {{ return({'relations': [this]}) }}
  {%- endif -%}
  {%- set before = adapter.lakerank_partition_locations(this) if info[this.schema ~ '.' ~ this.identifier]['exists'] else {} -%}
  {%- set sources = lakerank_lib._publication_sources(published, info, before, own, bases) -%}
  {%- set commit_id = sources | map(attribute='commit_id') | select('ge', 0) | list -%}
  {%- if not commit_id -%}  {#- nothing committed yet (an empty stream): nothing to publish -#}
    {% call statement('main') -%} select 'nothing committed yet' as status {%- endcall %}
    {{ run_hooks(post_hooks) }}
    {{ return({'relations': [this]}) }}
  {%- endif -%}
  {%- if commit_id | unique | list | length != 1 -%}
    {{ exceptions.raise_compiler_error("publication " ~ this ~ ": the published relations are not at one commit ("
         ~ sources | map(attribute='relation') | join(', ') ~ " at " ~ sources | map(attribute='commit_id') | join(', ')
         ~ "); a model of this build did not finish: nothing is published") }}
  {%- endif -%}
  {%- set commit_id = commit_id[0] -%}
  {%- set published_now = ('commit_id=' ~ commit_id) in before -%}
  {#- A commit already published (a build with nothing new) keeps its reader views: they were
      defined before its partition was added, unless one is missing (a kill between the first
      publication and its views) or a base moved under it (a --full-refresh). -#}
  {%- set views_due = not published_now
        or lakerank_lib._publication_views_stale(sources) -%}
  {%- set texts = {} -%}  {#- each reader view's SELECT, when one may be (re)defined -#}
  {%- if views_due or not before -%}
    {%- for source in sources -%}
      {%- do texts.update({source['relation'].identifier: lakerank_lib._publication_view_sql(source)}) -%}
    {%- endfor -%}
  {%- endif -%}
  {%- set defined = fromjson(own.get('lakerank.published_views', '{}')) -%}
  {%- if before and views_due -%}  {#- views valid for the published commit and for this one -#}
    {%- for source in sources -%}
      {% do lakerank_lib._publication_view(source, texts[source['relation'].identifier], defined) %}
    {%- endfor -%}
    {% do lakerank_lib.fault_point('viewed') %}
  {%- endif -%}
  {%- if not published_now -%}
    {%- set begun = adapter.lakerank_commit_begin(this, commit_id - 1, [], root) -%}
    {%- set location = lakerank_lib.stage_dir(root, 'p', commit_id, begun['writer']) -%}
    {% call statement('main') -%}
      insert overwrite directory '{{ location }}' using parquet
      select
        current_timestamp() as published_at,
        '{{ invocation_id }}' as invocation_id,
        '{{ published | map(attribute='identifier') | join(',') }}' as tables,
        '{{ tojson(bases) }}' as bases
    {%- endcall %}
    {% do adapter.lakerank_commit_swap(this, {'commit_id': commit_id, 'create': [['commit_id=' ~ commit_id, location]]}) %}
    {% do lakerank_lib.fault_point('published') %}
    {#- what the next build compares with before it reads anything else: a hint, used only
        when it equals what the relations hold now, so a plain statement (a kill before it
        leaves the hint behind, and that build reads the partitions as before) -#}
    {%- set digests = {} -%}
    {%- for name, sql in texts.items() -%}{%- do digests.update({name: local_md5(sql)}) -%}{%- endfor -%}
    {% call statement('record_published') -%}
      {{ lakerank_lib.record_commit_sql(this, commit_id, properties={'lakerank.published_bases': tojson(bases),
                                                                     'lakerank.published_views': tojson(digests)}) }}
    {%- endcall %}
  {%- else -%}
    {% call statement('main') -%} select 'commit {{ commit_id }} is published' as status {%- endcall %}
  {%- endif -%}
  {%- if not before -%}  {#- the first publication: P exists before any reader view -#}
    {%- for source in sources -%}
      {% do lakerank_lib._publication_view(source, texts[source['relation'].identifier], {}) %}
    {%- endfor -%}
  {%- endif -%}
  {#- Older publications go, but the last three: a reader may still be planning on one. -#}
  {%- set specs = before.keys() | map('replace', 'commit_id=', '') | map('int') | sort | list -%}
  {%- set retired = [] -%}
  {%- for old in specs[:-2] if old != commit_id -%}
    {%- do retired.append(['commit_id=' ~ old, before['commit_id=' ~ old]]) -%}
  {%- endfor -%}
  {%- if retired -%}
    {%- set plan = {'commit_id': commit_id, 'drop': retired, 'location': root} -%}
    {% do adapter.lakerank_commit_swap(this, plan) %}
    {% do adapter.lakerank_commit_finish(this, plan) %}
  {%- endif -%}
  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [this]}) }}
{% endmaterialization %}


{#- Whether the publication is current, from `info` alone (the materialization's one metastore
    call): this table's properties `own` record as published (`lakerank.commit_id`,
    `lakerank.published_bases`) the commit every published relation with a watermark stands at
    and the `bases` the merge_on_read ones read now, and every reader view exists. -#}
{% macro _publication_current(published, info, own, bases) -%}
  {%- set commit = own.get(lakerank_lib.commit_property()) -%}
  {%- if commit is none or 'lakerank.published_bases' not in own -%}{{ return(false) }}{%- endif -%}
  {%- for relation in published -%}
    {%- if info[relation.schema ~ '.' ~ relation.identifier]['properties'].get(lakerank_lib.commit_property(), commit) != commit
          or not info[this.schema ~ '.' ~ relation.identifier]['exists'] -%}{{ return(false) }}{%- endif -%}
  {%- endfor -%}
  {{ return(fromjson(own['lakerank.published_bases']) == bases) }}
{%- endmacro %}


{#- The current base (directory, commit) of each published merge_on_read relation, by name,
    from `info`. -#}
{% macro _publication_bases(published, info) -%}
  {%- set out = {} -%}
  {%- for relation in published -%}
    {%- set name = relation.schema ~ '.' ~ relation.identifier -%}
    {%- set props = info[name]['properties'] -%}
    {%- if 'lakerank.base_commit' in props -%}
      {%- do out.update({relation.identifier: {'location': info[name ~ '__base']['location'],
                                                'commit': props['lakerank.base_commit'] | int}}) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(out) }}
{%- endmacro %}


{#- Whether a reader view is missing or reads a base other than its relation's current one. -#}
{% macro _publication_views_stale(sources) -%}
  {%- for source in sources -%}
    {%- if load_cached_relation(source['reader']) is none -%}{{ return(true) }}{%- endif -%}
    {%- if source.get('base') and (source['published_base'].get('location') != source['base']['location']
          or source['published_base'].get('commit') | int != source['base']['commit']) -%}{{ return(true) }}{%- endif -%}
  {%- endfor -%}
  {{ return(false) }}
{%- endmacro %}


{#- The relations a publication model publishes: the models it depends on, in its SQL's order. -#}
{% macro _publication_relations() -%}
  {%- set out = [] -%}
  {%- for uid in model.depends_on.nodes if graph.nodes.get(uid) and graph.nodes[uid].resource_type == 'model' -%}
    {%- set node = graph.nodes[uid] -%}
    {%- do out.append(api.Relation.create(schema=node.schema, identifier=node.alias or node.name)) -%}
  {%- endfor -%}
  {{ return(out) }}
{%- endmacro %}


{#- Per published relation: its reader view (name, whether it exists), its commit, and for a
    merge_on_read model the current base (directory, commit) and the one the reader view used
    so far. `info`: the relations' and their bases' and readers' `lakerank_tables_info`
    (qualified names); `before`: this table's partitions (the publications); `own`: its
    properties; `bases`: the current ones (`_publication_bases`). -#}
{% macro _publication_sources(published, info, before, own, bases) -%}
  {%- set out = [] -%}
  {#- the bases the published commit's views read: recorded with it, and as this table's
      property when that names the newest publication (no read) -#}
  {%- set newest = before.keys() | map('replace', 'commit_id=', '') | map('int') | max if before else none -%}
  {%- if newest is not none and own.get(lakerank_lib.commit_property()) == newest | string
        and 'lakerank.published_bases' in own -%}
    {%- set published_bases = fromjson(own['lakerank.published_bases']) -%}
  {%- else -%}
    {%- set has_bases = 'bases' in adapter.get_columns_in_relation(this) | map(attribute='name') | list -%}
    {%- set recorded = lakerank_lib.query_values("select bases from " ~ this
          ~ " where commit_id = (select max(commit_id) from " ~ this ~ ")") if has_bases and before else [] -%}
    {%- set published_bases = fromjson(recorded[0]) if recorded and recorded[0] not in ('', 'None') else {} -%}
  {%- endif -%}
  {#- the published bases still on disk (a --full-refresh deletes them): one call, for those
      that are not a relation's current base -#}
  {%- set current = bases.values() | map(attribute='location') | list -%}
  {%- set moved = published_bases.values() | map(attribute='location') | reject('in', current) | list -%}
  {%- set on_disk = (adapter.lakerank_existing_paths(moved) if moved else []) + current -%}
  {%- for relation in published -%}
    {%- set props = info[relation.schema ~ '.' ~ relation.identifier]['properties'] -%}
    {%- set reader = this.incorporate(path={'identifier': relation.identifier}, type='view') -%}
    {%- set source = {'relation': relation, 'reader': reader,
                      'reader_exists': info[reader.schema ~ '.' ~ reader.identifier]['exists'],
                      'commit_id': props.get('lakerank.commit_id', '-1') | int,
                      'view_text': info[relation.schema ~ '.' ~ relation.identifier].get('view_text', '')} -%}
    {%- if relation.identifier in bases -%}
      {%- set base = bases[relation.identifier] -%}
      {%- set was = published_bases.get(relation.identifier, {}) -%}
      {%- do source.update({'published_base': was}) -%}
      {%- if was and was.get('location') not in on_disk -%}
        {%- set was = {} -%}  {#- gone with a --full-refresh: only the new base is left -#}
      {%- endif -%}
      {%- set primary_key = props.get('lakerank.primary_key', '').split(',') | reject('equalto', '') | list -%}
      {%- if not primary_key -%}  {#- a table last committed before it recorded its key -#}
        {%- for node in graph.nodes.values() if node.resource_type == 'model'
              and (node.alias or node.name) == relation.identifier and node.schema == relation.schema -%}
          {%- set primary_key = node.config.get('primary_key') or [] -%}
          {%- do source.update({'primary_key': primary_key}) -%}
        {%- endfor -%}
        {%- set primary_key = source.get('primary_key', []) -%}
      {%- endif -%}
      {%- if not primary_key -%}
        {{ exceptions.raise_compiler_error("publication " ~ this ~ ": no primary key known for " ~ relation) }}
      {%- endif -%}
      {%- do source.update({'primary_key': primary_key, 'base': base, 'previous': {
          'location': was.get('location', base['location']),
          'commit': was.get('commit', base['commit']) | int}}) -%}
    {%- endif -%}
    {%- do out.append(source) -%}
  {%- endfor -%}
  {#- the merge_on_read relations first; a view over them reads their reader views: its text
      with theirs swapped in, for all such views in one call -#}
  {%- set readers, texts = {}, {} -%}
  {%- for source in out -%}
    {%- if source.get('base') -%}
      {%- do readers.update({source['relation'].schema ~ '.' ~ source['relation'].identifier:
                             source['reader'].schema ~ '.' ~ source['reader'].identifier}) -%}
    {%- elif source['view_text'] -%}
      {%- do texts.update({source['relation'].identifier: source['view_text']}) -%}
    {%- endif -%}
  {%- endfor -%}
  {%- set swapped = adapter.lakerank_swap_relations(texts, readers) if texts and readers else {} -%}
  {%- for source in out -%}
    {%- set text = swapped.get(source['relation'].identifier, '') -%}
    {%- do source.update({'reader_text': text if text != source['view_text'] else ''}) -%}
  {%- endfor -%}
  {{ return(out | selectattr('base', 'defined') | list + out | rejectattr('base', 'defined') | list) }}
{%- endmacro %}


{#- The SELECT of one published relation's reader view (see the materialization's steps); a
    view over published merge_on_read relations reads their reader views (`reader_text`). -#}
{% macro _publication_view_sql(source) -%}
  {%- set p = '(select max(commit_id) from ' ~ this ~ ')' -%}
  {%- set cols = adapter.get_columns_in_relation(source['relation']) | map(attribute='name') | list -%}
  {%- if source.get('base') -%}
    {%- set new, old = source['base'], source['previous'] -%}
    {%- if new['location'] == old['location'] -%}
      {%- set base = "parquet.`" ~ new['location'] ~ "`" -%}
      {%- set since = new['commit'] -%}
    {%- else -%}
      {%- set base -%}
        (select * from parquet.`{{ old['location'] }}` where {{ p }} < {{ new['commit'] }}
         union all
         select * from parquet.`{{ new['location'] }}` where {{ p }} >= {{ new['commit'] }})
      {%- endset -%}
      {%- set since = 'case when ' ~ p ~ ' >= ' ~ new['commit'] ~ ' then ' ~ new['commit'] ~ ' else ' ~ old['commit'] ~ ' end' -%}
    {%- endif -%}
    {{ return(lakerank_lib.merge_on_read_select(base,
        'select * from ' ~ lakerank_lib._side_table(source['relation'], 'audit_log')
        ~ ' where _commit_id > ' ~ since ~ ' and _commit_id <= ' ~ p,
        cols, source['primary_key'])) }}
  {%- endif -%}
  {%- if '_commit_id' in cols -%}
    {{ return('select * from ' ~ source['relation'] ~ ' where _commit_id <= ' ~ p) }}
  {%- endif -%}
  {%- if not source['reader_text'] -%}
    {{ exceptions.raise_compiler_error("publication " ~ this ~ ": " ~ source['relation'] ~ " is neither a"
         ~ " merge_on_read model, nor has a _commit_id column, nor is a view over published merge_on_read"
         ~ " models: it cannot be read as of a commit") }}
  {%- endif -%}
  {{ return(source['reader_text']) }}
{%- endmacro %}


{#- Define one published relation's reader view as `sql`, unless it exists and `defined` (the
    digests this table recorded of the views as last defined) says it already reads `sql`: a
    new commit on the same bases and columns leaves every reader view's text as it is (the
    published commit is read from this table at query time). -#}
{% macro _publication_view(source, sql, defined) -%}
  {%- if source['reader_exists'] and defined.get(source['relation'].identifier) == local_md5(sql) -%}
    {{ return(false) }}
  {%- endif -%}
  {% call statement('publish_' ~ source['relation'].identifier) -%}
    {{ lakerank_lib._define_view(source['reader'], exists=source['reader_exists']) }}
    {{ sql }}
  {%- endcall %}
  {{ return(true) }}
{%- endmacro %}
