{#- Seed 000 stages 2-6 for this build's changes (macros/pipeline/rank_rewrite.sql says
    what it computes): the new rows of every touched project's tail for the fact, the
    zipper and the accumulation, which each of them then commits as a diff against its own
    rows. Its query stores what the pass reads (`lakerank.rank_inputs()`, each rank table's
    view read once); a post-hook adds the results computed from those stored rows, the next
    checks them (`lakerank.check_rank_results`: a wrong rank stops the build here, before
    any rank table commits it). No seed
    table of its own: it replaces the Flink state the seed's jobs keep between their
    stages. Rebuilt every build that has commits to rank, for its window, which it records
    (`rewrite_table`, macros/pipeline/rewrite_table.sql: with nothing to rank it runs no
    statement); a rank table whose window it does not cover expands the same SQL. -#}
{{ config(
    materialized='rewrite_table',
    partition_by=['part'],
    post_hook=[
        "{{ lakerank.insert_rank_results() }}",
        "{{ lakerank.check_rank_results(this) }}",
        "{{ lakerank.record_rewrite_window() }}",
    ],
) }}

{{ lakerank.rank_inputs() }}
