{#- Audit (`dbt test --selector audit`): every (project, segment) slice the last build's rank
    rewrite produced holds exact ranks, and its staged keys are unique and its columns set
    (`lakerank.rank_slice_problems` says which invariants). The build itself runs the same
    query inside the rank rewrite, before any rank table commits (`check_rank_results`);
    this test re-reads the rows afterwards. -#}
{{ config(tags=['audit']) }}

{%- if lakerank.rank_rewrite_is_empty() %}

select 'no slice rewritten' as nothing_to_check where false

{%- else %}

{{ lakerank.rank_slice_problems(ref('int_contract_rank_rewrite')) }}

{%- endif %}
