"""Changing an incremental lakerank model's columns or logic between builds (issue G.1).

One throwaway project that installs lakerank_lib (tests/support/pk_project.py), one home, four
dbt invocations: build every model at commit 1; edit the models (add a column, add an
aggregate field, drop a column, change an aggregate function) and land commit 2; build again;
change one model's logic and run `dbt run --full-refresh --select orders_pk+`. Every table is
compared with values computed here with pandas from the same event rows.

Models (commit source: `sc_events`, a table model whose rows are the landed commits):
  orders_pk      pk_table, deduplicate by order_id; commit 3 multiplies amount (full refresh)
  orders_fail    pk_table, default on_schema_change: adding `status` stops the run
  orders_ignore  pk_table, ignore: `status` added and `amount` dropped; stored columns kept
  orders_sync    pk_table, sync_all_columns: `status` added
  orders_sync_drop pk_table, sync_all_columns: `amount` dropped is refused
  customer_agg   pk_table aggregation, append_new_columns: new field `qty` with its own sum
  customer_max   pk_table aggregation: `amount` sum -> max is refused
  totals         merge_on_read over orders_pk, append_new_columns: new column `n_orders`
  totals_fail    merge_on_read over orders_pk, default: adding `n_orders` stops the run
  totals_ignore  merge_on_read over orders_pk, ignore: `total` replaced by `n_orders`; stored
                 columns kept (`total` NULL in the rewritten rows, `n_orders` not written)
  totals_sync    merge_on_read over orders_pk, sync_all_columns: `total` renamed to
                 `amount_total` (a drop plus an add) is refused
  orders_rename  pk_table, append_new_columns: `amount` renamed to `order_amount`: the new
                 column is added (stored rows read NULL), the old one kept (NULL from commit 2)
"""

from __future__ import annotations

from typing import Dict, List

import pandas as pd
import pytest

from pk_project import PkProject

EVENTS = [  # order_id, customer, amount, qty, status, _commit_id
    (1, "a", 10, 1, "new", 1), (2, "a", 20, 2, "new", 1), (3, "b", 30, 3, "new", 1),
    (4, "b", 40, 4, "new", 1), (5, "c", 50, 5, "new", 1), (6, "c", 60, 6, "new", 1),
    (2, "a", 25, 2, "paid", 2), (7, "a", 70, 7, "new", 2), (3, "b", 35, 3, "paid", 2), (8, "d", 80, 8, "new", 2),
]
EVENT_COLS = ["order_id", "customer", "amount", "qty", "status", "_commit_id"]
PENDING = "{{ lakerank_lib.pending_rows(ref('sc_events')) }}"


def events_model(upto: int) -> str:
    rows = ",\n  ".join(
        f"(cast({o} as bigint), '{c}', cast({a} as bigint), cast({q} as bigint), '{s}', cast({n} as bigint))"
        for o, c, a, q, s, n in EVENTS if n <= upto)
    return (
        "{{ config(materialized='table', file_format='parquet', post_hook=\"alter table {{ this }} set "
        f"tblproperties ('lakerank.commit_id' = '{upto}')\") }}}}\n"
        f"select * from values\n  {rows}\nas t({', '.join(EVENT_COLS)})\n")


def pk(select: str, key: str = "order_id", mode: str = "", options: str = "") -> str:
    """A pk_table over the pending events (keyed by order_id: sequenced by the commit id)."""
    extra = f", on_schema_change='{mode}'" if mode else ""
    seq = ", _commit_id as seq" if key == "order_id" else ""
    return (f"{{{{ config(materialized='pk_table', primary_key=['{key}'], options={options}{extra}) }}}}\n"
            f"select {select}{seq} from {PENDING}\n")


def totals(select: str, mode: str = "") -> str:
    extra = f", on_schema_change='{mode}'" if mode else ""
    return (
        f"{{{{ config(materialized='merge_on_read', primary_key=['customer']{extra}) }}}}\n"
        "{%- set w = lakerank_lib.commit_window(ref('sc_events')) -%}\n"
        "{%- set touched -%} t.customer in (select customer from " + PENDING + ") {%- endset -%}\n"
        "{%- do lakerank_lib.declare_rewrite(touched) -%}\n"
        f"select customer, {select} from {{{{ ref('orders_pk') }}}} as t\n"
        "{% if w['from'] >= 0 %}where {{ touched }}{% endif %}\n"
        "group by customer\n")


