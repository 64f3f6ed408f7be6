"""The log's order and Debezium's exact decimals (issue S) through real dbt builds of the
contracts ingest, against the source table itself.

A simulated source table receives transactions (inserts, late inserts, updates, moves, key
changes, deletes and re-inserts, several changes of one row in one transaction, neighbouring
transactions with one change time); each format renders its changes with the source's own
positions (Debezium Postgres ``sequence``/``lsn``, Debezium MySQL ``file``/``pos``/``row``,
Maxwell ``position``/``xoffset``, Canal ``es``/``id``). Delivery is at least once, as after a
connector restart: every message is landed (file A), then the messages since the restart
point are landed again, the first re-sent file (B) cut between two changes of one row in one
transaction and between a delete and the re-insert of one key, the rest in file C.

The oracle is the source table: after each build, the live contracts the staged changelog
replays to equal the table after every transaction landed so far (a re-send changes nothing).
Debezium: a build per file (the cut file alone must keep the newer images); Canal and
Maxwell: a build of files A and B (within one build a re-sent copy is ordered by its
position too), then one of C. Debezium's amounts come in the default ``decimal.handling.mode=precise``:
``VariableScaleDecimal`` (Postgres ``numeric``), ``Decimal`` with its scale in the wrapper's
schema, and ``Decimal`` without a wrapper with the scale declared (``contracts_amount_scale``);
one out of range is quarantined with its reason.
"""

from __future__ import annotations

import base64
import datetime as _dt
import json
import random
from decimal import ROUND_HALF_UP, Decimal

import pytest

from lakerank_project import Lakerank

EPOCH = _dt.datetime(1970, 1, 1)
T0 = 1_717_200_000_000  # source change times (epoch ms)
OUT_OF_RANGE = Decimal("123456789012345678901.5")  # more than decimal(18,2) holds


# --------------------------------------------------------------------------------------------
# The source table and its transactions
# --------------------------------------------------------------------------------------------

def transactions(seed: int, base: int):
    """Lists of changes ``(kind, before, after)`` (rows: dicts of contract_id, project_id,
    sign_time, amount) and the table after them; ids from ``base``. The restart point is the
    index of the transaction that changes one row twice."""
    rng = random.Random(seed)
    table, txns = {}, []
    t = _dt.datetime(2024, 5, 1, 9)
    amounts = [Decimal("10"), Decimal("12.5"), Decimal("0.125"), Decimal("-3.005"), Decimal("99999.99"),
               Decimal("7.1"), Decimal("-0.01"), Decimal("1234.5678")]

    def row(cid, pid, minutes):
        return {"contract_id": cid, "project_id": pid, "sign_time": t + _dt.timedelta(minutes=minutes),
                "amount": rng.choice(amounts)}

    def run(changes):
        for _, before, after in changes:
            if before is not None:
                del table[before["contract_id"]]
            if after is not None:
                table[after["contract_id"]] = after
        txns.append(changes)

    p1, p2 = base // 1000, base // 1000 + 1
    run([("c", None, row(base + i, p1 if i % 2 else p2, 10 * i)) for i in range(1, 7)])
    run([("c", None, row(base + 7, p1, -30)), ("c", None, row(base + 8, p1, 10))])  # late; a tie
    a = table[base + 2]
    b = dict(a, sign_time=a["sign_time"] - _dt.timedelta(hours=1), amount=Decimal("5.55"))
    c = dict(b, project_id=p2, amount=Decimal("6.666"))
    restart = len(txns)
    run([("u", a, b), ("u", b, c)])  # one row changed twice in one transaction (a move)
    y = table[base + 3]
    run([("d", y, None), ("c", None, dict(y, amount=Decimal("8.08")))])  # delete and re-insert
    k = table[base + 4]
    run([("d", k, None), ("c", None, dict(k, contract_id=base + 40))])  # a key change
    run([("u", table[base + 5], dict(table[base + 5], sign_time=t - _dt.timedelta(days=3)))])
    return txns, restart, table


def truth(table):
    return {cid: (r["project_id"], r["sign_time"].strftime("%Y-%m-%d %H:%M:%S"),
                  f"{r['amount'].quantize(Decimal('0.01'), rounding=ROUND_HALF_UP):.2f}")
            for cid, r in table.items()}


# --------------------------------------------------------------------------------------------
# Renderers: one message per change, with the source's position
# --------------------------------------------------------------------------------------------

