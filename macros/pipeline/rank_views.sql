{#- The marts read through the offsets (macros/pipeline/rank_rewrite.sql): a rank is its
    rank in its block plus the block's offset, resolved when read. -#}


{#- Seed 000 stage 6: each live contract's rank over its project's history, from its rank in
    its block (`blk`: int_contract_block_rank) and the block's offset (`off`:
    int_project_block_offset); `base_max_rn = asc_rn - mem_rn`, the positions its project's
    earlier segments use. -#}
{% macro rank_fact(blk, off) -%}
select
    b.project_id,
    b.contract_id,
    b.sign_time,
    b.amount,
    b.mem_rn,
    b.segment_start,
    o.block_offset + b.block_rn - b.mem_rn as base_max_rn,
    o.block_offset + b.block_rn as asc_rn
from {{ blk }} as b
inner join {{ off }} as o on b.project_id = o.project_id and b.block = o.block
{%- endmacro %}


{#- Seed 000 stage 5, the zipper: each version's positions in its block (`ver`:
    int_project_block_version) plus the block's offset; a block's last version ends at the
    project's next block's first sign time, the project's last at the open end. -#}
{% macro rank_zipper(ver, off) -%}
select
    v.project_id,
    v.ver_start,
    coalesce(v.ver_end, o.next_start, {{ lakerank_lib.open_version_end() }}) as ver_end,
    o.block_offset + v.positions_through as base_max_rn,
    v.segment_start
from {{ ver }} as v
inner join {{ off }} as o on v.project_id = o.project_id and v.block = o.block
{%- endmacro %}


{#- The retract changelog of the fact, derived from the audit logs of its two tables (`blk`,
    `off`: their `lakerank_lib.audit_log` queries): a version of a contract's rank row lasts
    while both its block row's version and its block's offset version do; consecutive equal
    versions are one; each version starts with +I (+U after an earlier one that ends at the
    same commit) and ends with -D (-U before a later one). Replayed in `_commit_id` order,
    retractions first, it gives `rank_fact` at every commit of both tables. -#}
{% macro rank_changelog(blk, off) -%}
{%- set cols = ['project_id', 'contract_id', 'sign_time', 'amount', 'mem_rn', 'segment_start'] -%}
{%- set never = 9223372036854775807 -%}
with

blk_log as (
    select * from {{ blk }}
),

off_log as (
    select * from {{ off }}
),

{%- for name, log, key in [('blk', 'blk_log', ['contract_id']), ('off', 'off_log', ['project_id', 'block'])] %}

{{ name }}_versions as (
    {#- each after image, valid until the key's next commit -#}
    select
        a.*,
        coalesce(n.next_commit, {{ never }}) as valid_to
    from {{ log }} as a
    inner join (
        select
            {{ key | join(', ') }},
            _commit_id,
            lead(_commit_id) over (partition by {{ key | join(', ') }} order by _commit_id) as next_commit
        from (select distinct {{ key | join(', ') }}, _commit_id from {{ log }}) as key_commits
    ) as n on {% for k in key %}a.{{ k }} = n.{{ k }} and {% endfor %}a._commit_id = n._commit_id
    where a.rowkind in ('+I', '+U')
),
{%- endfor %}

fact_versions as (
    select
        {% for c in cols %}b.{{ c }},
        {% endfor -%}
        o.block_offset + b.block_rn - b.mem_rn as base_max_rn,
        o.block_offset + b.block_rn as asc_rn,
        greatest(b._commit_id, o._commit_id) as valid_from,
        least(b.valid_to, o.valid_to) as valid_to
    from blk_versions as b
    inner join off_versions as o
        on
            b.project_id = o.project_id
            and b.block = o.block
            and b._commit_id < o.valid_to
            and o._commit_id < b.valid_to
),

run_starts as (
    select
        *,
        coalesce(
            lag(valid_to) over by_contract = valid_from
            {%- for c in cols + ['asc_rn'] %}
            and lag({{ c }}) over by_contract <=> {{ c }}
            {%- endfor %},
            false) as continues
    from fact_versions
    window by_contract as (partition by contract_id order by valid_from)
),

runs as (
    select
        {% for c in cols %}{{ c }},
        {% endfor -%}
        base_max_rn,
        asc_rn,
        valid_from,
        lead(valid_from) over by_contract as next_from,
        lag(valid_to) over by_contract as previous_to,
        valid_to
    from (
        select
            {% for c in cols %}first({{ c }}) as {{ c }},
            {% endfor -%}
            first(base_max_rn) as base_max_rn,
            first(asc_rn) as asc_rn,
            min(valid_from) as valid_from,
            max(valid_to) as valid_to
        from (
            select
                *,
                sum(if(continues, 0, 1)) over (
                    partition by contract_id order by valid_from rows between unbounded preceding and current row
                ) as run
            from run_starts
        ) as numbered
        group by contract_id, run
    ) as merged
    window by_contract as (partition by contract_id order by valid_from)
),

events as (
    select
        if(previous_to = valid_from, '+U', '+I') as rowkind,
        {% for c in cols %}{{ c }},
        {% endfor -%}
        base_max_rn,
        asc_rn,
        valid_from as _commit_id
    from runs
    union all
    select
        if(next_from = valid_to, '-U', '-D') as rowkind,
        {% for c in cols %}{{ c }},
        {% endfor -%}
        base_max_rn,
        asc_rn,
        valid_to as _commit_id
    from runs
    where valid_to < {{ never }}
),

commit_times as (
    select
        _commit_id,
        max(_commit_time) as _commit_time
    from (
        select _commit_id, _commit_time from blk_log
        union all
        select _commit_id, _commit_time from off_log
    ) as logged
    group by _commit_id
)

select
    events.rowkind,
    {% for c in cols %}events.{{ c }},
    {% endfor -%}
    events.base_max_rn,
    events.asc_rn,
    events._commit_id,
    commit_times._commit_time
from events
inner join commit_times on events._commit_id = commit_times._commit_id
{%- endmacro %}
