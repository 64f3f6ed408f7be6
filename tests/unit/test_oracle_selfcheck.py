"""Self-checks of the CDC generator and oracle in tests/support/cdc.py (pure Python + DuckDB)."""
from __future__ import annotations

import datetime as dt
import json
import os
import sys
from collections import Counter, defaultdict
from decimal import Decimal

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cdc  # noqa: E402

T = dt.datetime


def ev(op, cid, op_ts, pid=1, sign_time="2024-03-01 00:00:00", amount=None, **extra):
    obj = {"op": op, "project_id": pid, "contract_id": cid, "sign_time": sign_time,
           "op_ts": op_ts}
    if amount is not None:
        obj["amount"] = amount
    obj.update(extra)
    return json.dumps(obj)


def ts(sec, ms=0):
    """op_ts string at 2024-03-05 10:00:00 + sec seconds."""
    t = T(2024, 3, 5, 10) + dt.timedelta(seconds=sec, milliseconds=ms)
    return cdc.format_op_ts(t)


def live_dict(oracle):
    return {r.contract_id: (r.project_id, r.sign_time.to_pydatetime(), r.amount)
            for r in oracle.live().itertuples()}


def assert_invariant(counts):
    assert counts["events_landed"] == sum(counts[k] for k in cdc.OUTCOMES), counts


# ---------------------------------------------------------------------------------------------
# Parsing and quarantine
# ---------------------------------------------------------------------------------------------

GOOD = {"op": "+I", "project_id": 1, "contract_id": 7, "sign_time": "2024-03-01 00:00:00",
        "amount": "12.50", "op_ts": "2024-03-01 09:00:00.123"}


def with_(**kw):
    d = dict(GOOD)
    for k, v in kw.items():
        if v is KeyError:
            d.pop(k, None)
        else:
            d[k] = v
    return json.dumps(d)


@pytest.mark.parametrize("line,reason", [
    ("{not json", "invalid_json"),
    ('{"op": "+I", "contract_id": 1', "invalid_json"),
    ('{"op": "+I", "contract_id": 1, "op_ts": "2024-03-01 09:00:00.000", "amount": NaN}',
     "invalid_json"),
    ("[1, 2]", "not_object"),
    ('"just a string"', "not_object"),
    (with_(op=KeyError), "missing_op"),
    (with_(op=None), "missing_op"),
    (with_(op="X"), "unknown_op"),
    (with_(op=" +I"), "unknown_op"),
    (with_(op="+i"), "unknown_op"),
    (with_(contract_id=None), "bad_contract_id"),
    (with_(contract_id=KeyError), "bad_contract_id"),
    (with_(contract_id="7"), "bad_contract_id"),
    (with_(contract_id=7.0), "bad_contract_id"),
    (with_(contract_id=True), "bad_contract_id"),
    (with_(contract_id=2 ** 63), "bad_contract_id"),
    (with_(op_ts="2024-03-01 09:00:00"), "bad_op_ts"),
    (with_(op_ts="2024-03-01 25:61:00.000"), "bad_op_ts"),
    (with_(op_ts="2024-02-30 09:00:00.000"), "bad_op_ts"),
    (with_(op_ts="not-a-timestamp"), "bad_op_ts"),
    (with_(op_ts=None), "bad_op_ts"),
    (with_(op_ts=KeyError), "bad_op_ts"),
    (with_(project_id=None), "bad_project_id"),
    (with_(project_id="p1"), "bad_project_id"),
    (with_(project_id=1.5), "bad_project_id"),
    (with_(op="-U", project_id=KeyError), "bad_project_id"),
    (with_(sign_time="2024-13-45 25:00:00"), "bad_sign_time"),
    (with_(sign_time="2024-03-01"), "bad_sign_time"),
    (with_(sign_time="2023-02-29 00:00:00"), "bad_sign_time"),
    (with_(op="+U", sign_time=None), "bad_sign_time"),
    (with_(op="-U", sign_time="x"), "bad_sign_time"),
    (with_(amount="abc"), "bad_amount"),
    (with_(amount=True), "bad_amount"),
    (with_(amount="NaN"), "bad_amount"),
    (with_(amount="Infinity"), "bad_amount"),
    (with_(amount=[1]), "bad_amount"),
    (with_(amount="1e17"), "bad_amount"),
    (with_(op="-D", amount="abc"), "bad_amount"),
    # the first failing check names the reason
    (with_(contract_id=None, op_ts="bad", sign_time="bad"), "bad_contract_id"),
    (with_(op_ts="bad", project_id=None), "bad_op_ts"),
])
def test_quarantine_reasons(line, reason):
    got = cdc.parse_line(line, "f.jsonl", 3)
    assert isinstance(got, cdc.Quarantined), got
    assert got.reason == reason and got.line_no == 3 and got.raw == line
    o = cdc.Oracle()
    o.consume("f.jsonl", [line])
    assert o.counts()["quarantined"] == 1
    assert o.quarantine_reasons() == {reason: 1}
    assert o.live().empty


