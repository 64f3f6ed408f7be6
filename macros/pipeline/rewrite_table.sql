{#-
  `rewrite_table`: the rank rewrite's materialization (`int_contract_rank_rewrite`). It is
  dbt's `table` (the old table dropped, the query created as a new one, the hooks around it),
  except when there is nothing to rank: every rank table has committed the ingest's head
  (`lakerank.rank_rewrite_window()` is not pending) and the table exists. Then nothing runs -
  no drop, no create, no hooks - and the node reports what it skipped: a build with nothing
  landed, or the rerun of a build that committed everything, costs no Spark job here (the
  drop and the empty create cost ~2 s of a cold build with nothing landed). The table then
  keeps the rows of the last window it was built for; no rank table reads them, since none
  has a commit to take. `--full-refresh` always rebuilds.
-#}
{% materialization rewrite_table, adapter='lakerank' %}
  {%- set target_relation = api.Relation.create(identifier=model['alias'], schema=schema, database=database,
                                                type='table') -%}
  {%- set window = lakerank.rank_rewrite_window() -%}
  {%- if not window.pending and not should_full_refresh() and window.exists -%}
    {%- call statement('main') -%}
      select 'nothing to rank: every rank table has commit {{ window.to }}' as status
    {%- endcall -%}
    {{ return({'relations': [target_relation]}) }}
  {%- endif -%}

  {{ run_hooks(pre_hooks) }}
  {%- if window.exists -%}
    {{ adapter.drop_relation(target_relation) }}
  {%- endif -%}
  {%- call statement('main') -%}
    {{ create_table_as(False, target_relation, compiled_code) }}
  {%- endcall -%}
  {% do persist_docs(target_relation, model) %}
  {{ run_hooks(post_hooks) }}
  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
