"""The recorded Debezium streams (tests/fixtures/debezium_pg/ and debezium_mysql/,
scripts/record_debezium.py) keep covering what they were recorded for, without Spark:
Debezium's default decimal encodings, a restart's re-sent events cut between two changes of
one row, and the databases' answers consistent with the streams themselves (decoded here,
independently of the ingest)."""

from __future__ import annotations

from collections import Counter

import pytest

import debezium_fixture as fx

FIXTURES = pytest.mark.parametrize("fixture", fx.FIXTURES, ids=lambda f: f.name)


def _messages(fixture):
    """(file, schema, payload) of every line, in landing order."""
    for build in fx.manifest(fixture)["builds"]:
        for name in build["files"]:
            for line in fx.lines(fixture, name):
                schema, payload = fx.message(line)
                yield name, schema, payload


def _changes(fixture):
    """(file, schema, payload) of the contracts tables' change events."""
    for name, schema, p in _messages(fixture):
        if p is not None and "op" in p and p["source"]["table"] in ("contracts", "contracts_p"):
            yield name, schema, p


@FIXTURES
def test_manifest_lists_every_file_once(fixture):
    m = fx.manifest(fixture)
    landed = [f for b in m["builds"] for f in b["files"]]
    assert landed == sorted(landed) and len(set(landed)) == len(landed)
    assert sorted(p.name for p in fixture.glob("*.jsonl")) == landed
    assert m["debezium"] == "3.6.1.Final"
    assert m.get("postgresql", "15.").startswith("15.") and m.get("mariadb", "mariadbd").startswith("mariadbd")
    assert all((fixture / b["expected"]).exists() for b in m["builds"])
    counts = Counter()
    for _, _, p in _messages(fixture):
        if p is None:
            counts["tombstone"] += 1
        elif "op" not in p:
            counts["schema change"] += 1
        else:
            counts[f"{p['source']['table']} {p['op']}"] += 1
    assert dict(counts) == m["events"]


def test_both_decimal_encodings_are_recorded():
    """Postgres: contracts.amount (numeric) as VariableScaleDecimal, contracts_p.amount
    (numeric(12,2)) as Decimal with scale 2; MySQL: decimal(16,4) as Decimal with scale 4; in
    inserts, updates (and Postgres's snapshot reads), with several scales."""
    seen = Counter()
    scales = set()
    for fixture in fx.FIXTURES:
        for _, schema, p in _changes(fixture):
            if p["after"] is None:
                continue
            fs = fx.field_schema(schema, "after", "amount")
            seen[(p["source"]["connector"], p["source"]["table"], fs["name"], p["op"])] += 1
            if fs["name"] == fx.VARIABLE_SCALE and p["after"]["amount"] is not None:
                scales.add(p["after"]["amount"]["scale"])
            if fs["name"] == fx.DECIMAL:
                assert fs["parameters"]["scale"] == {"contracts_p": "2", "contracts": "4"}[p["source"]["table"]]
    for op in ("r", "c", "u"):
        assert seen[("postgresql", "contracts", fx.VARIABLE_SCALE, op)] > 0, (op, seen)
        assert seen[("postgresql", "contracts_p", fx.DECIMAL, op)] > 0, (op, seen)
    for op in ("c", "u"):
        assert seen[("mysql", "contracts", fx.DECIMAL, op)] > 0, (op, seen)
    assert {0, 1, 2, 3, 4} <= scales


@FIXTURES
def test_restart_resends_into_a_later_file_cut_between_two_changes_of_one_row(fixture):
    """Some events are delivered twice, in two files; a re-sent file ends after a contract's
    change whose next change, committed at the same time (one transaction), opens the following
    file."""
    first_file = {}
    resent = set()
    for name, _, p in _changes(fixture):
        key = (p["source"]["table"], fx.position(p), p["op"], (p["after"] or p["before"])["contract_id"])
        if first_file.setdefault(key, name) != name:
            resent.add((name, key))
    assert resent, "no re-sent event in the fixture"
    files = [f for b in fx.manifest(fixture)["builds"] for f in b["files"]]
    for a, b in zip(files, files[1:]):
        last = fx.message(fx.lines(fixture, a)[-1])[1]
        nxt = [p for p in (fx.message(line)[1] for line in fx.lines(fixture, b))
               if p and "op" in p and p["source"]["table"] == "contracts"]
        if not (last and "op" in last and last["source"]["table"] == "contracts" and nxt):
            continue
        key = ("contracts", fx.position(last), last["op"], last["after"]["contract_id"])
        if (a, key) in resent and nxt[0]["after"]["contract_id"] == last["after"]["contract_id"] \
                and nxt[0]["source"]["ts_ms"] == last["source"]["ts_ms"] and fx.position(nxt[0]) > fx.position(last):
            return
    raise AssertionError("no re-sent file ends between two changes of one row in one transaction")


@FIXTURES
def test_expected_rows_are_the_stream_replayed_once_in_order(fixture):
    """At every build point, each table's live rows (key, project, sign time, exact amount) are
    its events up to then, each applied once (a re-sent one skipped), in the files' order: the
    recording is consistent."""
    manifest = fx.manifest(fixture)
    tables = [t for t in manifest["tables"] if t != "markers"]
    state = {t: {} for t in tables}
    applied = set()
    for build in manifest["builds"]:
        for name in build["files"]:
            for line in fx.lines(fixture, name):
                schema, p = fx.message(line)
                if p is None or "op" not in p or p["source"]["table"] not in state:
                    continue
                key = (p["source"]["table"], fx.position(p), p["op"], (p["after"] or p["before"])["contract_id"])
                if key in applied:  # re-sent
                    continue
                applied.add(key)
                rows = state[p["source"]["table"]]
                if p["op"] == "d":
                    del rows[p["before"]["contract_id"]]
                else:
                    a = p["after"]
                    rows[a["contract_id"]] = (a["project_id"], fx.sign_time(schema, "after", a["sign_time"]),
                                              _exact(fx.amount(schema, "after", a["amount"])))
        want = fx.expected(fixture, build)
        for table, rows in state.items():
            exp = {r["contract_id"]: (r["project_id"], r["sign_time"], _exact(r["amount"])) for r in want[table]}
            assert rows == exp, (build["build"], table)


def _exact(value):
    return None if value is None else fx.Decimal(value).normalize()
