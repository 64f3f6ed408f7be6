"""CDC input formats without Spark: the format check, the order positions, the quarantine reasons
the page documents, and the test envelopes (tests/support/cdc_envelopes.py) against the shapes
of docs/cdc_formats.md's examples. The conversion itself runs on Spark in
tests/functional/test_cdc_formats.py."""

from __future__ import annotations

import datetime as _dt
import json
import pathlib
import re
import sys
from decimal import Decimal

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
for p in (str(ROOT), str(ROOT / "tests" / "support")):
    if p not in sys.path:
        sys.path.insert(0, p)

import cdc_envelopes as env  # noqa: E402
from python_udfs.ingest import cdc_formats  # noqa: E402

DOC = (ROOT / "docs" / "cdc_formats.md").read_text()


def _examples():
    """{format: [the JSON objects of its example blocks, in order]} (the page's two Debezium
    blocks, plain then wrapped, one after the other)."""
    out: dict = {}
    for fmt, block in re.findall(r"<!-- example (\S+) -->\s*```json\n(.*?)```", DOC, re.S):
        out.setdefault(fmt, []).extend(json.loads(line) for line in block.strip().splitlines())
    return out


def test_check_format_names_the_allowed_values():
    for fmt in cdc_formats.FORMATS:
        assert cdc_formats.check_format(fmt) == fmt
    for bad in ("avro-json", "Debezium-JSON", "", None):
        with pytest.raises(ValueError, match="allowed values are lakerank, debezium-json, canal-json, maxwell-json"):
            cdc_formats.check_format(bad)


def test_order_positions_keep_line_then_index_order():
    bits = cdc_formats.SUB_BITS
    keys = [(line, i) for line in (1, 2, 3, 10**9) for i in (0, 1, cdc_formats._MAX_EVENTS)]
    positions = [(line << bits) + i for line, i in keys]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)
    assert [p >> bits for p in positions] == [line for line, _ in keys]  # physical_line
    assert (2**63 - 1) >> bits > 10**12  # a trillion lines a file fit a bigint position


def test_every_envelope_reason_is_documented():
    sql = " ".join(conv(versions, cdc_formats.CdcOptions())["error"] for conv in cdc_formats._CONVERTERS.values()
                   for versions in (False, True))
    reasons = set(re.findall(r"THEN '([^']+)'", sql))
    how = " (a source that writes none: declare change_time: arrival to order by arrival)"
    assert {"missing op", "missing type", "data is empty", "missing ts" + how, "missing es" + how} <= reasons
    missing = sorted(r for r in reasons if r.strip() and r not in DOC)
    assert not missing, f"reasons not in docs/cdc_formats.md: {missing}"


def test_cdc_options_are_checked():
    """The declarations of a CDC stream (a declared stream's keys, the contracts' vars): the
    vars' empty defaults are no filter; a wrong value is refused with the allowed ones."""
    opts = cdc_formats.cdc_options("arrival", "sales", ["contracts", "contracts_[0-9]+"], {"sign_time": "micros"})
    assert (opts.change_time, opts.database_include, opts.table_include) == (
        "arrival", ("sales",), ("contracts", "contracts_[0-9]+"))
    assert opts.unit("sign_time") == "micros" and opts.unit("other") is None  # undeclared: never guessed
    default = cdc_formats.cdc_options("", "", "", {})
    assert (default.change_time, default.database_include, default.table_include) == ("required", None, None)
    with pytest.raises(ValueError, match="change_time 'sometimes': allowed values are required, arrival"):
        cdc_formats.cdc_options("sometimes")
    with pytest.raises(ValueError, match="field 'sign_time': unit 'hours': allowed values are seconds, millis"):
        cdc_formats.cdc_options(units={"sign_time": "hours"})
    with pytest.raises(ValueError, match="table_include must be a name or pattern"):
        cdc_formats.cdc_options(table_include=[1])


def test_the_page_lists_every_format():
    for fmt in cdc_formats.FORMATS[1:]:
        assert f"--vars '{{contracts_format: {fmt}}}'" in DOC, fmt
    assert set(_examples()) == set(cdc_formats.FORMATS)


def _history():
    """The page's three changes as statements (contract 1001, project 7)."""
    row = env.Row(1001, 7, _dt.datetime(2024, 3, 4, 10, 0, 0), Decimal("1250.00"))
    new = env.Row(1001, 7, row.sign_time, Decimal("1300.00"))
    return [env.Statement("insert", 1709514000000, ((None, row),)),
            env.Statement("update", 1709514060000, ((row, new),)),
            env.Statement("delete", 1709514120000, ((new, None),))]


