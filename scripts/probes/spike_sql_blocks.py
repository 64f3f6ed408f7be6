"""The offsets alternative with its local ranks clustered by block (scripts/probes/spike_batch_floor.py
--blocks; docs/decisions/0004-one-commit-per-batch.md, "The touched blocks read by pruning"):

- `loc_c`, the local-rank table sorted by block month (`block_key`, yyyymm) then project, in
  row groups of ~2,048 rows (DuckDB's smallest), built beside `loc` with the same rows;
- 2p, the inputs reading it under a literal predicate of the touched blocks (one disjunct a
  month: `block_key = m and project_id in (...)`, or the month alone when it has more than
  LIST_MAX projects), computed by the driver from step 1's output inside the step's time, so
  Parquet's row-group statistics skip the other blocks;
- 3p, the results computing the touched blocks' tails once (a block's positions are its
  largest new local rank, not a second count over the tail);
- 3q, 3p planned whole: adaptive execution and broadcasts off for the statement (each adaptive
  stage and each broadcast is a Spark job of its own: 16 jobs become 5);
- 4p, the per-contract changelog reading `loc_c` under the touched projects' tails (every block
  from a project's first touched month on: the only blocks whose offset can move);
- the checks: 2p stages the rows 2 stages, 3p and 3q write the changes 3 writes, 4p the changelog 4
  writes, and the offsets view after 3p's changes equals DuckDB's re-rank of every event.
"""

from __future__ import annotations

import pathlib

from spike_check import differs
from spike_sql import offsets_changes_tail, offsets_inputs_sql, offsets_staged


def build_blocks_state(con, state: pathlib.Path) -> None:
    """`loc_c`: `loc` with `block_key`, sorted by block month then project, small row groups."""
    con.execute(f"""
        copy (select project_id, contract_id, sign_time, amount, block, local_rn,
                     cast(year(block) * 100 + month(block) as integer) as block_key
              from read_parquet('{state / "loc"}') order by block_key, project_id, contract_id)
        to '{state / "loc_c"}' (format parquet, row_group_size 2048)""")


# A month touched in more projects than this is pushed down as the month alone (its rows are most
# of the month's row groups anyway); the statement's join with the blocks keeps the rows exact.
# Below inFilterThreshold (set for 1b), so Spark pushes each list down as a list, not its range.
LIST_MAX = 100


def block_literals(spark, changes: pathlib.Path) -> dict:
    """From step 1's output (its ~10,000 rows collected by the driver, one Spark job): the touched
    (project, month) blocks and each touched project's first touched month, as literal
    predicates over `block_key` and `project_id` that Parquet's statistics can skip row groups by."""
    by_month: dict[int, set[int]] = {}
    for r in spark.read.parquet(str(changes)).select(
            "old_live", "old_project_id", "old_sign_time", "new_live", "new_project_id", "new_sign_time").collect():
        for live, p, t in ((r.old_live, r.old_project_id, r.old_sign_time), (r.new_live, r.new_project_id,
                                                                          r.new_sign_time)):
            if live:
                by_month.setdefault(t.year * 100 + t.month, set()).add(p)
    first: dict[int, int] = {}
    for m, ps in by_month.items():
        for p in ps:
            first[p] = min(first.get(p, m), m)
    by_first: dict[int, set[int]] = {}
    for p, m in first.items():
        by_first.setdefault(m, set()).add(p)

    def disjuncts(groups: dict[int, set[int]], op: str) -> str:
        # the newest month first: Spark evaluates the disjuncts on every row read, in order, and
        # most rows read are the newest month's
        return " or ".join(f"(block_key {op} {m} and project_id in ({', '.join(map(str, sorted(ps)))}))"
                           if len(ps) <= LIST_MAX else f"block_key {op} {m}"
                           for m, ps in sorted(groups.items(), reverse=True)) or "false"

    return {"blocks": disjuncts(by_month, "="), "tails": disjuncts(by_first, ">=")}


def offsets_inputs_pruned_sql(changes: pathlib.Path, state: pathlib.Path, lit: dict) -> str:
    """2p: statement 2 of the offsets alternative with the touched blocks' local-rank rows read
    from `loc_c` under the literal predicate (the same rows as 2 stages)."""
    return offsets_inputs_sql(changes, state, f"(select * from parquet.`{state}/loc_c` where {lit['blocks']})")


def offsets_results_fused_sql(inputs: pathlib.Path) -> str:
    """3p: statement 3 of the offsets alternative with the tails ranked once: a touched block's
    positions (its distinct sign times) are its largest new local rank, read off the ranked rows."""
    return f"""
    {offsets_staged(inputs)}
    loc_new as (
        select *, cast(dense_rank() over (partition by project_id, block order by sign_time) as bigint) as local_rn
        from (
            select project_id, contract_id, sign_time, amount, block
            from loc_old left anti join chg on loc_old.contract_id = chg.contract_id
            union all
            select project_id, contract_id, sign_time, amount, block from chg where live = 1)
    ),
    positions as (
        select b.project_id, b.block, coalesce(t.positions, 0) as positions
        from blocks as b left join (select project_id, block, max(local_rn) as positions
                                    from loc_new group by project_id, block) as t
            on b.project_id = t.project_id and b.block = t.block
    ),
    {offsets_changes_tail()}"""


def loc_tails_rel(state: pathlib.Path, lit: dict) -> str:
    """4p's local-rank rows: the touched projects' blocks from their first touched month on."""
    return f"(select * from parquet.`{state}/loc_c` where {lit['tails']})"


def check_blocks(con, state: pathlib.Path, out: pathlib.Path) -> dict:
    """2p, 3p and 4p against 2, 3 and 4 (same rows, both ways; images compared as parsed values)."""
    def differ(a: str, b: str) -> int:
        return sum(differs(con, a, b))

    def staged(d: str) -> str:
        return f"""(select part, project_id, block, contract_id, sign_time, amount, local_rn, positions, block_offset
                    from read_parquet('{out / d}/*/*.parquet', hive_partitioning = true))"""

    def changes(d: str) -> str:  # block_offset is a JSON number with a fraction in one and not the other
        return f"""(select part, rowkind, key, json_extract(img, '$.contract_id')::bigint as cid,
                           json_extract_string(img, '$.block') as block, json_extract(img, '$.local_rn')::bigint as rn,
                           json_extract_string(img, '$.sign_time') as st, json_extract_string(img, '$.amount') as amt,
                           json_extract(img, '$.positions')::bigint as pos,
                           json_extract(img, '$.block_offset')::double::bigint as off
                    from read_parquet('{out / d}/*/*.parquet', hive_partitioning = true))"""

    cl_a, cl_b = (f"read_parquet('{out / d}/*.parquet')" for d in ("offset_changelog", "offset_changelog_p"))
    return {"inputs_2p_rows_differing": differ(staged("offset_inputs"), staged("offset_inputs_p")),
            "results_3p_rows_differing": differ(changes("offset_changes"), changes("offset_changes_p")),
            "results_3q_rows_differing": differ(changes("offset_changes"), changes("offset_changes_q")),
            "changelog_4p_rows_differing": differ(cl_a, cl_b)}