DEDUP_SEQ = "{'merge-engine': 'deduplicate', 'sequence.field': 'seq'}"
AGG = "{'merge-engine': 'aggregation', 'fields.amount.aggregate-function': 'sum'}"
AGG_QTY = ("{'merge-engine': 'aggregation', 'fields.amount.aggregate-function': 'sum', "
           "'fields.qty.aggregate-function': 'sum'}")
AGG_MAX = "{'merge-engine': 'aggregation', 'fields.amount.aggregate-function': 'max'}"

V1 = {
    "sc_events": events_model(1),
    "orders_pk": pk("order_id, customer, amount", options=DEDUP_SEQ),
    "orders_fail": pk("order_id, customer, amount", options=DEDUP_SEQ),
    "orders_ignore": pk("order_id, customer, amount", mode="ignore", options=DEDUP_SEQ),
    "orders_sync": pk("order_id, customer, amount", mode="sync_all_columns", options=DEDUP_SEQ),
    "orders_sync_drop": pk("order_id, customer, amount", mode="sync_all_columns",
                           options=DEDUP_SEQ),
    "customer_agg": pk("customer, amount", key="customer", mode="append_new_columns", options=AGG),
    "customer_max": pk("customer, amount", key="customer", options=AGG),
    "totals": totals("sum(amount) as total", mode="append_new_columns"),
    "totals_fail": totals("sum(amount) as total"),
    "totals_ignore": totals("sum(amount) as total", mode="ignore"),
    "totals_sync": totals("sum(amount) as total", mode="sync_all_columns"),
    "orders_rename": pk("order_id, customer, amount", mode="append_new_columns", options=DEDUP_SEQ),
}
V2 = {
    "sc_events": events_model(2),
    "orders_fail": pk("order_id, customer, amount, status", options=DEDUP_SEQ),
    "orders_ignore": pk("order_id, customer, status", mode="ignore", options=DEDUP_SEQ),
    "orders_sync": pk("order_id, customer, amount, status", mode="sync_all_columns",
                      options=DEDUP_SEQ),
    "orders_sync_drop": pk("order_id, customer", mode="sync_all_columns", options=DEDUP_SEQ),
    "customer_agg": pk("customer, amount, qty", key="customer", mode="append_new_columns",
                       options=AGG_QTY),
    "customer_max": pk("customer, amount", key="customer", options=AGG_MAX),
    "totals": totals("sum(amount) as total, count(*) as n_orders", mode="append_new_columns"),
    "totals_fail": totals("sum(amount) as total, count(*) as n_orders"),
    "totals_ignore": totals("count(*) as n_orders", mode="ignore"),
    "totals_sync": totals("sum(amount) as amount_total", mode="sync_all_columns"),
    "orders_rename": pk("order_id, customer, amount as order_amount", mode="append_new_columns",
                        options=DEDUP_SEQ),
}


def events(upto: int) -> pd.DataFrame:
    df = pd.DataFrame(EVENTS, columns=EVENT_COLS)
    return df[df["_commit_id"] <= upto]


def latest(df: pd.DataFrame) -> pd.DataFrame:
    return df.sort_values("_commit_id").groupby("order_id", as_index=False).last()


def table(dbt: PkProject, name: str, order: str) -> List[dict]:
    """The model's rows (pk_table: without `_bucket`)."""
    rows = dbt.rows(f"select * from lakerank.{name} order by {order}")
    return [{k: v for k, v in r.items() if k != "_bucket"} for r in rows]


def frame_rows(df: pd.DataFrame, cols: List[str], order: str) -> List[dict]:
    """Expected rows as Spark hands them over: ints (a NULL-holding column is float here), None."""
    records = df.sort_values(order)[cols].to_dict("records")
    return [{k: None if pd.isna(v) else int(v) if isinstance(v, float) else v for k, v in r.items()} for r in records]