@pytest.mark.parametrize("amount,expected", [
    ("12.50", Decimal("12.50")), ("12.5", Decimal("12.50")), (12.5, Decimal("12.50")),
    (7, Decimal("7.00")), (" 7 ", Decimal("7.00")), ("1e2", Decimal("100.00")),
    ("12.345", Decimal("12.35")), ("-12.345", Decimal("-12.35")), ("0.004", Decimal("0.00")),
    (KeyError, None), (None, None), ("9999999999999999.99", Decimal("9999999999999999.99")),
])
def test_amount_parsing(amount, expected):
    got = cdc.parse_line(with_(amount=amount))
    assert isinstance(got, cdc.Event)
    assert got.amount == expected
    if expected is not None:
        assert got.amount.as_tuple().exponent == -2


def test_valid_variants():
    # -D needs neither project_id nor sign_time, and ignores garbage in them
    d = cdc.parse_line('{"op": "-D", "contract_id": 5, "op_ts": "2024-03-01 09:00:00.000"}')
    assert isinstance(d, cdc.Event) and d.op == "-D"
    d = cdc.parse_line(with_(op="-D", project_id="zz", sign_time="2024-13-45 25:00:00"))
    assert isinstance(d, cdc.Event)
    # amount on -D is checked by default, not with the flag off
    bad_amt = with_(op="-D", amount="abc")
    assert isinstance(cdc.parse_line(bad_amt), cdc.Quarantined)
    assert isinstance(cdc.parse_line(bad_amt, check_amount_on_delete=False), cdc.Event)
    # op_ts with 1-3 fraction digits; leap day; key order irrelevant; extra keys ignored
    e = cdc.parse_line(with_(op_ts="2024-02-29 23:59:59.5", extra="x"))
    assert e.op_ts == T(2024, 2, 29, 23, 59, 59, 500000)
    e = cdc.parse_line('{"op_ts": "2024-03-01 00:00:00.000", "amount": 1, "sign_time": '
                       '"2024-03-01 00:00:00", "contract_id": 1, "project_id": 2, "op": "+U"}')
    assert e.image == (2, T(2024, 3, 1), Decimal("1.00"))
    assert cdc.parse_line("   ") is None and cdc.parse_line("") is None


def test_blank_lines_ignored_but_numbered():
    o = cdc.Oracle()
    c = o.consume("a.jsonl", "\n" + ev("+I", 1, ts(0)) + "\n  \n\r\n" + "{bad\n")
    assert c["events_landed"] == 2
    out = o.outcomes()
    assert out.line_no.tolist() == [2, 5]
    assert out.outcome.tolist() == ["applied", "quarantined"]
    assert_invariant(o.counts())


def test_split_lines():
    assert cdc.split_lines("a\nb\r\nc\rd\n") == ["a", "b", "c", "d"]
    assert cdc.split_lines("a\n\n") == ["a", ""]
    assert cdc.split_lines(["a\n", "b\r\n"]) == ["a", "b"]
    # a U+2028 inside a JSON string is not a line break
    assert len(cdc.split_lines('{"x": "a\u2028b"}\n')) == 1


# ---------------------------------------------------------------------------------------------
# Hand-written streams
# ---------------------------------------------------------------------------------------------

