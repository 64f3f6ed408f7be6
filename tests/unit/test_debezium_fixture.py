"""The recorded Debezium stream (tests/fixtures/debezium_pg/, scripts/record_debezium.py) keeps
covering what it was recorded for, without Spark: both of Debezium's default decimal
encodings, a restart's re-sent events cut between two changes of one row, and PostgreSQL's
answers consistent with the stream itself (decoded here, independently of the ingest)."""

from __future__ import annotations

import datetime as _dt
from collections import Counter

import debezium_fixture as fx

FIXTURE = fx.PG


def _messages():
    """(file, schema, payload) of every line, in landing order."""
    for build in fx.manifest(FIXTURE)["builds"]:
        for name in build["files"]:
            for line in fx.lines(FIXTURE, name):
                schema, payload = fx.message(line)
                yield name, schema, payload


def test_manifest_lists_every_file_once():
    m = fx.manifest(FIXTURE)
    landed = [f for b in m["builds"] for f in b["files"]]
    assert landed == sorted(landed) and len(set(landed)) == len(landed)
    assert sorted(p.name for p in FIXTURE.glob("*.jsonl")) == landed
    assert m["debezium"] == "3.6.1.Final" and m["postgresql"].startswith("15.")
    assert all((FIXTURE / b["expected"]).exists() for b in m["builds"])
    counts = Counter()
    for _, _, p in _messages():
        counts["tombstone" if p is None else f"{p['source']['table']} {p['op']}"] += 1
    assert dict(counts) == m["events"]


def test_both_decimal_encodings_are_recorded():
    """contracts.amount (numeric) as VariableScaleDecimal, contracts_p.amount (numeric(12,2)) as
    Decimal with scale 2, in inserts, snapshot reads and updates, with several scales."""
    seen = Counter()
    scales = set()
    for _, schema, p in _messages():
        if p is None or p["source"]["table"] not in ("contracts", "contracts_p") or p["after"] is None:
            continue
        fs = fx.field_schema(schema, "after", "amount")
        seen[(p["source"]["table"], fs["name"], p["op"])] += 1
        if fs["name"] == fx.VARIABLE_SCALE and p["after"]["amount"] is not None:
            scales.add(p["after"]["amount"]["scale"])
        if fs["name"] == fx.DECIMAL:
            assert fs["parameters"]["scale"] == "2"
    for op in ("r", "c", "u"):
        assert seen[("contracts", fx.VARIABLE_SCALE, op)] > 0, (op, seen)
        assert seen[("contracts_p", fx.DECIMAL, op)] > 0, (op, seen)
    assert {0, 1, 2, 3, 4} <= scales


def test_restart_resends_into_a_later_file_cut_between_two_changes_of_one_row():
    """Some LSN is delivered in two files; a re-sent file ends after a contract's change whose
    next change, in the same transaction, opens the following file."""
    first_file = {}
    resent = []
    for name, _, p in _messages():
        if p is None:
            continue
        lsn = p["source"]["lsn"]
        if lsn in first_file and first_file[lsn] != name:
            resent.append((name, lsn))
        first_file.setdefault(lsn, name)
    assert resent, "no re-sent event in the fixture"
    files = [f for b in fx.manifest(FIXTURE)["builds"] for f in b["files"]]
    for a, b in zip(files, files[1:]):
        last = [fx.message(line)[1] for line in fx.lines(FIXTURE, a)][-1]
        nxt = [p for p in (fx.message(line)[1] for line in fx.lines(FIXTURE, b))
               if p and p["source"]["table"] == "contracts"]
        if last and last["source"]["table"] == "contracts" and nxt and (a, last["source"]["lsn"]) in resent:
            same_row = nxt[0]["after"]["contract_id"] == last["after"]["contract_id"]
            same_txn = nxt[0]["source"]["txId"] == last["source"]["txId"]
            if same_row and same_txn and nxt[0]["source"]["lsn"] > last["source"]["lsn"]:
                return
    raise AssertionError("no re-sent file ends between two changes of one row in one transaction")


def test_expected_rows_are_the_stream_replayed_in_log_order():
    """At every build point, each table's live rows (key, project, sign time, exact amount) are
    its events up to then, each applied once (a re-sent one skipped), in the files' order: the
    recording is consistent."""
    state = {"contracts": {}, "contracts_p": {}}
    applied = set()
    for build in fx.manifest(FIXTURE)["builds"]:
        for name in build["files"]:
            events = []
            for line in fx.lines(FIXTURE, name):
                schema, p = fx.message(line)
                if p is None or p["source"]["table"] not in state:
                    continue
                events.append((p["source"]["lsn"], schema, p))
            for lsn, schema, p in events:
                # a snapshot's reads share one LSN; a streamed change has its own
                key = (p["source"]["table"], lsn, p["op"], (p["after"] or p["before"])["contract_id"])
                if key in applied:  # re-sent
                    continue
                applied.add(key)
                rows = state[p["source"]["table"]]
                if p["op"] == "d":
                    del rows[p["before"]["contract_id"]]
                else:
                    a = p["after"]
                    rows[a["contract_id"]] = (a["project_id"], a["sign_time"], fx.amount(schema, "after", a["amount"]))
        want = fx.expected(FIXTURE, build)
        for table, rows in state.items():
            got = {cid: (project, _micros(t), None if amt is None else amt.normalize())
                   for cid, (project, t, amt) in rows.items()}
            exp = {r["contract_id"]: (r["project_id"], r["sign_time"],
                                      None if r["amount"] is None else fx.Decimal(r["amount"]).normalize())
                   for r in want[table]}
            assert got == exp, (build["build"], table)


def _micros(us: int) -> str:
    return (_dt.datetime(1970, 1, 1) + _dt.timedelta(microseconds=us)).strftime("%Y-%m-%d %H:%M:%S")