@pytest.fixture(scope="module")
def built(runner, tmp_path_factory):
    """Commit 1 with V1, commit 2 with V2 (some models refused), and the full refresh."""
    dbt = PkProject(runner, tmp_path_factory.mktemp("schema_change"), V1)
    dbt.invoke("run")
    after1 = {name: table(dbt, name, "1") for name in ("orders_fail", "customer_max", "totals_fail", "totals_sync")}
    for name, sql in V2.items():
        dbt.write_model(name, sql)
    second = dbt.invoke("run", expect_success=False)
    status: Dict[str, tuple] = {r.node.name: (r.status, r.message or "") for r in second.result}
    state2 = {name: table(dbt, name, "1") for name in ("orders_pk", "totals")}
    audit = {
        "customer_agg": dbt.rows("select * from lakerank.customer_agg__audit_log"),
        "customer_agg_state": dbt.rows("select * from lakerank.customer_agg__state_log"),
        "orders_sync": dbt.rows("select * from lakerank.orders_sync__audit_log"),
        "totals": dbt.rows("select * from lakerank.totals__audit_log"),
    }
    other = {name: table(dbt, name, "1") for name in ("orders_ignore", "orders_sync", "orders_sync_drop",
                                                      "customer_agg", "customer_max", "orders_fail", "totals_fail",
                                                      "totals_ignore", "totals_sync", "orders_rename")}
    # a logic change upstream, then the documented rebuild of it and everything downstream
    dbt.write_model("orders_pk", pk("order_id, customer, amount * 10 as amount", options=DEDUP_SEQ))
    third = dbt.invoke("run", "--full-refresh", "--select", "orders_pk+")
    return {"dbt": dbt, "after1": after1, "status": status, "state2": state2, "audit": audit, "other": other,
            "third": sorted(r.node.name for r in third.result),
            "state3": {name: table(dbt, name, "customer" if "totals" in name else "order_id")
                       for name in ("orders_pk", "totals", "totals_fail")}}


def test_default_fail_names_model_columns_and_fixes(built):
    for name, column in (("orders_fail", "status string"), ("totals_fail", "n_orders bigint")):
        status, message = built["status"][name]
        assert status == "error", (name, message)
        for part in (name, f"added {column}", "on_schema_change='append_new_columns'",
                     f"dbt build --full-refresh --select {name}+"):
            assert part in message, (part, message)
        # nothing written: the stored rows are those of commit 1
        assert built["other"][name] == built["after1"][name]


def test_append_new_columns_adds_an_aggregate_field(built):
    assert built["status"]["customer_agg"][0] == "success", built["status"]["customer_agg"]
    ev = events(2)
    want = ev.groupby("customer", as_index=False)["amount"].sum()
    qty2 = ev[ev["_commit_id"] == 2].groupby("customer")["qty"].sum()
    want["qty"] = want["customer"].map(qty2)  # c took no commit-2 event: its stored row reads NULL
    got = sorted(built["other"]["customer_agg"], key=lambda r: r["customer"])
    assert got == frame_rows(want, ["customer", "amount", "qty"], "customer")
    for log in ("customer_agg", "customer_agg_state"):
        rows = built["audit"][log]
        assert rows and all("qty" in r for r in rows)
        assert all(r["qty"] is None for r in rows if r["_commit_id"] == 1)
        assert all(r["qty"] is not None for r in rows if r["_commit_id"] == 2)


def test_ignore_keeps_stored_columns(built):
    assert built["status"]["orders_ignore"][0] == "success", built["status"]["orders_ignore"]
    want = latest(events(2)).copy()
    want["amount"] = want["amount"].where(want["_commit_id"] == 1)  # dropped from the model: NULL from commit 2
    got = built["other"]["orders_ignore"]
    assert sorted(got, key=lambda r: r["order_id"]) == frame_rows(
        want.rename(columns={"_commit_id": "seq"}), ["order_id", "customer", "amount", "seq"], "order_id")