def test_ties_and_rank_functions():
    o = cdc.Oracle()
    o.consume("b0.jsonl", [
        ev("+I", 30, ts(0), sign_time="2024-03-02 00:00:00"),
        ev("+I", 10, ts(1), sign_time="2024-03-02 00:00:00"),
        ev("+I", 20, ts(2), sign_time="2024-03-02 00:00:00"),
        ev("+I", 40, ts(3), sign_time="2024-03-02 08:00:00"),
        ev("+I", 50, ts(4), sign_time="2024-03-01 23:59:59"),
        ev("+I", 60, ts(5), pid=2, sign_time="2024-03-02 00:00:00"),
    ])
    want = {
        "dense_rank": {50: 1, 10: 2, 20: 2, 30: 2, 40: 3, 60: 1},
        "rank": {50: 1, 10: 2, 20: 2, 30: 2, 40: 5, 60: 1},
        "row_number": {50: 1, 10: 2, 20: 3, 30: 4, 40: 5, 60: 1},
    }
    for fn, exp in want.items():
        r = o.ranks(fn)
        assert dict(zip(r.contract_id, r.asc_rn)) == exp, fn
        assert list(r.columns) == ["project_id", "contract_id", "sign_time", "asc_rn"]
    # zipper values
    assert o.zipper_value(1, "2024-03-01 23:59:58", "dense_rank") == 0
    assert o.zipper_value(1, "2024-03-02 00:00:00", "dense_rank") == 2
    assert o.zipper_value(1, "2024-03-02 00:00:00", "rank") == 4
    assert o.zipper_value(1, "2024-03-02 00:00:00", "row_number") == 4
    assert o.zipper_value(1, T(2030, 1, 1), "dense_rank") == 3
    assert o.zipper_value(1, T(2030, 1, 1), "rank") == 5
    assert o.zipper_value(3, T(2030, 1, 1), "rank") == 0
    z = o.expected_zipper("rank")
    assert z.values.tolist() == [
        [1, pd.Timestamp("2024-03-01 23:59:59"), pd.Timestamp("2024-03-02 00:00:00"), 1],
        [1, pd.Timestamp("2024-03-02 00:00:00"), pd.Timestamp("2024-03-02 08:00:00"), 4],
        [1, pd.Timestamp("2024-03-02 08:00:00"), pd.NaT, 5],
        [2, pd.Timestamp("2024-03-02 00:00:00"), pd.NaT, 1],
    ]
    zd = o.expected_zipper("dense_rank", open_end="9999-12-31 23:59:59")
    assert zd.base_max_rn.tolist() == [1, 2, 3, 1]
    assert zd.ver_end.iloc[-1] == pd.Timestamp("9999-12-31 23:59:59")
    with pytest.raises(ValueError):
        o.ranks("percent_rank")


def test_stale_update_is_ignored():
    o = cdc.Oracle()
    o.consume("batch_00000.jsonl", [ev("+I", 1, ts(10), sign_time="2024-03-01 05:00:00")])
    c = o.consume("batch_00001.jsonl", [ev("+U", 1, ts(9), sign_time="2024-03-03 05:00:00"),
                                        ev("-D", 1, ts(5))])
    assert c["stale"] == 2 and c["applied"] == 0
    assert live_dict(o) == {1: (1, T(2024, 3, 1, 5), None)}
    assert o.counts() == {"events_landed": 3, "applied": 1, "noop": 0, "stale": 2,
                          "before_image": 0, "quarantined": 0}


def test_older_op_ts_in_same_batch_is_not_stale():
    # within one micro-batch events are applied in order-key order: both apply, newest wins
    o = cdc.Oracle()
    o.consume("b.jsonl", [ev("+I", 1, ts(10), sign_time="2024-03-01 05:00:00"),
                          ev("+U", 1, ts(9), sign_time="2024-03-03 05:00:00")])
    assert o.counts()["applied"] == 2 and o.counts()["stale"] == 0
    assert live_dict(o)[1][1] == T(2024, 3, 1, 5)


def test_op_ts_ties_broken_by_file_then_line():
    o = cdc.Oracle()
    o.consume("b0.jsonl", [ev("+I", 1, ts(5), sign_time="2024-03-01 01:00:00"),
                           ev("+U", 1, ts(5), sign_time="2024-03-01 02:00:00")])
    assert live_dict(o)[1][1] == T(2024, 3, 1, 2)
    # same op_ts in a later file: not stale, it wins
    o.consume("b1.jsonl", [ev("+U", 1, ts(5), sign_time="2024-03-01 03:00:00")])
    assert live_dict(o)[1][1] == T(2024, 3, 1, 3)
    assert o.counts()["applied"] == 3
    # re-consuming a file (same name, same lines): every event is stale
    o.consume("b1.jsonl", [ev("+U", 1, ts(5), sign_time="2024-03-01 03:00:00")])
    assert o.counts()["stale"] == 1


def test_duplicates():
    a = ev("+I", 1, ts(1), sign_time="2024-03-01 01:00:00", amount="5.00")
    b = ev("+U", 1, ts(2), sign_time="2024-03-01 02:00:00", amount="5.00")
    o = cdc.Oracle()
    o.consume("b0.jsonl", [a, b])
    # duplicate of the latest event: same op_ts, later file -> identical image -> noop
    # duplicate of an older event -> stale
    c = o.consume("b1.jsonl", [b, a])
    assert (c["noop"], c["stale"], c["applied"]) == (1, 1, 0)
    assert live_dict(o) == {1: (1, T(2024, 3, 1, 2), Decimal("5.00"))}
    # exact duplicate inside one file: second copy is a noop
    o2 = cdc.Oracle()
    o2.consume("b0.jsonl", [a, a])
    assert o2.outcomes().outcome.tolist() == ["applied", "noop"]
    assert_invariant(o.counts())