@pytest.mark.parametrize("fmt", ["debezium-json", "canal-json", "maxwell-json"])
def test_test_envelopes_have_the_documented_shapes(fmt):
    """The envelopes the functional test lands carry the page's fields and values."""
    documented = _examples()[fmt][:3]  # Debezium: the plain block
    rendered = [json.loads(line) for st in _history() for line in env.render(fmt, st, "Asia/Shanghai")]
    assert len(rendered) == len(documented)
    for doc, ours in zip(documented, rendered):
        assert set(ours) == set(doc), fmt
        if fmt == "debezium-json":
            assert (ours["op"], ours["before"], ours["after"], ours["source"]["ts_ms"]) == (
                doc["op"], doc["before"], doc["after"], doc["source"]["ts_ms"])
        elif fmt == "canal-json":
            assert [ours[k] for k in ("type", "data", "old", "es")] == [doc[k] for k in ("type", "data", "old", "es")]
        else:
            assert [ours[k] for k in ("type", "ts", "data")] == [doc[k] for k in ("type", "ts", "data")]
            assert ours.get("old") == doc.get("old")


def test_native_equivalent_is_the_documented_one():
    want = _examples()["lakerank"]
    got = [json.loads(line) for st in _history() for line in env.native_lines(st, "Asia/Shanghai")]
    assert got == want


def test_events_per_line_follow_the_accounting_table():
    statements = env.generate_statements(seed=3, n=30, start=_dt.datetime(2024, 3, 4, 9))
    for st in statements:
        events = len(env.native_events(st))
        assert len(env.canal_lines(st)) == 1  # one message a statement
        assert events == len(st.changes) * (2 if st.kind == "update" else 1)
        assert len(env.maxwell_lines(st)) == len(st.changes)
    assert {st.kind for st in statements} == {"snapshot", "insert", "update", "delete"}


def test_declared_stream_format_is_checked_when_its_model_runs():
    """A declared stream's ``format``: an unknown value, or a CDC format on fields that cannot
    take it, fails the model's run with a message naming the model (before Spark is used)."""
    import types

    import yaml

    from python_udfs.ingest.landing_ingest import check_stream_format, normalise_fields, run_declared_stream

    declared = yaml.safe_load((ROOT / "models" / "examples" / "_examples_streams.yml").read_text())
    streams = {m["name"]: m["config"]["stream"] for m in declared["models"]}
    # every example stream takes its format from a var, lakerank by default
    for model, stream in streams.items():
        var = stream["folder"] + "_format"
        assert stream["format"] == f"{{{{ var('{var}', 'lakerank') }}}}", model
        for fmt in cdc_formats.FORMATS:
            assert check_stream_format(fmt, normalise_fields(stream["fields"])) == fmt
    this = types.SimpleNamespace(schema="lakerank", identifier="stg_payments")
    with pytest.raises(ValueError, match="^model stg_payments: unknown stream format 'avro-json': allowed values "
                                         "are lakerank, debezium-json, canal-json, maxwell-json$"):
        run_declared_stream(None, this, dict(streams["stg_payments"], format="avro-json"))
    fields = [f for f in streams["stg_payments"]["fields"] if f["name"] != "op_ts"]
    with pytest.raises(ValueError, match="model stg_payments: format canal-json sets op_ts"):
        run_declared_stream(None, this, dict(streams["stg_payments"], format="canal-json", fields=fields))
    fields = [*streams["stg_payments"]["fields"], {"name": "op", "type": "bigint"}]
    with pytest.raises(ValueError, match="a declared op must be of type string"):
        run_declared_stream(None, this, dict(streams["stg_payments"], format="maxwell-json", fields=fields))
    # a declared key is a list of declared fields; a unit applies to a time field
    assert check_stream_format("debezium-json", normalise_fields(streams["stg_project_changes"]["fields"]),
                               "update_time", ["project_id"]) == "debezium-json"
    with pytest.raises(ValueError, match="model stg_project_changes: key 'project_id' must be a list of declared"):
        run_declared_stream(None, types.SimpleNamespace(schema="lakerank", identifier="stg_project_changes"),
                            dict(streams["stg_project_changes"], format="lakerank", key="project_id"))
    assert normalise_fields([{"name": "t", "type": "timestamp", "unit": "micros"}])[0]["unit"] == "micros"
    with pytest.raises(ValueError, match="field 'n': 'unit' applies to date and timestamp fields"):
        normalise_fields([{"name": "n", "type": "bigint", "unit": "micros"}])
    # lakerank asks nothing of the fields
    assert check_stream_format("lakerank", normalise_fields([("op", "bigint", True)])) == "lakerank"
    # delete_time names a declared timestamp field (the projects stream's update_time)
    assert streams["stg_project_changes"]["delete_time"] == "update_time"
    assert check_stream_format("debezium-json", normalise_fields(streams["stg_project_changes"]["fields"]),
                               "update_time") == "debezium-json"
    this = types.SimpleNamespace(schema="lakerank", identifier="stg_project_changes")
    for wrong in ("deleted_at", "city"):
        with pytest.raises(ValueError, match=f"^model stg_project_changes: delete_time '{wrong}' must name a "
                                             "declared field of type timestamp$"):
            run_declared_stream(None, this, dict(streams["stg_project_changes"], format="lakerank", delete_time=wrong))