def test_sync_all_columns_adds_and_refuses_a_drop(built):
    assert built["status"]["orders_sync"][0] == "success", built["status"]["orders_sync"]
    want = latest(events(2)).copy()
    want["status"] = want["status"].where(want["_commit_id"] == 2)  # stored rows read NULL
    got = built["other"]["orders_sync"]
    assert sorted(got, key=lambda r: r["order_id"]) == frame_rows(
        want.rename(columns={"_commit_id": "seq"}), ["order_id", "customer", "amount", "seq", "status"], "order_id")
    assert {r["status"] for r in built["audit"]["orders_sync"] if r["_commit_id"] == 2} == {"paid", "new"}
    status, message = built["status"]["orders_sync_drop"]
    assert status == "error" and "cannot drop amount bigint" in message, message
    assert "dbt build --full-refresh --select orders_sync_drop+" in message


def test_changed_aggregate_function_is_refused(built):
    status, message = built["status"]["customer_max"]
    assert status == "error", message
    for part in ("customer_max", "'fields.amount.aggregate-function' sum -> max",
                 "dbt build --full-refresh --select customer_max+"):
        assert part in message, (part, message)
    assert built["other"]["customer_max"] == built["after1"]["customer_max"]


def test_merge_on_read_append_new_columns(built):
    assert built["status"]["totals"][0] == "success", built["status"]["totals"]
    orders = latest(events(2))
    want = orders.groupby("customer", as_index=False).agg(total=("amount", "sum"), n_orders=("order_id", "count"))
    touched = set(events(2).query("_commit_id == 2")["customer"])
    want["n_orders"] = want["n_orders"].where(want["customer"].isin(touched))
    assert sorted(built["state2"]["totals"], key=lambda r: r["customer"]) == frame_rows(
        want, ["customer", "total", "n_orders"], "customer")
    log = built["audit"]["totals"]
    assert all(r["n_orders"] is None for r in log if r["_commit_id"] == 1)
    assert {r["customer"] for r in log if r["_commit_id"] == 2 and r["n_orders"] is not None} == touched


def test_merge_on_read_ignore_keeps_stored_columns(built):
    assert built["status"]["totals_ignore"][0] == "success", built["status"]["totals_ignore"]
    before = latest(events(1)).groupby("customer", as_index=False).agg(total=("amount", "sum"))
    customers = sorted(set(events(2)["customer"]))
    touched = set(events(2).query("_commit_id == 2")["customer"])
    old = dict(zip(before["customer"], before["total"]))
    # the rewritten customers' rows carry no `total` (no longer selected); n_orders is not stored
    want = [{"customer": c, "total": None if c in touched else int(old[c])} for c in customers]
    assert sorted(built["other"]["totals_ignore"], key=lambda r: r["customer"]) == want


def test_merge_on_read_sync_all_columns_refuses_a_rename(built):
    status, message = built["status"]["totals_sync"]
    assert status == "error", message
    for part in ("totals_sync", "cannot drop total bigint", "dbt build --full-refresh --select totals_sync+"):
        assert part in message, (part, message)
    assert built["other"]["totals_sync"] == built["after1"]["totals_sync"]


def test_rename_with_append_new_columns_keeps_both(built):
    assert built["status"]["orders_rename"][0] == "success", built["status"]["orders_rename"]
    want = latest(events(2)).copy()
    second = want["_commit_id"] == 2
    want["order_amount"] = want["amount"].where(second)  # stored rows read NULL in the new column
    want["amount"] = want["amount"].where(~second)  # the old column is no longer written
    got = built["other"]["orders_rename"]
    assert sorted(got, key=lambda r: r["order_id"]) == frame_rows(
        want.rename(columns={"_commit_id": "seq"}), ["order_id", "customer", "amount", "seq", "order_amount"],
        "order_id")


def test_full_refresh_rebuilds_from_upstream_and_downstream_follows(built):
    assert built["third"] == ["orders_pk", "totals", "totals_fail", "totals_ignore", "totals_sync"]
    orders = latest(events(2)).copy()
    orders["amount"] *= 10
    got = [{k: r[k] for k in ("order_id", "customer", "amount")} for r in built["state3"]["orders_pk"]]
    assert got == frame_rows(orders, ["order_id", "customer", "amount"], "order_id")
    want = orders.groupby("customer", as_index=False).agg(total=("amount", "sum"), n_orders=("order_id", "count"))
    for name in ("totals", "totals_fail"):  # totals_fail: the refused change applied by the rebuild
        assert built["state3"][name] == frame_rows(want, ["customer", "total", "n_orders"], "customer"), name