def test_noop_update_identical_image():
    o = cdc.Oracle()
    o.consume("b0.jsonl", [
        ev("+I", 1, ts(1), amount="12.50"),
        ev("+U", 1, ts(2), amount=12.5),          # same decimal(18,2) value
        ev("+I", 1, ts(3), amount="12.5"),        # +I on a live contract is an upsert
        ev("+I", 2, ts(4)),                       # amount absent
        '{"op": "+U", "project_id": 1, "contract_id": 2, "sign_time": "2024-03-01 00:00:00", '
        '"amount": null, "op_ts": "%s"}' % ts(5),                 # amount null == absent
        ev("+U", 2, ts(6), amount="0"),           # None -> 0.00 is a change
    ])
    assert o.outcomes().outcome.tolist() == ["applied", "noop", "noop", "applied", "noop",
                                             "applied"]


def test_delete_reinsert_and_tombstones():
    o = cdc.Oracle()
    o.consume("b0.jsonl", [ev("+I", 1, ts(1)), ev("+I", 2, ts(1))])
    o.consume("b1.jsonl", [
        '{"op": "-D", "contract_id": 1, "op_ts": "%s"}' % ts(2),   # minimal -D: applied
        ev("-D", 1, ts(3)),                                       # not live: noop
        ev("-D", 99, ts(4)),                                      # never seen: noop
    ])
    assert o.outcomes().outcome.tolist()[2:] == ["applied", "noop", "noop"]
    assert set(live_dict(o)) == {2}
    c = o.consume("b2.jsonl", [
        ev("+I", 99, ts(3)),                                      # older than tombstone: stale
        ev("+I", 1, ts(7), sign_time="2024-03-04 00:00:00"),      # re-insert: applied
    ])
    assert (c["stale"], c["applied"]) == (1, 1)
    assert live_dict(o) == {1: (1, T(2024, 3, 4), None), 2: (1, T(2024, 3, 1), None)}
    assert o.contract_state(99)["live"] is False
    assert o.contract_state(12345) is None
    assert_invariant(o.counts())


def test_before_image_never_changes_anything():
    o = cdc.Oracle()
    o.consume("b0.jsonl", [ev("-U", 5, ts(1))])                 # no live row created
    assert o.live().empty and o.counts()["before_image"] == 1
    o.consume("b1.jsonl", [ev("+I", 5, ts(2), sign_time="2024-03-01 01:00:00"),
                           ev("-U", 5, ts(3), sign_time="2024-03-01 01:00:00"),
                           ev("+U", 5, ts(3), sign_time="2024-03-01 02:00:00")])
    # a -U older than state, or newer: still before_image, and it does not advance the key
    o.consume("b2.jsonl", [ev("-U", 5, ts(0)), ev("-U", 5, ts(100), pid=9)])
    assert o.counts()["before_image"] == 4
    assert o.contract_state(5)["key"][0] == T.strptime(ts(3), "%Y-%m-%d %H:%M:%S.%f")
    o.consume("b3.jsonl", [ev("+U", 5, ts(50), sign_time="2024-03-01 04:00:00")])
    assert live_dict(o)[5][1] == T(2024, 3, 1, 4)
    assert_invariant(o.counts())


def test_move_project():
    o = cdc.Oracle()
    o.consume("b0.jsonl", [ev("+I", 1, ts(1), pid=1, sign_time="2024-03-01 01:00:00"),
                           ev("+I", 2, ts(1), pid=1, sign_time="2024-03-01 02:00:00"),
                           ev("+I", 3, ts(1), pid=2, sign_time="2024-03-01 03:00:00")])
    o.consume("b1.jsonl", [ev("-U", 1, ts(2), pid=1, sign_time="2024-03-01 01:00:00"),
                           ev("+U", 1, ts(2), pid=2, sign_time="2024-03-01 05:00:00")])
    r = o.ranks("dense_rank")
    assert r[["project_id", "contract_id", "asc_rn"]].values.tolist() == [
        [1, 2, 1], [2, 3, 1], [2, 1, 2]]
    assert o.zipper_value(1, "2030-01-01", "rank") == 1
    assert o.zipper_value(2, "2030-01-01", "rank") == 2


