"""The publication's reader of a view model: its SQL text with the published relations'
names swapped for their readers' (adapter/dbt/adapters/lakerank/view_text.py)."""

from __future__ import annotations

from dbt.adapters.lakerank.view_text import swap_relations

READERS = {"lakerank.int_contract_block_rank": "lakerank_read.int_contract_block_rank",
           "lakerank.int_project_block_offset": "lakerank_read.int_project_block_offset"}


def test_each_reference_is_swapped_quoted_or_not_in_any_case():
    text = ("select * from lakerank.int_contract_block_rank as b\n"
            "inner join `lakerank`.`int_project_block_offset` as o on b.block = o.block\n"
            "union all select * from LAKERANK.INT_CONTRACT_BLOCK_RANK")
    assert swap_relations(text, READERS) == (
        "select * from lakerank_read.int_contract_block_rank as b\n"
        "inner join lakerank_read.int_project_block_offset as o on b.block = o.block\n"
        "union all select * from lakerank_read.int_contract_block_rank")


def test_a_longer_name_a_column_and_another_schema_stay():
    text = ("select b.int_contract_block_rank from lakerank.int_contract_block_rank__audit_log as b, "
            "other_lakerank.int_contract_block_rank, lakerank.int_contract_block_ranks")
    assert swap_relations(text, READERS) == text


def test_nothing_to_swap_returns_the_text():
    assert swap_relations("select 1", {}) == "select 1"
