"""CDC input formats (issue G.2) through real dbt builds: the same source changes landed as
debezium-json (plain and in the schema/payload wrapper), canal-json and maxwell-json, plus
malformed envelopes, against their equivalent native events.

One home, three builds. Each format gets the same history of the contract table
(tests/support/cdc_envelopes.py), on contracts and projects of its own (ids shifted by
100,000 and 100 per format), so the formats never interact and their results can be compared
one to one:

1. debezium-json, plain and wrapped files, ``dbt run --select stg_contract_changelog``
   (ingest only);
2. canal-json, ingest only;
3. maxwell-json, then the whole pipeline (``dbt run``): the one full build.

The equivalent native events (``cdc_envelopes.native_lines``, the lines the native format
would land) are the reference: each format's staged changelog (rowkind, image, op_ts, physical
line, in ``_seq`` order) must equal them row for row (a consistent source has no duplicate or
stale event, so its clean changelog is its native events), and the oracle, fed with them,
gives the ranks. They are not landed as a fourth build: the native ingest and pipeline are
proven equal to that oracle on the same kind of events by test_contract_ingest.py and
test_pipeline_exact.py, and a build costs ~5 s of the CI's budget.

Why the staged changelog carries the proof: the pipeline reads the contracts only through
``stg_contract_changelog``, rank by rank per project, and the formats' projects are disjoint;
so equal staged rows give equal ranks. The one full build checks that end to end: the ranks of
each format's projects equal each other's and the oracle's, and every table equals the oracle
fed with the native equivalent of everything landed (assert_all_exact), with the counts
reconciled (every landed event applied or quarantined).

The declared example streams (models/examples/_examples_streams.yml) take the same formats
as versions: on the same home, two more runs of their three ingests only (``dbt run --select``
with the examples turned on by the var ``lakerank_examples``; ~11 s): projects as
debezium-json, payments as canal-json, design changes as maxwell-json (``--vars``), then their
equivalent native lines (the default format); the staged rows must be equal row for row and in
order, and the malformed envelopes, the deletes of the streams without an ``op`` field and a
refused row quarantined and counted.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
from collections import Counter
from decimal import Decimal

import pytest

import cdc
import cdc_envelopes as env
from checks import assert_all_exact, expected_ranks
from lakerank_project import Lakerank

ZONE = os.environ.get("LAKERANK_TIMEZONE", "Asia/Shanghai")
START = _dt.datetime(2024, 3, 4, 9, 0, 0)
# The build of each format: (formats landed, the contracts_format var).
BUILDS = [(["debezium-json", "debezium-json-wrapped", "debezium-json-postgres", "debezium-json-zoned"],
           "debezium-json"), (["canal-json"], "canal-json"), (["maxwell-json"], "maxwell-json")]
# Every build reads one database's one table: the other tables of a multi-table topic are skipped.
FILTERS = {"contracts_database_include": "lakerank", "contracts_table_include": "contracts"}
# The unit each build declares for a sign_time integer no schema names (plain MySQL Debezium:
# milliseconds); without one such a message is quarantined.
UNITS = {"debezium-json": {"contracts_sign_time_unit": "millis"}}
# The formats whose files carry what is not data and other tables' changes between the changes.
MIXED = ("debezium-json-postgres", "debezium-json-zoned", "canal-json", "maxwell-json")
SHIFT = 100_000
EXTRA_CONTRACT = 99_999  # a valid row landed beside a bad one (canal), outside the history


def _bad_lines(fmt: str, ts_ms: int, k: int):
    """Malformed envelopes appended to a format's file: (line, expected reason, the native
    lines the oracle gets for it); a reason None: a line that is not data, skipped."""
    bad = ["{bad"]
    after = {"project_id": 1 + 100 * k, "contract_id": 7 + SHIFT * k, "sign_time": 1709510400000, "amount": 1.5}
    if fmt == "debezium-json":
        return [
            (json.dumps({"before": None, "after": None, "source": {"ts_ms": ts_ms}, "op": "c", "ts_ms": ts_ms}),
             "debezium-json: op 'c' without after", bad),
            (json.dumps({"before": None, "after": after, "source": {"ts_ms": ts_ms}, "op": "x", "ts_ms": ts_ms}),
             "debezium-json: unknown op 'x'", bad),
            ("this is not json", "debezium-json: invalid json", bad),
        ]
    if fmt == "debezium-json-wrapped":  # a tombstone
        return [(json.dumps({"schema": None, "payload": None}), None, [])]
    if fmt == "debezium-json-postgres":  # a delete without its key
        return [(env.postgres_message("d", None, None, ts_ms, ZONE, True, 1), "debezium-json: op 'd' without before",
                 bad),
                (env.postgres_message("d", {"project_id": 1}, None, ts_ms, ZONE, True, 2),
                 "debezium-json before: null contract_id", bad)]
    if fmt == "canal-json":
        # in a project of its own (99): the history's ranks stay comparable
        good = {"contract_id": str(EXTRA_CONTRACT + SHIFT * k), "project_id": str(99 + 100 * k),
                "sign_time": "2024-03-04 00:00:00", "amount": "3.10"}
        native = json.dumps({"op": "+I", "contract_id": EXTRA_CONTRACT + SHIFT * k, "project_id": 99 + 100 * k,
                             "sign_time": "2024-03-04 00:00:00", "amount": "3.10",
                             "op_ts": env.wall_clock(ts_ms, ZONE)})
        return [
            (json.dumps({"data": {"contract_id": "5"}, "type": "INSERT", "es": ts_ms, "ts": ts_ms}),
             "canal-json: data is not an array", bad),
            (json.dumps({"data": None, "database": "lakerank", "es": ts_ms, "isDdl": True, "old": None,
                         "sql": "ALTER TABLE contracts ADD COLUMN note text", "table": "contracts",
                         "ts": ts_ms, "type": "ALTER"}), None, []),
            (json.dumps({"data": [good, dict(good, contract_id="abc")], "database": "lakerank", "table": "contracts",
                         "type": "INSERT", "es": ts_ms, "ts": ts_ms}),
             "canal-json data[1]: bad contract_id 'abc'", [native, "{bad"]),
            (json.dumps({"data": [good], "type": "INSERT", "es": ts_ms, "ts": ts_ms}),  # filtered: a table is needed
             "canal-json: missing database", bad),
        ]
    if fmt == "maxwell-json":
        return [
            (json.dumps({"database": "lakerank", "table": "contracts", "type": "insert", "ts": ts_ms // 1000,
                         "data": [1, 2]}), "maxwell-json: data is not an object", bad),
            (json.dumps({"database": "lakerank", "table": "contracts", "type": "truncate", "ts": ts_ms // 1000}),
             "maxwell-json: unknown type 'truncate'", bad),
            ("{\"type\": \"insert\", ", "maxwell-json: invalid json", bad),
        ]
    return []


def _expected_changelog(statements, fmt: str, positions):
    """The staged changelog rows of a format's history, unshifted: (rowkind, contract_id,
    project_id, sign_time, amount, op_ts, physical line); ``positions``: the physical lines of
    the format's data messages, in order."""
    rows, at = [], iter(positions)
    for st in statements:
        op_ts = env.wall_clock(st.ts_ms, ZONE)[:19]  # whole seconds (read back without fraction)
        events = env.native_events(st)
        if fmt == "canal-json":
            lines = [next(at)] * len(events)
        else:  # one message a row; Debezium's key change is two (d, c)
            lines = []
            for before, after in st.changes:
                if st.kind == "update" and before.contract_id != after.contract_id and fmt.startswith("debezium"):
                    lines += [next(at), next(at)]
                else:
                    lines += [next(at)] * (2 if st.kind == "update" else 1)
        for (kind, r), ln in zip(events, lines):
            rows.append((kind, r.contract_id, r.project_id, r.sign_time.strftime("%Y-%m-%d %H:%M:%S"),
                         None if r.amount is None else f"{r.amount:.2f}", op_ts, ln))
    return rows