def test_consume_many_changes_counts_not_live_set():
    f0 = ["{bad", ev("+I", 1, ts(10), sign_time="2024-03-01 05:00:00")]
    f1 = [ev("+U", 1, ts(9), sign_time="2024-03-02 05:00:00"), ""]
    a, b = cdc.Oracle(), cdc.Oracle()
    a.consume("batch_00000.jsonl", f0)
    a.consume("batch_00001.jsonl", f1)
    b.consume_many([("batch_00000.jsonl", f0), ("batch_00001.jsonl", f1)])
    assert live_dict(a) == live_dict(b)
    assert a.counts()["stale"] == 1 and b.counts()["stale"] == 0
    assert b.counts()["applied"] == 2
    assert_invariant(a.counts())
    assert_invariant(b.counts())


def test_segment_start():
    s = cdc.segment_start
    assert s("2024-03-01 00:00:00") == pd.Timestamp("2024-03-01")
    assert s("2024-03-01 23:59:59") == pd.Timestamp("2024-03-01")
    assert s(T(2024, 3, 2)) == pd.Timestamp("2024-03-02")
    assert s("2024-03-01 10:30:00", 3600) == pd.Timestamp("2024-03-01 10:00:00")
    assert s("1969-12-31 12:00:00") == pd.Timestamp("1969-12-31")
    # week segments count from the epoch (a Thursday)
    assert s("2024-03-05 12:00:00", 7 * 86400) == pd.Timestamp("2024-02-29")
    assert cdc.Oracle.segment_start("2024-03-01 05:00:00") == pd.Timestamp("2024-03-01")
    with pytest.raises(ValueError):
        s(pd.Timestamp("2024-03-01", tz="UTC"))


def test_write_batch_and_consume_dir(tmp_path):
    landing = tmp_path / "landing" / "contracts"
    batches = cdc.generate_batches(3, 3, 25)
    paths = cdc.write_batches(landing, batches)
    assert [os.path.basename(p) for p in paths] == [
        "batch_00000.jsonl", "batch_00001.jsonl", "batch_00002.jsonl"]
    assert isinstance(paths[0], str)
    with open(paths[1], encoding="utf-8") as f:
        assert f.read().split("\n")[:-1] == batches[1]
    assert sorted(os.listdir(landing)) == [os.path.basename(p) for p in paths]
    o = cdc.Oracle()
    o.consume_dir(landing)
    ref = cdc.Oracle.from_batches(batches)
    assert o.counts() == ref.counts()
    assert live_dict(o) == live_dict(ref)
    # only new files are consumed
    cdc.write_batch(landing, 3, [ev("+I", 424242, ts(0))])
    c = o.consume_dir(landing)
    assert c["events_landed"] == 1 and c["applied"] == 1
    assert o.consume_dir(tmp_path / "missing")["events_landed"] == 0


# ---------------------------------------------------------------------------------------------
# Brute force references
# ---------------------------------------------------------------------------------------------

def brute_ranks(live: dict, fn: str) -> dict:
    """live: contract_id -> (project_id, sign_time, amount). Returns contract_id -> rank."""
    out = {}
    for c, (p, t, _) in live.items():
        peers = [(t2, c2) for c2, (p2, t2, _) in live.items() if p2 == p]
        if fn == "dense_rank":
            out[c] = 1 + len({t2 for t2, _ in peers if t2 < t})
        elif fn == "rank":
            out[c] = 1 + sum(1 for t2, _ in peers if t2 < t)
        else:
            out[c] = 1 + sum(1 for k in peers if k < (t, c))
    return out


def lww_live(files):
    """Last writer wins over all valid +I/+U/-D events by (op_ts, file, line), computed from
    JSON directly (inputs are known-valid dicts / lines)."""
    best = {}
    for fname, lines in files:
        for i, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            d = json.loads(line)
            if d["op"] == "-U":
                continue
            key = (T.strptime(d["op_ts"], "%Y-%m-%d %H:%M:%S.%f"), fname, i)
            if d["contract_id"] not in best or key > best[d["contract_id"]][0]:
                best[d["contract_id"]] = (key, d)
    live = {}
    for c, (_, d) in best.items():
        if d["op"] in ("+I", "+U"):
            amt = d.get("amount")
            amt = None if amt is None else Decimal(str(amt)).quantize(Decimal("0.01"))
            live[c] = (d["project_id"], T.strptime(d["sign_time"], "%Y-%m-%d %H:%M:%S"), amt)
    return live


