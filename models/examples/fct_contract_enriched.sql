{#- Seed 002 (Arctic dimension join) — every live contract of the pipeline's
    fct_contract_rank with its project's dimension attributes two ways:
    - event time (temporal join, `FOR SYSTEM_TIME AS OF sign_time`): city, designer,
      status of the dim_project_history version valid at sign_time
      (ver_start <= sign_time < ver_end; NULL if the project had no version then);
    - processing time (lookup join): latest_city, latest_designer, latest_status from
      dim_project's current row (NULL if the project is unknown or deleted).
    Both are lakerank_lib.as_of_join: an equi-join on project_id plus one sort per key, nothing
    collected to the driver. Recomputed whole on each build. -#}
{{ config(materialized='table') }}

with

contracts as (
    select
        project_id,
        contract_id,
        sign_time,
        amount,
        asc_rn
    from {{ ref('fct_contract_rank') }}
),

project_versions as (
    select * from {{ ref('dim_project_history') }}
),

current_projects as (
    select
        project_id,
        update_time as ver_start,
        cast(null as timestamp) as ver_end,
        city,
        designer,
        status
    from {{ ref('dim_project') }}
),

at_sign_time as (
    {{ lakerank_lib.as_of_join(
        'contracts',
        'sign_time',
        'project_versions',
        ['project_id'],
        ['ver_start as project_version_start', 'city', 'designer', 'status'],
    ) }}
),

with_latest as (
    {{ lakerank_lib.as_of_join(
        'at_sign_time',
        'sign_time',
        'current_projects',
        ['project_id'],
        ['city as latest_city', 'designer as latest_designer', 'status as latest_status'],
        mode='latest',
    ) }}
),

final as (
    select
        project_id,
        contract_id,
        sign_time,
        amount,
        asc_rn,
        project_version_start,
        city,
        designer,
        status,
        latest_city,
        latest_designer,
        latest_status
    from with_latest
)

select * from final
