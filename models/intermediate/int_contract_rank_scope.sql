{#- The scope of this build's rank rewrite (no seed table: the seed re-ranks in Flink state),
    for this model's own commit window: `lakerank.contract_rank_scope()`
    (macros/pipeline/rank_scope.sql) says what it holds. Its consumers read it when it was
    built for their window and expand the same macro for theirs otherwise
    (`lakerank.rank_scope_relation()`), so it reads no downstream state. -#}
{{ config(
    materialized='table',
    post_hook="{{ lakerank.record_scope_window() }}",
) }}

{{ lakerank.contract_rank_scope() }}
