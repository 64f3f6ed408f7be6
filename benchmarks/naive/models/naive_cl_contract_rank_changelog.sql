{#- The changelog the re-rank implies: its rows against the previous run's (kept by the rank
    table's pre-hooks), as lakerank's changelog writes them (-U/+U pairs, +I, -D). -#}
{%- set new = ref('naive_cl_contract_rank') -%}
{%- set old = new.incorporate(path={"identifier": new.identifier ~ '_prev'}) -%}

with

diff as (
    select
        n.contract_id is not null as has_new,
        o.contract_id is not null as has_old,
        struct(n.project_id, n.contract_id, n.sign_time, n.amount, n.asc_rn) as new_row,
        struct(o.project_id, o.contract_id, o.sign_time, o.amount, o.asc_rn) as old_row
    from {{ new }} as n
    full outer join {{ old }} as o on n.contract_id = o.contract_id
    where not (
        n.project_id <=> o.project_id
        and n.sign_time <=> o.sign_time
        and n.amount <=> o.amount
        and n.asc_rn <=> o.asc_rn
    )
),

images as (
    select
        inline(filter(array(
            named_struct('rowkind', if(has_new, '-U', '-D'), 'has', has_old, 'img', old_row),
            named_struct('rowkind', if(has_old, '+U', '+I'), 'has', has_new, 'img', new_row)
        ), x -> x.has))
    from diff
)

select
    rowkind,
    img.project_id,
    img.contract_id,
    img.sign_time,
    img.amount,
    img.asc_rn
from images