def _file(fmt: str, statements, k: int):
    """A format's file: (lines, the physical lines of its data messages, lines skipped, the
    native equivalent of its changes). A MIXED format's changes are interleaved, as a topic
    carries them, with lines that are not data and other tables' changes."""
    lines, positions, skipped, native = [], [], 0, []
    noise = env.not_data(fmt, statements[0].ts_ms) if fmt in MIXED else []
    for n, st in enumerate((st.shifted(k) for st in statements), start=1):
        for line in env.render(fmt, st, ZONE, n):
            lines.append(line)
            if line == "null":  # a tombstone
                skipped += 1
            else:
                positions.append(len(lines))
        no_before = fmt in ("debezium-json-postgres", "debezium-json-zoned")
        native += env.native_lines_without_before(st, ZONE) if no_before else env.native_lines(st, ZONE)
        if noise:
            lines.append(noise[n % len(noise)])
            lines += [env.other_table(fmt, st.ts_ms, n)] if n % 3 == 0 else []
            skipped += 1 + (n % 3 == 0)
    return lines, positions, skipped, native


@pytest.fixture(scope="module")
def landed(runner, tmp_path_factory):
    """The three builds; returns (lakerank, oracle, statements, files by format (name, k, the
    physical lines of the data messages), expected quarantine rows, per-commit oracle counts
    with the lines skipped)."""
    lr = Lakerank(runner, tmp_path_factory.mktemp("cdc_formats") / "home")
    statements = env.generate_statements(seed=7, n=24, start=START)
    last_ts = statements[-1].ts_ms
    oracle = cdc.Oracle()
    files, quarantine, per_commit = {}, [], []
    k = 1  # format k's ids: shifted by k (0 would be the native events' own)
    for formats, var in BUILDS:
        batch, skipped = [], 0
        for fmt in formats:
            lines, positions, n_skipped, native = _file(fmt, statements, k)
            skipped += n_skipped
            for line, reason, equivalent in _bad_lines(fmt, last_ts, k):
                lines.append(line)
                native += equivalent
                if reason is None:
                    skipped += 1
                else:
                    quarantine.append((fmt, len(lines), reason, line))
            path = lr.land(lines)
            files[fmt] = (os.path.basename(path), k, positions)
            batch.append((os.path.basename(path), native))
            k += 1
        counts = oracle.consume_many(batch)
        counts.update(skipped=skipped, events_landed=counts["events_landed"] + skipped)
        per_commit.append(counts)
        if var == "maxwell-json":
            lr.dbt("run", vars={"contracts_format": var, **FILTERS})  # the one full pipeline build
        else:
            lr.dbt("run", "--select", "stg_contract_changelog",
                   vars={"contracts_format": var, **FILTERS, **UNITS.get(var, {})})
    return lr, oracle, statements, files, quarantine, per_commit


def test_each_format_stages_the_native_changelog(landed):
    lr, _, statements, files, _, _ = landed
    staged = lr.table("stg_contract_changelog").sort_values(["_commit_id", "_seq"])
    for fmt, (name, k, positions) in files.items():
        mine = staged[staged["_source_file"].str.endswith(name)]
        cols = ["rowkind", "contract_id", "project_id", "sign_time", "amount", "op_ts", "_source_line"]
        got = [(kind, cid - SHIFT * k, pid - 100 * k, *rest)
               for kind, cid, pid, *rest in mine[cols].itertuples(index=False, name=None)
               if cid - SHIFT * k != EXTRA_CONTRACT]
        want = _expected_changelog(statements, fmt, positions)
        assert {row[0] for row in want} == {"+I", "-U", "+U", "-D"} and len(want) > 40
        assert got == want, fmt