def _unscaled_b64(d: Decimal, scale: int) -> str:
    n = int((d * (Decimal(10) ** scale)).to_integral_value())
    return base64.b64encode(n.to_bytes((n.bit_length() + 8) // 8, "big", signed=True)).decode()


def _ms(t: _dt.datetime) -> int:
    return (t - EPOCH) // _dt.timedelta(milliseconds=1)


def _decimal_amount(d: Decimal, how: str):
    if how == "variable":
        scale = max(0, -d.as_tuple().exponent)
        return {"scale": scale, "value": _unscaled_b64(d, scale)}
    return _unscaled_b64(d.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP), 2)  # numeric(p, 2) rounds on insert


def debezium(txns, source: str, amount: str):
    """Messages of Debezium's ``postgresql`` (wrapped; ``amount`` variable or fixed) or
    ``mysql`` (plain, sign_time in epoch ms, amount fixed at scale 2 without a schema)."""
    out, lsn, commit = [], 5000, 4000
    for n, changes in enumerate(txns):
        ts = T0 + 1000 * (n // 2)  # neighbouring transactions share a change time
        for kind, before, after in changes:
            lsn += 8

            def image(r, key_only=False):
                if r is None:
                    return None
                if key_only:
                    return {"contract_id": r["contract_id"]}
                sign = _ms(r["sign_time"]) * (1000 if source == "postgresql" else 1)
                return {"contract_id": r["contract_id"], "project_id": r["project_id"], "sign_time": sign,
                        "amount": _decimal_amount(r["amount"], amount)}

            if source == "postgresql":  # default replica identity: no before image but the key
                src = {"connector": "postgresql", "name": "pg1", "db": "sales", "table": "contracts", "ts_ms": ts,
                       "sequence": json.dumps([str(commit), str(lsn)]), "lsn": lsn, "txId": 700 + n}
                before_image = image(before, key_only=True) if kind == "d" else None
            else:
                src = {"connector": "mysql", "name": "my1", "db": "sales", "table": "contracts", "ts_ms": ts,
                       "server_id": 1, "file": "mysql-bin.000002", "pos": lsn, "row": 0}
                before_image = image(before)
            payload = {"before": before_image, "after": image(after), "source": src, "op": kind, "ts_ms": ts + 40}
            if source == "postgresql":
                fields = [{"field": "contract_id", "type": "int64"}, {"field": "project_id", "type": "int64"},
                          {"field": "sign_time", "type": "int64", "name": "io.debezium.time.MicroTimestamp"},
                          ({"field": "amount", "type": "struct", "name": "io.debezium.data.VariableScaleDecimal"}
                           if amount == "variable" else
                           {"field": "amount", "type": "bytes", "name": "org.apache.kafka.connect.data.Decimal",
                            "parameters": {"scale": "2", "connect.decimal.precision": "18"}})]
                value = {"type": "struct", "optional": True, "fields": fields}
                schema = {"type": "struct", "fields": [dict(value, field="before"), dict(value, field="after")]}
                out.append(json.dumps({"schema": schema, "payload": payload}))
            else:
                out.append(json.dumps(payload))
        commit = lsn + 4
        lsn += 16
    return out


def maxwell(txns):
    out, offset = [], 7000
    for n, changes in enumerate(txns):
        ts = (T0 + 1000 * (n // 2)) // 1000
        for i, (kind, before, after) in enumerate(changes):
            offset += 50
            r = after if after is not None else before
            msg = {"database": "sales", "table": "contracts", "ts": ts, "xid": 900 + n, "server_id": 5,
                   "position": f"master.000004:{offset}", "type": {"c": "insert", "u": "update", "d": "delete"}[kind],
                   "data": {**r, "sign_time": r["sign_time"].strftime("%Y-%m-%d %H:%M:%S"), "amount": str(r["amount"])}}
            if kind == "u":
                msg["old"] = {k: (v.strftime("%Y-%m-%d %H:%M:%S") if k == "sign_time" else str(v) if k == "amount"
                                  else v) for k, v in before.items() if before[k] != after[k]}
            if i == len(changes) - 1:
                msg["commit"] = True
            else:
                msg["xoffset"] = i
            out.append(json.dumps(msg))
    return out


def canal(txns):
    out, msg_id = [], 300
    for n, changes in enumerate(txns):
        es = T0 + 1000 * (n // 2)
        for kind, before, after in changes:
            msg_id += 1

            def strings(r):
                return {"contract_id": str(r["contract_id"]), "project_id": str(r["project_id"]),
                        "sign_time": r["sign_time"].strftime("%Y-%m-%d %H:%M:%S"), "amount": str(r["amount"])}

            r = after if after is not None else before
            msg = {"data": [strings(r)], "database": "sales", "table": "contracts", "es": es, "ts": es + 5,
                   "id": msg_id, "isDdl": False, "type": {"c": "INSERT", "u": "UPDATE", "d": "DELETE"}[kind],
                   "old": None}
            if kind == "u":
                old = strings(before)
                msg["old"] = [{k: v for k, v in old.items() if v != strings(after)[k]}]
            out.append(json.dumps(msg))
    return out


def deliveries(messages, txns, restart):
    """Files A (every message), B (the re-sent messages from the restart point up to the cut:
    the first change of the twice-changed row, and the delete before its re-insert) and C
    (the rest of the re-sent messages)."""
    first = sum(len(c) for c in txns[:restart])
    resent = messages[first:]
    # restart txn: [change 1, change 2], next txn: [delete, re-insert]
    cut_b = [resent[0], resent[2]]
    rest_c = [resent[1]] + resent[3:]
    return messages, cut_b, rest_c


# --------------------------------------------------------------------------------------------
# The builds
# --------------------------------------------------------------------------------------------

def live(lr: Lakerank):
    """The live contracts the staged changelog replays to."""
    df = lr.table("stg_contract_changelog").sort_values(["_commit_id", "_seq"])
    state = {}
    for kind, cid, pid, st, amount in df[["rowkind", "contract_id", "project_id", "sign_time", "amount"]].itertuples(
            index=False, name=None):
        if kind in ("+I", "+U"):
            state[int(cid)] = (int(pid), str(st), None if amount is None else f"{Decimal(str(amount)):.2f}")
        elif kind == "-D":
            del state[int(cid)]
        else:  # -U: the stored image it retracts
            assert state[int(cid)] == (int(pid), str(st), f"{Decimal(str(amount)):.2f}"), (cid, st)
    return state


def mine(state, base):
    return {cid: v for cid, v in state.items() if base <= cid < base + 1000}


SOURCES = {"pg-variable": 100_000, "pg-fixed": 200_000, "mysql": 300_000, "maxwell": 400_000, "canal": 500_000}


@pytest.fixture(scope="module")
def built(runner, tmp_path_factory):
    lr = Lakerank(runner, tmp_path_factory.mktemp("cdc_log_order") / "home")
    plans = {name: transactions(seed=i, base=base) for i, (name, base) in enumerate(SOURCES.items())}
    render = {"pg-variable": lambda t: debezium(t, "postgresql", "variable"),
              "pg-fixed": lambda t: debezium(t, "postgresql", "fixed"),
              "mysql": lambda t: debezium(t, "mysql", "fixed"), "maxwell": maxwell, "canal": canal}
    files = {name: deliveries(render[name](txns), txns, restart) for name, (txns, restart, _) in plans.items()}
    bad = json.loads(debezium([[("c", None, {"contract_id": 100_999, "project_id": 100, "sign_time": EPOCH,
                                              "amount": OUT_OF_RANGE})]], "postgresql", "variable")[0])
    debezium_vars = {"contracts_format": "debezium-json", "contracts_table_include": "contracts",
                     "contracts_sign_time_unit": "millis", "contracts_amount_scale": 2}
    seen = {}
    for k in range(3):  # Debezium: a build per delivery file
        lines = [ln for name in ("pg-variable", "pg-fixed", "mysql") for ln in files[name][k]]
        lr.land(lines + ([json.dumps(bad)] if k == 0 else []))
        lr.dbt("run", "--select", "stg_contract_changelog", vars=debezium_vars)
        seen[k] = live(lr)
    for name, fmt in (("maxwell", "maxwell-json"), ("canal", "canal-json")):  # A and B in one build, then C
        for group in ((0, 1), (2,)):
            for k in group:
                lr.land(files[name][k])
            lr.dbt("run", "--select", "stg_contract_changelog", vars={"contracts_format": fmt})
            seen[(name, group)] = live(lr)
    return lr, plans, seen


@pytest.mark.parametrize("name", ["pg-variable", "pg-fixed", "mysql"])
def test_a_resent_debezium_event_never_undoes_a_newer_change(built, name):
    _, plans, seen = built
    _, _, table = plans[name]
    want = truth(table)
    assert len(want) >= 8
    for k in range(3):  # after the originals, after the cut re-send, after the rest
        assert mine(seen[k], SOURCES[name]) == want, (name, k)


@pytest.mark.parametrize("name", ["maxwell", "canal"])
def test_a_resent_canal_or_maxwell_message_is_ordered_by_its_position(built, name):
    _, plans, seen = built
    for group in ((0, 1), (2,)):
        assert mine(seen[(name, group)], SOURCES[name]) == truth(plans[name][2]), (name, group)


def test_the_ingest_log_counts_the_resent_events_stale_and_the_bad_decimal_quarantined(built):
    lr = built[0]
    log = lr.table("stg_contract_ingest_log").sort_values("_commit_id")
    outcomes = ["applied", "noop", "stale", "before_image", "skipped", "quarantined"]
    assert (log["events_landed"] == log[outcomes].sum(axis=1)).all()
    # Debezium's re-sent files B and C (commits 1 and 2), Maxwell's and Canal's C (4, 6) apply nothing
    applied, stale, noop = list(log["applied"]), list(log["stale"]), list(log["noop"])
    assert [applied[c] for c in (1, 2, 4, 6)] == [0, 0, 0, 0]
    assert all(stale[c] > 0 for c in (1, 2, 4, 6))
    # within one build (Maxwell's and Canal's A and B: commits 3, 5) a copy follows its original: a noop
    assert noop[3] > 0 and noop[5] > 0 and stale[3] == stale[5] == 0
    assert list(log["quarantined"]) == [1, 0, 0, 0, 0, 0, 0]
    q = lr.table("stg_contract_quarantine")
    assert list(q["reason"]) == [f"debezium-json after: bad amount '{OUT_OF_RANGE}'"]


def test_the_decimals_land_exactly(built):
    _, plans, seen = built
    # 0.125 and -3.005 round half-up; 1234.5678 to 1234.57; a variable scale of 0 and 4
    for name in ("pg-variable", "pg-fixed", "mysql"):
        got = {v[2] for v in mine(seen[0], SOURCES[name]).values()}
        assert got == {v[2] for v in truth(plans[name][2]).values()}