def check_oracle_against_brute_force(o, expected_live):
    assert live_dict(o) == expected_live
    for fn in cdc.RANK_FUNCTIONS:
        r = o.ranks(fn)
        rank_of = dict(zip(r.contract_id.tolist(), r.asc_rn.tolist()))
        assert rank_of == brute_ranks(expected_live, fn), fn
        assert r.sign_time.tolist() == [expected_live[c][1] for c in r.contract_id]
        z = o.expected_zipper(fn)
        for row in z.itertuples():
            times = [pd.Timestamp(x) for (p, x, _) in expected_live.values()
                     if p == row.project_id]
            assert row.ver_start in times
            probes = [row.ver_start]
            if not pd.isna(row.ver_end):
                assert row.ver_end > row.ver_start
                probes.append(row.ver_end - pd.Timedelta(seconds=1))
            for t in probes:
                n = (len({x for x in times if x <= t}) if fn == "dense_rank"
                     else sum(1 for x in times if x <= t))
                assert row.base_max_rn == n == o.zipper_value(row.project_id, t, fn)
                # for dense_rank and row_number it is the max rank so far
                if fn != "rank":
                    assert max(rank_of[c] for c, (p, x, _) in expected_live.items()
                               if p == row.project_id and x <= t) == n
        # every project has exactly one open version
        if len(z):
            assert (z.groupby("project_id").ver_end.apply(lambda s: s.isna().sum()) == 1).all()


# ---------------------------------------------------------------------------------------------
# Generated streams
# ---------------------------------------------------------------------------------------------

@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 32 - 1), n_batches=st.integers(1, 6),
       epb=st.integers(1, 40), n_projects=st.integers(1, 4), n_days=st.integers(1, 4))
def test_generated_streams_against_brute_force(seed, n_batches, epb, n_projects, n_days):
    labeled = cdc.generate_labeled_batches(seed, n_batches, epb, n_projects=n_projects,
                                           n_days=n_days, bad_rate=0.05)
    batches = [[g.line for g in b] for b in labeled]
    assert all(len(b) == epb for b in batches)
    o = cdc.Oracle.from_batches(batches)
    # outcomes agree with the generator's own sequential mirror of the rules
    assert o.outcomes().outcome.tolist() == [g.expected for b in labeled for g in b]
    counts = o.counts()
    assert counts["events_landed"] == n_batches * epb
    assert_invariant(counts)
    # keep line numbers: replace quarantined lines by blanks
    files = [(cdc.batch_file_name(i), [g.line if g.expected != "quarantined" else ""
                                       for g in b]) for i, b in enumerate(labeled)]
    expected_live = lww_live(files)
    check_oracle_against_brute_force(o, expected_live)
    # the live set does not depend on how files are grouped into micro-batches
    one = cdc.Oracle()
    one.consume_many([(cdc.batch_file_name(i), b) for i, b in enumerate(batches)])
    assert live_dict(one) == expected_live
    assert one.counts()["events_landed"] == counts["events_landed"]
    assert one.counts()["quarantined"] == counts["quarantined"]
    assert_invariant(one.counts())


def _hand_event_strategy():
    return st.tuples(
        st.sampled_from(["+I", "+U", "-U", "-D", "bad"]),
        st.integers(1, 4),            # contract
        st.integers(0, 5),            # op_ts second: few values -> many ties and stale ones
        st.integers(1, 2),            # project
        st.sampled_from(["2024-03-01 00:00:00", "2024-03-01 12:00:00",
                         "2024-03-02 00:00:00", "2024-02-28 23:59:59"]),
        st.sampled_from([None, "1.00", "1", 2.5]),
    )


@settings(max_examples=100, deadline=None)
@given(files=st.lists(st.lists(_hand_event_strategy(), max_size=8), min_size=1, max_size=5),
       split=st.integers(0, 5))
def test_random_small_streams(files, split):
    named = []
    for i, evs in enumerate(files):
        lines = []
        for op, c, sec, p, t, amt in evs:
            if op == "bad":
                lines.append('{"op": "X", "contract_id": %d}' % c)
            elif op == "-D" and sec % 2:
                lines.append('{"op": "-D", "contract_id": %d, "op_ts": "%s"}' % (c, ts(sec)))
            else:
                lines.append(ev(op, c, ts(sec), pid=p, sign_time=t, amount=amt))
        named.append((cdc.batch_file_name(i), lines))
    o = cdc.Oracle()
    for f, lines in named:
        o.consume(f, lines)
    assert_invariant(o.counts())
    assert o.counts()["quarantined"] == sum(1 for evs in files for e in evs if e[0] == "bad")
    assert o.counts()["before_image"] == sum(1 for evs in files for e in evs if e[0] == "-U")
    clean = [(f, [ln if '"X"' not in ln else "" for ln in lines]) for f, lines in named]
    expected_live = lww_live(clean)
    check_oracle_against_brute_force(o, expected_live)
    # any grouping of the files into micro-batches gives the same live set
    g = cdc.Oracle()
    k = min(split, len(named))
    if named[:k]:
        g.consume_many(named[:k])
    if named[k:]:
        g.consume_many(named[k:])
    assert live_dict(g) == expected_live
    assert_invariant(g.counts())
    # every live contract got there through at least one applied event
    assert o.counts()["applied"] >= len(expected_live)