def test_ranks_equal_across_formats_and_the_oracle(landed):
    lr, oracle, _, files, _, _ = landed
    cols = ["project_id", "contract_id", "sign_time", "asc_rn", "amount"]

    def ranks_of(df, k):  # format k's ranks, its ids unshifted
        mine = df[(df["contract_id"] // SHIFT == k) & (df["contract_id"] % SHIFT != EXTRA_CONTRACT)]
        return Counter((pid - 100 * k, cid - SHIFT * k, str(st), int(rn),
                        None if a is None or a != a else f"{Decimal(str(a)):.2f}")  # NaN: no amount
                       for pid, cid, st, rn, a in mine[cols].itertuples(index=False, name=None))

    fct, oracle_ranks = lr.table("fct_contract_rank"), expected_ranks(oracle, "dense_rank")
    first = None
    for fmt, (_, k, _) in files.items():
        got = ranks_of(fct, k)
        assert got and got == ranks_of(oracle_ranks, k), fmt  # the native events' ranks
        first = first or got
        assert got == first, fmt  # the same ranks in every format
    assert_all_exact(lr, oracle, "dense_rank")


def test_malformed_envelopes_are_quarantined_and_counted(landed):
    lr, _, _, files, quarantine, per_commit = landed
    rows = lr.table("stg_contract_quarantine")
    got = sorted((os.path.basename(file), line, reason, raw) for file, line, reason, raw in
                 rows[["_source_file", "_source_line", "reason", "raw_line"]].itertuples(index=False, name=None))
    want = sorted((files[fmt][0], line, reason, raw) for fmt, line, reason, raw in quarantine)
    assert got == want
    log = lr.table("stg_contract_ingest_log").sort_values("_commit_id")
    counts = ["events_landed", "applied", "noop", "stale", "before_image", "skipped", "quarantined"]
    assert [{c: int(r[c]) for c in counts} for _, r in log.iterrows()] == [
        {c: p[c] for c in counts} for p in per_commit]
    assert all(p["skipped"] > 0 for p in per_commit)
    for _, r in log.iterrows():  # the log reconciles on its own
        assert r["events_landed"] == sum(int(r[c]) for c in counts[1:])


# --------------------------------------------------------------------------------------------
# The conversion, line by line, on the session the builds opened (no tables, no build)
# --------------------------------------------------------------------------------------------

T = 1709514000123  # 2024-03-04 01:00:00.123 UTC


HOW = " (a source that writes none: declare change_time: arrival to order by arrival)"


def _zoned(iso: str) -> str:
    """The business wall clock of an ISO-8601 instant, whole seconds."""
    from zoneinfo import ZoneInfo

    return _dt.datetime.fromisoformat(iso).astimezone(ZoneInfo(ZONE)).strftime("%Y-%m-%d %H:%M:%S")


def _wrapped(semantic: str, sign_time: int) -> dict:
    """A Debezium insert in the schema/payload wrapper whose schema gives sign_time the
    logical type ``semantic``."""
    value = {"type": "struct", "optional": True, "name": "pg1.public.contracts.Value", "fields": [
        {"type": "int64", "optional": False, "field": "project_id"},
        {"type": "int64", "optional": False, "field": "contract_id"},
        {"type": "int64", "optional": False, "name": semantic, "version": 1, "field": "sign_time"},
        {"type": "string", "optional": True, "field": "amount"}]}
    schema = {"type": "struct", "name": "pg1.public.contracts.Envelope", "optional": False, "fields": [
        dict(value, field="before"), dict(value, field="after"), {"type": "string", "optional": False, "field": "op"},
        {"type": "int64", "optional": True, "field": "ts_ms"}]}
    return {"schema": schema, "payload": {"before": None, "after": dict(ROW, sign_time=sign_time), "op": "c",
                                          "ts_ms": T}}
ROW = {"project_id": 1, "contract_id": 10, "sign_time": "2024-03-04 10:00:00", "amount": "1.50"}
STRINGS = {k: str(v) for k, v in ROW.items()}
CASES = {
    "debezium-json": [
        {"before": None, "after": dict(ROW, sign_time=1709546400000), "source": {"ts_ms": T}, "op": "r", "ts_ms": 1},
        {"payload": {"before": ROW, "after": dict(ROW, contract_id=11), "op": "u", "ts_ms": T}},  # key change
        {"before": None, "after": ROW, "source": {"ts_ms": T}, "op": "u"},
        {"before": ROW, "after": None, "source": {"ts_ms": T}, "op": "t"},
        {"after": ROW, "op": "c"},
        {"after": dict(ROW, sign_time=1709546400500), "op": "c", "ts_ms": T},
        {"after": dict(ROW, sign_time="2024-03-04T10:00:00Z"), "op": "c", "ts_ms": T},
        {"after": dict(ROW, amount="AeJA"), "op": "c", "ts_ms": T},
        "null",
        {"after": ROW, "op": "c", "source": {"ts_ms": None}, "ts_ms": True},
        {"after": ROW, "op": "c", "source": {"ts_ms": 1709514000000.5}, "ts_ms": T},
        # 12-: Postgres' default replica identity, every time type, and what is not data
        {"before": {"contract_id": 10, "project_id": None, "sign_time": None, "amount": None}, "after": None,
         "source": {"ts_ms": T}, "op": "d"},
        {"before": None, "after": None, "source": {"ts_ms": T}, "op": "d"},
        {"before": {"contract_id": 10}, "after": ROW, "source": {"ts_ms": T}, "op": "u"},  # only the key
        {"before": {"contract_id": 9}, "after": ROW, "source": {"ts_ms": T}, "op": "u"},  # the key changed
        {"after": dict(ROW, sign_time="2024-03-04T10:00:00+08:00"), "op": "c", "ts_ms": T},
        {"after": dict(ROW, sign_time="2024-03-04T10:00:00"), "op": "c", "ts_ms": T},  # no offset: a wall clock
        {"after": dict(ROW, sign_time="2024-03-04T10:00:00.000000000Z"), "op": "c", "ts_ms": T},
        {"after": dict(ROW, sign_time="2024-03-04T10:00:00.0000001Z"), "op": "c", "ts_ms": T},  # finer than us
        _wrapped("io.debezium.time.MicroTimestamp", 1709546400000000),
        _wrapped("io.debezium.time.NanoTimestamp", 1709546400000000000),
        _wrapped("io.debezium.time.Timestamp", 1709546400000),
        _wrapped("org.apache.kafka.connect.data.Timestamp", 1709546400000),
        _wrapped("io.debezium.time.Date", 19786),
        _wrapped("io.debezium.time.MicroTimestamp", 1709546400000),  # 1970-01-20: a wall clock, refused later
        {"ts_ms": T}, {"status": "BEGIN", "id": "571:53195829", "ts_ms": T, "event_count": None,
                       "data_collections": None},
        {"schema": None, "payload": None},
        {"source": {"ts_ms": T}, "ts_ms": T, "databaseName": "lakerank", "ddl": "DROP TABLE x", "tableChanges": []},
    ],
    # no unit declared and no schema wrapper: an integer sign_time is not read in a guessed unit
    "debezium-json+undeclared": [
        {"after": dict(ROW, sign_time=1709546400000), "op": "c", "ts_ms": T},
        {"after": dict(ROW, sign_time=1709546400), "op": "c", "ts_ms": T},  # seconds: 1970 as milliseconds
        _wrapped("io.debezium.time.Timestamp", 1709546400000),  # a schema names it
        {"after": dict(ROW, sign_time="2024-03-04T10:00:00"), "op": "c", "ts_ms": T},  # a string needs none
        {"before": dict(ROW, sign_time=1709546400000), "after": None, "op": "d", "ts_ms": T},  # key only
    ],
    # a declared unit (no schema wrapper)
    "debezium-json+micros": [
        {"after": dict(ROW, sign_time=1709546400000000), "op": "c", "ts_ms": T},
        _wrapped("io.debezium.time.Timestamp", 1709546400000),  # the wrapper wins
    ],
    # order by arrival: Flink's own writers (no change time)
    "debezium-json+arrival": [{"before": None, "after": ROW, "op": "c"}, {"before": ROW, "after": None, "op": "d"}],
    "canal-json+arrival": [{"data": [STRINGS], "old": None, "type": "INSERT"}],
    "maxwell-json+arrival": [{"data": ROW, "type": "insert"}],
    # a Canal topic of a whole database, one table read
    "canal-json+table": [
        {"data": [STRINGS], "database": "lakerank", "table": "contracts", "type": "INSERT", "es": T},
        {"data": [STRINGS], "database": "lakerank", "table": "projects", "type": "INSERT", "es": T},
        {"data": [STRINGS], "database": "other", "table": "contracts", "type": "INSERT", "es": T},
        {"data": None, "database": "lakerank", "table": "contracts", "isDdl": True, "sql": "TRUNCATE contracts",
         "type": "TRUNCATE", "es": T},
    ],
    "canal-json": [
        {"data": [STRINGS, dict(STRINGS, contract_id="12")], "old": [{"amount": "2.00"}, {"contract_id": "11"}],
         "type": "UPDATE", "es": T, "ts": T + 99},
        {"data": [STRINGS, dict(STRINGS, contract_id="12")], "type": "DELETE", "es": T},
        {"data": [], "type": "INSERT", "es": T},
        {"data": [STRINGS], "type": "UPDATE", "es": T},
        {"data": [STRINGS], "old": [], "type": "UPDATE", "es": T},
        {"data": [STRINGS], "type": "INSERT", "ts": T},
        {"type": "INSERT", "es": T},
        {"data": [STRINGS], "type": "INSERT", "es": "soon"},
    ],
    "maxwell-json": [
        {"type": "bootstrap-insert", "ts": T // 1000, "data": ROW},
        {"type": "update", "ts": T // 1000, "data": dict(ROW, contract_id=11), "old": {"contract_id": 10}},
        {"type": "delete", "data": ROW},
        {"type": "bootstrap-start", "ts": T // 1000, "data": {}},
        {"type": "insert", "ts": 1709514000.5, "data": ROW},
        {"type": "table-alter", "database": "lakerank", "table": "contracts", "ts": T // 1000,
         "old": {}, "def": {}, "sql": "alter table contracts add note text"},
    ],
}
# Each case list's reading (cdc_formats.cdc_options) and batch time (the arrival order's op_ts).
OPTIONS = {"debezium-json": {"units": {"sign_time": "millis"}},  # plain MySQL: DATETIME in ms
           "debezium-json+micros": {"units": {"sign_time": "micros"}},
           "debezium-json+arrival": {"change_time": "arrival"}, "canal-json+arrival": {"change_time": "arrival"},
           "maxwell-json+arrival": {"change_time": "arrival"},
           "canal-json+table": {"database_include": ["lakerank", "sales"], "table_include": "contr.*"}}


def _documented():
    """docs/cdc_formats.md's CDC example blocks: [(format, block number, lines)]."""
    import re

    from lakerank_project import ROOT

    text = (ROOT / "docs" / "cdc_formats.md").read_text()
    blocks = re.findall(r"<!-- example (\S+) -->\s*```json\n(.*?)```", text, re.S)
    return [(fmt, n, block.strip().splitlines()) for n, (fmt, block) in enumerate(blocks) if fmt != "lakerank"]


@pytest.fixture(scope="module")
def converted(landed):
    """Every case above and every documented example block, converted and validated in one
    Spark job: {file: (its marker's n_events, [(physical line, index in the line, kind,
    reason, op, contract_id, sign_time, op_ts)])}, a file per case list and per block."""
    from pyspark.sql import functions as F

    from python_udfs.ingest.cdc_formats import SUB_BITS, cdc_options
    from python_udfs.ingest.cdc_native import to_native_events
    from python_udfs.ingest.contract_lines import parse_contract_lines
    from python_udfs.ingest.wall_clock import ntz_from_micros

    spark = landed[0].spark()
    files = [(group, group, lines) for group, lines in CASES.items()]
    files += [(f"doc{n}", fmt, lines) for fmt, n, lines in _documented()]
    rows = {group: [] for group in CASES}  # one frame a case list's reading, a file a case list or block
    for name, group, lines in files:
        texts = [t if isinstance(t, str) else json.dumps(t) for t in lines]
        rows[group] += [(name, 0, len(texts), None, T * 1000)] + [
            (name, i, 0, t, T * 1000) for i, t in enumerate(texts, start=1)]
    schema = "file string, line bigint, n_events bigint, text string, batch_us bigint"
    frames = [to_native_events(spark.createDataFrame(r, schema).repartition(1), group.split("+")[0],
                               cdc_options(**OPTIONS.get(group, {}))) for group, r in rows.items()]
    union = frames[0]
    for frame in frames[1:]:
        union = union.unionByName(frame)
    parsed = parse_contract_lines(union, converted=True).select(
        "file", "kind", "line", "n_events", "reason", "op", "contract_id",
        ntz_from_micros(F.col("sign_us")).cast("string").alias("sign_time"),
        ntz_from_micros(F.col("op_ts_us")).cast("string").alias("op_ts"),
    ).collect()
    out = {}
    for name, _, _ in files:
        mine = sorted((r for r in parsed if r["file"] == name), key=lambda r: r["line"])
        out[name] = ([r["n_events"] for r in mine if r["kind"] == "file"], [
            (r["line"] >> SUB_BITS, r["line"] & ((1 << SUB_BITS) - 1), r["kind"], r["reason"], r["op"],
             r["contract_id"], r["sign_time"], r["op_ts"]) for r in mine if r["kind"] != "file"])
    return out


def _events(converted, name):
    n_events, events = converted[name]
    assert n_events == [len(events)], "a file's n_events counts its lines' events"
    return events


def test_debezium_conversion(converted):
    at = env.wall_clock(T, ZONE)
    assert _events(converted, "debezium-json") == [
        (1, 0, "E", None, "+I", 10, "2024-03-04 10:00:00", at),
        (2, 0, "E", None, "-D", 10, "2024-03-04 10:00:00", at),
        (2, 1, "E", None, "+I", 11, "2024-03-04 10:00:00", at),
        (3, 0, "E", None, "+U", 10, "2024-03-04 10:00:00", at),  # no before image: the state has the old row
        (4, 0, "quarantined", "debezium-json: unknown op 't'", None, None, None, None),
        (5, 0, "quarantined", f"debezium-json: missing source.ts_ms and ts_ms{HOW}", None, None, None, None),
        (6, 0, "quarantined", "debezium-json after: bad sign_time '2024-03-04 10:00:00.5'", None, None, None, None),
        (7, 0, "E", None, "+I", 10, _zoned("2024-03-04T10:00:00+00:00"), at),  # ZonedTimestamp
        (8, 0, "quarantined", "debezium-json after: bad amount 'AeJA'", None, None, None, None),
        (9, 0, "skipped", None, None, None, None, None),  # a tombstone
        (10, 0, "quarantined", "debezium-json: bad ts_ms 'true'", None, None, None, None),
        (11, 0, "quarantined", "debezium-json: bad source.ts_ms '1709514000000.5'", None, None, None, None),
        (12, 0, "E", None, "-D", 10, None, at),
        (13, 0, "quarantined", "debezium-json: op 'd' without before", None, None, None, None),
        (14, 0, "E", None, "+U", 10, "2024-03-04 10:00:00", at),
        (15, 0, "E", None, "-D", 9, None, at),
        (15, 1, "E", None, "+I", 10, "2024-03-04 10:00:00", at),
        (16, 0, "E", None, "+I", 10, _zoned("2024-03-04T10:00:00+08:00"), at),
        (17, 0, "E", None, "+I", 10, "2024-03-04 10:00:00", at),
        (18, 0, "E", None, "+I", 10, _zoned("2024-03-04T10:00:00+00:00"), at),
        (19, 0, "quarantined", "debezium-json after: bad sign_time '2024-03-04T10:00:00.0000001Z'", *[None] * 4),
        *[(n, 0, "E", None, "+I", 10, "2024-03-04 10:00:00", at) for n in (20, 21, 22, 23)],
        (24, 0, "E", None, "+I", 10, "2024-03-04 00:00:00", at),
        (25, 0, "quarantined", "debezium-json after: bad sign_time '1970-01-20 18:52:26.4'", *[None] * 4),
        *[(n, 0, "skipped", None, None, None, None, None) for n in (26, 27, 28, 29)],
    ]
    unitless = ("debezium-json after: sign_time {} is an integer with no unit: no schema names it; declare "
                "units: {{sign_time: <unit>}} (seconds, millis, micros, nanos, days)")
    assert _events(converted, "debezium-json+undeclared") == [
        (1, 0, "quarantined", unitless.format(1709546400000), None, None, None, None),
        (2, 0, "quarantined", unitless.format(1709546400), None, None, None, None),
        (3, 0, "E", None, "+I", 10, "2024-03-04 10:00:00", at),
        (4, 0, "E", None, "+I", 10, "2024-03-04 10:00:00", at),
        (5, 0, "E", None, "-D", 10, None, at),
    ]
    assert _events(converted, "debezium-json+micros") == [
        (n, 0, "E", None, "+I", 10, "2024-03-04 10:00:00", at) for n in (1, 2)]


def test_arrival_order_and_table_filters(converted):
    """A stream that orders by arrival takes Flink's own writers' messages (no change time):
    op_ts is the batch time; a Canal topic of a whole database read for one table skips the
    others' changes (a TRUNCATE is not skipped: it deletes rows)."""
    batch = env.wall_clock(T, ZONE)  # the case lists' batch time
    assert _events(converted, "debezium-json+arrival") == [(1, 0, "E", None, "+I", 10, "2024-03-04 10:00:00", batch),
                                                           (2, 0, "E", None, "-D", 10, "2024-03-04 10:00:00", batch)]
    for group in ("canal-json+arrival", "maxwell-json+arrival"):
        assert _events(converted, group) == [(1, 0, "E", None, "+I", 10, "2024-03-04 10:00:00", batch)], group
    assert _events(converted, "canal-json+table") == [
        (1, 0, "E", None, "+I", 10, "2024-03-04 10:00:00", env.wall_clock(T, ZONE)),
        (2, 0, "skipped", None, None, None, None, None), (3, 0, "skipped", None, None, None, None, None),
        (4, 0, "quarantined", "canal-json: unknown type 'TRUNCATE'", None, None, None, None)]


def test_canal_and_maxwell_conversion(converted):
    at = env.wall_clock(T, ZONE)
    assert _events(converted, "canal-json") == [
        (1, 0, "E", None, "-U", 10, "2024-03-04 10:00:00", at),
        (1, 1, "E", None, "+U", 10, "2024-03-04 10:00:00", at),
        (1, 2, "E", None, "-D", 11, "2024-03-04 10:00:00", at),
        (1, 3, "E", None, "+I", 12, "2024-03-04 10:00:00", at),
        (2, 0, "E", None, "-D", 10, "2024-03-04 10:00:00", at),
        (2, 1, "E", None, "-D", 12, "2024-03-04 10:00:00", at),
        (3, 0, "quarantined", "canal-json: data is empty", None, None, None, None),
        (4, 0, "quarantined", "canal-json: UPDATE without an old array", None, None, None, None),
        (5, 0, "quarantined", "canal-json: old has 0 rows, data 1", None, None, None, None),
        (6, 0, "quarantined", f"canal-json: missing es{HOW}", None, None, None, None),
        (7, 0, "quarantined", "canal-json: missing data", None, None, None, None),
        (8, 0, "quarantined", "canal-json: bad es 'soon'", None, None, None, None),
    ]
    seconds = env.wall_clock(T // 1000 * 1000, ZONE)[:19]  # whole seconds: no fraction read back
    assert _events(converted, "maxwell-json") == [
        (1, 0, "E", None, "+I", 10, "2024-03-04 10:00:00", seconds),
        (2, 0, "E", None, "-D", 10, "2024-03-04 10:00:00", seconds),
        (2, 1, "E", None, "+I", 11, "2024-03-04 10:00:00", seconds),
        (3, 0, "quarantined", f"maxwell-json: missing ts{HOW}", None, None, None, None),
        (4, 0, "skipped", None, None, None, None, None),  # a bootstrap marker
        (5, 0, "quarantined", "maxwell-json: bad ts '1709514000.5'", None, None, None, None),
        (6, 0, "skipped", None, None, None, None, None),  # DDL
    ]


def test_the_documented_examples(converted):
    """docs/cdc_formats.md's CDC example blocks each stage the page's four native events (its
    native block is checked against the test's native events in tests/unit/test_cdc_formats_unit.py)."""
    if ZONE != "Asia/Shanghai":
        pytest.skip("the page's times are Asia/Shanghai's")
    documented = _documented()
    assert sorted({fmt for fmt, _, _ in documented}) == ["canal-json", "debezium-json", "maxwell-json"]
    at = ["2024-03-04 09:00:00", "2024-03-04 09:01:00", "2024-03-04 09:02:00"]  # as the page says
    sign = "2024-03-04 10:00:00"
    for fmt, n, _ in documented:
        got = [(kind, op, cid, st, op_ts) for _, _, kind, _, op, cid, st, op_ts in _events(converted, f"doc{n}")]
        assert got == [("E", "+I", 1001, sign, at[0]), ("E", "-U", 1001, sign, at[1]),
                       ("E", "+U", 1001, sign, at[1]), ("E", "-D", 1001, sign, at[2])], fmt


def test_unknown_format_is_refused(landed):
    from python_udfs.ingest.contract_ingest import run_contract_ingest

    with pytest.raises(ValueError, match="unknown contracts format 'avro-json': allowed values are "
                                         "lakerank, debezium-json, canal-json, maxwell-json"):
        run_contract_ingest(landed[0].spark(), landing_dir="/nonexistent", checkpoint_dir="/nonexistent",
                            changelog_table="x.c", quarantine_table="x.q", ingest_log_table="x.l", fmt="avro-json")


# --------------------------------------------------------------------------------------------
# The declared example streams (models/examples/_examples_streams.yml), one format each, on the
# same home: the CDC messages in one build, their equivalent native lines in the next
# --------------------------------------------------------------------------------------------

def _ms(y, mo, d, h, mi, s=0) -> int:
    """Epoch milliseconds of a UTC time."""
    return int(_dt.datetime(y, mo, d, h, mi, s, tzinfo=_dt.timezone.utc).timestamp() * 1000)


def _project(pid, city, designer, status, t):
    return {"project_id": pid, "city": city, "designer": designer, "status": status, "update_time": t}


def _payment(pay_id, project_id, amount, t):
    return {"payment_id": pay_id, "project_id": project_id, "amount": Decimal(amount), "pay_time": t}


def _design(change_id, project_id, designer, status, t):
    return {"change_id": change_id, "project_id": project_id, "designer": designer, "design_status": status,
            "change_time": t}


P1 = _project(901, "Shanghai", "wang", "signed", _dt.datetime(2024, 3, 1, 9, 0, 0))
P2 = _project(902, "Hangzhou", "li", "designing", _dt.datetime(2024, 3, 1, 10, 0, 0))
P3 = dict(_project(903, "Suzhou", "chen", "signed", _dt.datetime(2024, 3, 2, 8, 0, 0)), op="zz")  # a column 'op'
PAY = [_payment(811, 901, "120.50", _dt.datetime(2024, 3, 2, 9, 0)),
       _payment(812, 902, "80.00", _dt.datetime(2024, 3, 2, 9, 5))]
D1, D2 = _design(951, 901, "wang", "draft", _dt.datetime(2024, 3, 3, 9)), _design(952, 902, "li", "review",
                                                                                  _dt.datetime(2024, 3, 3, 10))
T0 = _ms(2024, 3, 4, 1, 0)
# Per stream (model, format, var, CDC table): the source's changes, one message each:
# (kind, [(before, after) per row], change time in ms), the kinds the format's own
# (Debezium op, Canal type, Maxwell type); a message given as a string is a malformed
# envelope, with its reason.
STREAMS = {
    "projects": ("stg_project_changes", "debezium-json", "projects_format", [
        ("r", [(None, P1)], T0),
        ("c", [(None, P2)], T0 + 1000),
        ("u", [(P1, dict(P1, city="Ningbo", update_time=_dt.datetime(2024, 3, 2, 9, 30)))], T0 + 2000),
        ("u", [(P2, dict(P2, designer="zhang"))], T0 + 2000),  # same change time: ordered by line
        ("d", [(dict(P2, designer="zhang"), None)], T0 + 3000),
        ("c", [(None, P3)], T0 + 3500),
        ('{"schema": null, "payload": null}', None),  # a tombstone: skipped
        # Postgres' default replica identity: an update without its before image, a delete of the key
        ("u", [(None, dict(P3, status="done", update_time=_dt.datetime(2024, 3, 3, 8, 0)))], T0 + 4000),
        ("d", [({"project_id": 901}, None)], T0 + 5000),
        ('{"ts_ms": 1709514000000}', None),  # a heartbeat
    ]),
    "payments": ("stg_payments", "canal-json", "payments_format", [
        ("INSERT", [(None, PAY[0]), (None, PAY[1])], T0),
        ("UPDATE", [(PAY[0], dict(PAY[0], amount=Decimal("125.50"))),
                    (PAY[1], dict(PAY[1], amount=Decimal("90.00")))], T0 + 1000),
        ("INSERT", [(None, _payment(813, 901, "5.00", _dt.datetime(2024, 3, 2, 10))),
                    (None, dict(_payment(814, 902, "6.00", _dt.datetime(2024, 3, 2, 10)), project_id="x"))], T0 + 2000),
        ("DELETE", [(PAY[1], None)], T0 + 3000),
        ('{"data": null, "es": 1709514000000, "isDdl": true, "sql": "ALTER TABLE payments ADD note text", '
         '"type": "ALTER", "ts": 1709514000000}', None),  # DDL: skipped
        # a topic of the whole database: another table's change, skipped (the stream's table_include)
        (env.canal_message("INSERT", [{"refund_id": "1", "payment_id": "811"}], None, T0, "refunds",
                           {"refund_id": "bigint", "payment_id": "bigint"}), None),
    ]),
    "design_changes": ("stg_design_changes", "maxwell-json", "design_changes_format", [
        ("insert", [(None, D1)], T0),
        ("insert", [(None, D2)], T0 + 1000),
        ("update", [(D1, dict(D1, designer="chen", design_status="review"))], T0 + 2000),
        ("bootstrap-insert", [(None, _design(953, 903, "li", "draft", _dt.datetime(2024, 3, 3, 11)))], T0 + 2000),
        ("delete", [(D2, None)], T0 + 3000),
        ('{"type": "insert", "ts": 1709514000, "data": [1]}', "maxwell-json: data is not an object"),
    ]),
}
_TYPES = {"payment_id": "bigint", "project_id": "bigint", "amount": "decimal(18,2)", "pay_time": "datetime"}
# The version each kind stands for (docs/examples.md): (native op, the image it carries).
_VERSION = {"r": ("c", 1), "c": ("c", 1), "u": ("u", 1), "d": ("d", 0), "INSERT": ("c", 1), "UPDATE": ("u", 1),
            "DELETE": ("d", 0), "insert": ("c", 1), "bootstrap-insert": ("c", 1), "update": ("u", 1),
            "delete": ("d", 0)}


def _text(v):
    return v.strftime("%Y-%m-%d %H:%M:%S") if isinstance(v, _dt.datetime) else str(v)


def _message(fmt, kind, changes, ts_ms, n):
    """A change as ``fmt`` writes it: Debezium plain with DATETIME as epoch ms (every other
    message wrapped, with strings; the second without source.ts_ms), Canal's strings, Maxwell's
    typed values."""
    if fmt == "debezium-json":
        wrapped = n % 2 == 0

        def image(r):
            if r is None:
                return None
            return {k: v if not isinstance(v, _dt.datetime) else _text(v) if wrapped else
                    int((v - _dt.datetime(1970, 1, 1)).total_seconds() * 1000) for k, v in r.items()}

        (before, after), = changes
        line = env.debezium_message(kind, image(before), image(after), ts_ms, "projects", wrapped, pos=n)
        if n == 2:  # the envelope's ts_ms is the change time when there is no source.ts_ms
            obj = json.loads(line)
            payload = obj.get("payload", obj)
            del payload["source"]["ts_ms"]
            payload["ts_ms"] = ts_ms
            line = json.dumps(obj)
        return line
    if fmt == "canal-json":
        def strings(r):
            return {k: _text(v) for k, v in r.items()}

        data = [strings(a if a is not None else b) for b, a in changes]
        old = [env.changed(strings(b), strings(a)) for b, a in changes] if kind == "UPDATE" else None
        return env.canal_message(kind, data, old, ts_ms, "payments", _TYPES, n)
    (before, after), = changes

    def typed(r):
        return {k: (_text(v) if isinstance(v, _dt.datetime) else float(v) if isinstance(v, Decimal) else v)
                for k, v in r.items()}

    old = env.changed(typed(before), typed(after)) if kind == "update" else None
    return env.maxwell_message(kind, typed(after if after is not None else before), old, ts_ms, "design_changes", n)


def _native(image, op, ts_ms, with_op):
    """The equivalent native line of a version: the image's values as a native line writes
    them, ``op`` (only on a stream that declares one) and ``op_ts`` the change time; a
    delete's ``update_time`` (the projects stream's ``delete_time``) is the change time too,
    as a native delete line carries it."""
    obj = {k: _text(v) if isinstance(v, (_dt.datetime, Decimal)) else v for k, v in image.items() if k != "op"}
    if with_op:
        obj["op"] = op
    obj["op_ts"] = env.wall_clock(ts_ms, ZONE)
    if with_op and op == "d":
        assert ts_ms % 1000 == 0  # update_time's format has whole seconds
        obj["update_time"] = obj["op_ts"][:19]
    return json.dumps(obj)


@pytest.fixture(scope="module")
def example_streams(landed):
    """Build 1: each stream's messages in its format, ``dbt run --select`` the three ingests
    with the formats' vars; build 2: the equivalent native lines, the same run without vars
    (the default, lakerank). Returns (lakerank, {stream: (CDC file, native file, expected
    quarantine of the envelopes and deletes [(physical line, reason, raw line)], events
    landed, the native events [(message's line, row index, image label, native line, the
    message)])})."""
    lr = landed[0]
    examples = Lakerank(lr.runner, lr.home, examples=True)  # the ingests are examples: off by default
    models = [model for model, _, _, _ in STREAMS.values()]
    out = {}
    for stream, (model, fmt, _, messages) in STREAMS.items():
        lines, native, quarantine, events, skipped = [], [], [], 0, 0
        for n, msg in enumerate(messages, start=1):
            if len(msg) == 2:  # a malformed envelope, or a line that is not data (reason None)
                lines.append(msg[0])
                if msg[1] is None:
                    skipped += 1
                else:
                    quarantine.append((n, msg[1], msg[0]))
                events += 1
                continue
            kind, changes, ts_ms = msg
            lines.append(_message(fmt, kind, changes, ts_ms, n))
            op, side = _VERSION[kind]
            for i, change in enumerate(changes):
                events += 1
                label = ("before" if op == "d" else "after") if fmt == "debezium-json" else (
                    f"data[{i}]" if fmt == "canal-json" else "data")
                if op == "d" and model != "stg_project_changes":  # no op field: quarantined
                    quarantine.append((n, f"{fmt} {label}: delete on a stream without an op field", lines[-1]))
                else:
                    native.append((n, i, label, _native(change[side], op, ts_ms, model == "stg_project_changes"),
                                   lines[-1]))
        out[stream] = [os.path.basename(lr.land(lines, stream=stream)), None, quarantine, events, native, skipped]
    examples.dbt("run", "--select", *models, vars={var: fmt for _, fmt, var, _ in STREAMS.values()})
    for stream, entry in out.items():
        entry[1] = os.path.basename(lr.land([line for _, _, _, line, _ in entry[4]], stream=stream))
    examples.dbt("run", "--select", *models)
    return lr, out


def _declared(model):
    import yaml

    from lakerank_project import ROOT

    declared = yaml.safe_load((ROOT / "models" / "examples" / "_examples_streams.yml").read_text())
    return [f["name"] for m in declared["models"] if m["name"] == model for f in m["config"]["stream"]["fields"]]


def _mine(df, name):
    return df[df["_source_file"].str.endswith(name)].sort_values("_source_line")


def test_example_streams_stage_what_their_native_lines_stage(example_streams):
    """Each stream's CDC events stage exactly the rows its equivalent native lines stage, in
    the same order, and each row's position is its message's physical line and row index."""
    lr, out = example_streams
    for stream, (cdc_file, native_file, _, _, native, _) in out.items():
        model = STREAMS[stream][0]
        fields = _declared(model)
        table = lr.table(model)
        cdc_rows, native_rows = _mine(table, cdc_file), _mine(table, native_file)
        want = list(native_rows[fields].itertuples(index=False, name=None))
        assert len(want) > 2 and len(cdc_rows) == len(want), stream
        assert list(cdc_rows[fields].itertuples(index=False, name=None)) == want, stream
        applied = [native[int(k) - 1][:2] for k in native_rows["_source_line"]]
        assert [(int(p) >> 20, int(p) & 0xFFFFF) for p in cdc_rows["_source_line"]] == applied, stream
    projects = _mine(lr.table("stg_project_changes"), out["projects"][0])
    assert list(projects["op"]) == ["c", "c", "u", "u", "d", "c", "u", "d"]  # P3's own column 'op' is not the kind
    # the update without a before image and the delete of the key alone (Postgres' default replica identity)
    assert list(projects["status"])[-2:] == ["done", None] and list(projects["project_id"])[-2:] == [903, 901]


def test_example_streams_quarantine_and_count_every_event(example_streams):
    """The malformed envelopes and the deletes of the streams without an op field are
    quarantined with their reasons, what is not data and another table's change skipped; a row
    the native line of which is refused is refused with the same reason, prefixed with its
    image; every event is counted (a Canal message: one a row)."""
    lr, out = example_streams
    for stream, (cdc_file, native_file, quarantine, events, native, skipped) in out.items():
        model, fmt = STREAMS[stream][:2]
        rows = lr.table(f"{model}__quarantine")
        got = sorted((os.path.basename(f), int(n), reason, raw) for f, n, reason, raw in
                     rows[["_source_file", "_source_line", "reason", "raw_line"]].itertuples(index=False, name=None))
        native_bad = [row for row in got if row[0] == native_file]
        refused = [(cdc_file, native[k - 1][0], f"{fmt} {native[k - 1][2]}: {reason}", native[k - 1][4])
                   for _, k, reason, _ in native_bad]
        assert got == sorted([(cdc_file, n, reason, raw) for n, reason, raw in quarantine] + refused + native_bad)
        log = lr.table(f"{model}__ingest_log").sort_values("_commit_id")
        counts = [(int(r.events_landed), int(r.applied), int(r.skipped), int(r.quarantined)) for r in log.itertuples()]
        n_bad = len(quarantine) + len(refused)
        assert counts == [(events, events - n_bad - skipped, skipped, n_bad),
                          (len(native), len(native) - len(native_bad), 0, len(native_bad))], stream
    assert [len(out[s][2]) for s in STREAMS] == [0, 1, 2] and [out[s][5] for s in STREAMS] == [2, 2, 0]
    assert len(_mine(lr.table("stg_payments__quarantine"), out["payments"][1])) == 1  # project_id "x"


# --------------------------------------------------------------------------------------------
# A contracts stream that orders by arrival, through a real ingest (last: it adds a commit to
# the contracts tables the tests above read)
# --------------------------------------------------------------------------------------------

def test_a_stream_without_change_times_is_ingested_in_arrival_order(landed):
    """Flink's own debezium-json writer writes no change time: with the var
    contracts_change_time: arrival, the ingest orders a file's messages by their lines and stamps
    them with the batch's time; the same file is quarantined without the declaration."""
    lr = landed[0]
    pid, cid = 9_000_001, 9_000_000_001  # ids of this test alone
    image = {"project_id": pid, "sign_time": "2024-03-05 08:00:00", "amount": "2.50"}
    first, second = dict(image, contract_id=cid), dict(image, contract_id=cid + 1)
    moved = dict(first, sign_time="2024-03-01 08:00:00")
    messages = [{"before": None, "after": first, "op": "c"}, {"before": None, "after": second, "op": "c"},
                {"before": None, "after": moved, "op": "u"},  # no before image: the state has it
                {"before": {"contract_id": cid + 1}, "after": None, "op": "d"}]  # a key-only delete
    vars = {"contracts_format": "debezium-json"}  # no table filter: these messages name no table
    refused = os.path.basename(lr.land([json.dumps(m) for m in messages]))
    lr.dbt("run", "--select", "stg_contract_changelog", vars=vars)
    quarantined = lr.table("stg_contract_quarantine")
    quarantined = quarantined[quarantined["_source_file"].str.endswith(refused)]
    how = " (a source that writes none: declare the var contracts_change_time: arrival to order by arrival)"
    assert len(quarantined) == 4 and quarantined["reason"].str.endswith(how).all(), list(quarantined["reason"])

    arrived = os.path.basename(lr.land([json.dumps(m) for m in messages]))
    lr.dbt("run", "--select", "stg_contract_changelog", vars={**vars, "contracts_change_time": "arrival"})
    staged = lr.table("stg_contract_changelog").sort_values(["_commit_id", "_seq"])
    mine = staged[staged["_source_file"].str.endswith(arrived)]
    cols = ["rowkind", "contract_id", "sign_time", "_source_line"]
    assert [(kind, int(c), str(t), int(n)) for kind, c, t, n in mine[cols].itertuples(index=False, name=None)] == [
        ("+I", cid, "2024-03-05 08:00:00", 1), ("+I", cid + 1, "2024-03-05 08:00:00", 2),
        ("-U", cid, "2024-03-05 08:00:00", 3), ("+U", cid, "2024-03-01 08:00:00", 3),
        ("-D", cid + 1, "2024-03-05 08:00:00", 4)]
    log = lr.table("stg_contract_ingest_log").sort_values("_commit_id").iloc[-1]
    assert (int(log.events_landed), int(log.applied), int(log.quarantined)) == (4, 4, 0)
    assert mine["op_ts"].nunique() == 1 and str(mine["op_ts"].iloc[0])[:19] == str(log["_committed_at"])[:19]