# ---------------------------------------------------------------------------------------------
# The generator really contains every case
# ---------------------------------------------------------------------------------------------

BACKDATED = {"duplicate", "stale_update", "stale_delete", "cross_file_tie"}


def _parse_all(labeled):
    rows = []
    for b, batch in enumerate(labeled):
        for i, g in enumerate(batch, start=1):
            d = None
            if g.expected != "quarantined":
                d = json.loads(g.line)
                d["_op_ts"] = T.strptime(d["op_ts"], "%Y-%m-%d %H:%M:%S.%f")
                if "sign_time" in d:
                    d["_sign_time"] = T.strptime(d["sign_time"], "%Y-%m-%d %H:%M:%S")
            rows.append((b, i, g, d))
    return rows


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4])
def test_generator_contains_every_case(seed):
    labeled = cdc.generate_labeled_batches(seed, 8, 50)
    assert labeled == cdc.generate_labeled_batches(seed, 8, 50)          # deterministic
    assert labeled != cdc.generate_labeled_batches(seed + 100, 8, 50)
    assert [[g.line for g in b] for b in labeled] == cdc.generate_batches(seed, 8, 50)
    rows = _parse_all(labeled)
    labels = Counter(g.label for _, _, g, _ in rows)
    for case in cdc.REQUIRED_CASES:
        assert labels[case] >= 1, case
    for kind in cdc.BAD_KINDS:
        assert labels["bad_" + kind] >= 1, kind

    o = cdc.Oracle.from_batches([[g.line for g in b] for b in labeled])
    out = o.outcomes()
    assert out.outcome.tolist() == [g.expected for _, _, g, _ in rows]
    assert set(out.outcome) == set(cdc.OUTCOMES)
    reasons = o.quarantine_reasons()
    for r in ("invalid_json", "unknown_op", "bad_contract_id", "bad_sign_time", "bad_op_ts"):
        assert reasons.get(r, 0) >= 1, r
    n_bad = sum(v for k, v in labels.items() if k.startswith("bad_"))
    assert n_bad == int(400 * 0.03) == o.counts()["quarantined"]

    by_label = defaultdict(list)
    for r in rows:
        by_label[r[2].label].append(r)
    base = T(2024, 3, 1)

    # plain inserts: several days, many exactly at 00:00:00
    ins = [d for _, _, _, d in by_label["insert"]]
    assert len({d["_sign_time"].date() for d in ins}) >= 3
    midnight = sum(1 for d in ins if d["_sign_time"].time() == dt.time(0))
    assert midnight >= 0.15 * len(ins)

    # history of valid lines, in emission order (which equals order-key order per contract)
    seen_upserts = []
    last_applied = {}          # contract -> (batch, parsed) of its last applied/noop event
    seen_lines = set()
    seen_cids = set()
    max_op_ts_before_batch = {}
    max_ts = None
    min_sign = None
    earliest_late_inserts = 0
    cross_batch_backwards = 0
    segments_per_batch_project = defaultdict(set)
    for b, i, g, d in rows:
        if b not in max_op_ts_before_batch:
            max_op_ts_before_batch[b] = max_ts
        if d is None:
            continue
        lab = g.label
        if lab == "tie_insert":
            assert any(p == d["project_id"] and t == d["_sign_time"] for p, t in seen_upserts)
        if lab == "late_insert":
            assert b >= 1 and d["_sign_time"] < base
        if lab == "duplicate":
            assert g.line in seen_lines
        if lab in ("stale_update", "stale_delete"):
            assert g.expected == "stale"
            pb, pd_ = last_applied[d["contract_id"]]
            assert pb < b and d["_op_ts"] < pd_["_op_ts"]
        if lab == "cross_file_tie":
            pb, pd_ = last_applied[d["contract_id"]]
            assert pb < b and d["_op_ts"] == pd_["_op_ts"] and g.expected == "applied"
        if lab in ("update_time", "update_project", "update_both", "update_amount"):
            _, prev = last_applied[d["contract_id"]]
            assert g.expected == "applied" and prev["op"] in ("+I", "+U")
            moved_t = prev["_sign_time"] != d["_sign_time"]
            moved_p = prev["project_id"] != d["project_id"]
            assert (moved_t, moved_p) == {"update_time": (True, False),
                                          "update_project": (False, True),
                                          "update_both": (True, True),
                                          "update_amount": (False, False)}[lab]
        if lab == "before_image":
            nb, ni, ng, nd = rows[rows.index((b, i, g, d)) + 1]
            assert d["op"] == "-U" and nd["op"] == "+U" and ng.label.startswith("update_")
            assert nd["contract_id"] == d["contract_id"] and nd["op_ts"] == d["op_ts"]
        if lab == "noop_update":
            assert g.expected == "noop"
        if lab == "delete":
            assert d["op"] == "-D" and g.expected == "applied"
        if lab == "reinsert":
            assert d["op"] == "+I" and last_applied[d["contract_id"]][1]["op"] == "-D"
            assert g.expected == "applied"
        if lab == "delete_unseen":
            assert d["contract_id"] not in seen_cids and g.expected == "noop"
        if lab == "tie_op_ts":
            assert g.expected == "applied"
        # bookkeeping
        if max_op_ts_before_batch[b] is not None and d["_op_ts"] < max_op_ts_before_batch[b]:
            cross_batch_backwards += 1
        max_ts = d["_op_ts"] if max_ts is None else max(max_ts, d["_op_ts"])
        seen_lines.add(g.line)
        seen_cids.add(d["contract_id"])
        if g.expected in ("applied", "noop"):
            last_applied[d["contract_id"]] = (b, d)
        if d["op"] in ("+I", "+U") and g.expected != "stale":
            seen_upserts.append((d["project_id"], d["_sign_time"]))
            segments_per_batch_project[(b, d["project_id"])].add(
                cdc.segment_start(d["_sign_time"]))
        if lab == "late_insert" and (min_sign is None or d["_sign_time"] < min_sign):
            earliest_late_inserts += 1
        if "_sign_time" in d and g.expected != "stale":
            min_sign = d["_sign_time"] if min_sign is None else min(min_sign, d["_sign_time"])

    # some late insert is earlier than anything seen before it
    assert earliest_late_inserts >= 1
    # stale / duplicate events really go backwards in op_ts across batches
    assert cross_batch_backwards >= 1
    # one project gets several segments in one batch
    assert max(len(s) for s in segments_per_batch_project.values()) >= 3
    # the clock (non back-dated valid lines) never goes backwards
    clock = [d["_op_ts"] for _, _, g, d in rows if d is not None and g.label not in BACKDATED]
    assert clock == sorted(clock)
    # duplicates hit both the "latest event" (noop) and "older event" (stale) paths overall
    dup_outcomes = Counter(g.expected for _, _, g, _ in by_label["duplicate"])
    assert sum(dup_outcomes.values()) >= 1
    # the final live set has ties and 00:00:00 contracts
    live = o.live()
    assert live.duplicated(["project_id", "sign_time"]).any()
    assert (live.sign_time == live.sign_time.dt.normalize()).any()


def test_generator_duplicate_paths_across_seeds():
    outcomes = Counter()
    for seed in range(10):
        for b in cdc.generate_labeled_batches(seed, 8, 50):
            outcomes.update(g.expected for g in b if g.label == "duplicate")
    assert outcomes["noop"] >= 1 and outcomes["stale"] >= 1


def test_generator_options():
    clean = cdc.generate_labeled_batches(7, 4, 30, bad_rate=0.0)
    assert all(g.expected != "quarantined" for b in clean for g in b)
    one_project = cdc.generate_labeled_batches(7, 4, 30, n_projects=1)
    assert {json.loads(g.line)["project_id"] for b in one_project for g in b
            if g.expected != "quarantined" and "project_id" in json.loads(g.line)} == {1}
    tiny = cdc.generate_batches(7, 1, 1)
    assert len(tiny) == 1 and len(tiny[0]) == 1
    assert cdc.generate_batches(7, 0, 10) == []
    # late inserts stay within max_late_days of the base date
    far = cdc.generate_labeled_batches(7, 30, 60, max_late_days=5)
    times = [json.loads(g.line)["sign_time"] for b in far for g in b
             if g.label == "late_insert"]
    assert times and min(times) >= "2024-02-25 00:00:00"
