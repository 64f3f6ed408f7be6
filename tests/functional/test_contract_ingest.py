"""Unit tests of python_udfs.ingest.contract_ingest on a real local SparkSession (no mocks).

Each test gets its own landing folder, checkpoint and schema, so tests are
independent; they share one module-scoped Hive-enabled session (``spark``,
tests/functional/conftest.py) whose warehouse and Derby metastore live in a
temporary folder.
"""

from __future__ import annotations

import collections
import json
import os
import random
import shutil
import sys
import time
import uuid

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from python_udfs.ingest.contract_ingest import run_contract_ingest  # noqa: E402
from python_udfs.ingest.tables import landing_path  # noqa: E402

pyspark = pytest.importorskip("pyspark")


class Stream:
    """A landing folder, checkpoint and three tables in a schema of their own."""

    def __init__(self, spark, tmp_path):
        self.spark = spark
        self.home = str(tmp_path / "home")
        self.landing = landing_path(self.home)
        self.checkpoint = os.path.join(self.home, "checkpoints", "contracts")
        schema = f"ci_{uuid.uuid4().hex[:10]}"
        self.changelog = f"{schema}.stg_contract_changelog"
        self.quarantine = f"{schema}.stg_contract_quarantine"
        self.ingest_log = f"{schema}.stg_contract_ingest_log"
        self._n = 0

    def run(self, **kwargs) -> str:
        return run_contract_ingest(
            self.spark, landing_dir=self.landing, checkpoint_dir=self.checkpoint,
            changelog_table=self.changelog, quarantine_table=self.quarantine,
            ingest_log_table=self.ingest_log, **kwargs)

    def land(self, lines, name=None, mtime=None) -> str:
        """Write a file of lines (dicts become JSON, strings are written verbatim)."""
        os.makedirs(self.landing, exist_ok=True)
        self._n += 1
        name = name or f"{self._n:03d}.jsonl"
        path = os.path.join(self.landing, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = os.path.join(self.landing, f".{uuid.uuid4().hex}.tmp")  # hidden while written
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            for line in lines:
                fh.write((json.dumps(line) if isinstance(line, dict) else line) + "\n")
        os.replace(tmp, path)
        if mtime is not None:
            os.utime(path, (mtime, mtime))
        return path

    def changelog_rows(self):
        rows = self.spark.sql(f"""
            SELECT _commit_id, _seq, rowkind, project_id, contract_id,
                   date_format(sign_time, 'yyyy-MM-dd HH:mm:ss') AS sign_time,
                   CAST(amount AS STRING) AS amount,
                   date_format(op_ts, 'yyyy-MM-dd HH:mm:ss.SSS') AS op_ts,
                   _source_file, _source_line
            FROM {self.changelog} ORDER BY _commit_id, _seq""").collect()
        return [tuple(r) for r in rows]

    def quarantine_rows(self):
        rows = self.spark.sql(f"""
            SELECT _commit_id, _source_file, _source_line, reason, raw_line,
                   CAST(_quarantined_at AS STRING) AS at
            FROM {self.quarantine} ORDER BY _commit_id, _source_file, _source_line""").collect()
        return [tuple(r) for r in rows]

    def log_rows(self):
        rows = self.spark.sql(f"""
            SELECT _commit_id, files, events_landed, applied, noop, stale, before_image,
                   quarantined, CAST(_committed_at AS STRING) AS at
            FROM {self.ingest_log} ORDER BY _commit_id""").collect()
        return [r.asDict() for r in rows]

    def partitions(self, table):
        return sorted(r[0] for r in self.spark.sql(f"SHOW PARTITIONS {table}").collect())

    def snapshot(self):
        return (self.changelog_rows(), self.quarantine_rows(), self.log_rows(),
                self.partitions(self.changelog), self.partitions(self.quarantine),
                self.partitions(self.ingest_log))


@pytest.fixture
def stream(spark, tmp_path):
    return Stream(spark, tmp_path)


def ev(op, contract_id, op_ts, project_id=None, sign_time=None, amount=None):
    e = {"op": op, "contract_id": contract_id, "op_ts": op_ts}
    if project_id is not None:
        e["project_id"] = project_id
    if sign_time is not None:
        e["sign_time"] = sign_time
    if amount is not None:
        e["amount"] = amount
    return e


def uri(path):
    return "file:" + path


def live_set(changelog_rows):
    """Replay a changelog; fail on a retraction of something not live."""
    live = {}
    for row in changelog_rows:
        kind, image = row[2], row[3:6] + (row[6],)
        cid = row[4]
        if kind in ("+I", "+U"):
            assert cid not in live, f"{kind} of live contract {cid}"
            live[cid] = image
        else:
            assert live.get(cid) == image, f"{kind} of {image}, live is {live.get(cid)}"
            del live[cid]
    return live


def assert_reconciles(log_rows):
    for r in log_rows:
        assert r["events_landed"] == (r["applied"] + r["noop"] + r["stale"]
                                      + r["before_image"] + r["quarantined"]), r


# ---------------------------------------------------------------------------


def test_landing_path():
    assert landing_path("/h") == os.path.join("/h", "landing", "contracts")
    assert landing_path("/h", "payments") == os.path.join("/h", "landing", "payments")


def test_missing_landing_folder_is_an_empty_stream(stream):
    assert not os.path.exists(stream.landing)
    summary = stream.run()
    assert summary.startswith("no new commits")
    assert os.path.isdir(stream.landing)
    assert stream.snapshot() == ([], [], [], [], [], [])
    # An existing empty folder too, and the tables exist with the documented columns.
    assert stream.run().startswith("no new commits")
    cols = lambda t: [(f.name, f.dataType.simpleString()) for f in stream.spark.table(t).schema]  # noqa: E731
    assert cols(stream.changelog) == [
        ("rowkind", "string"), ("project_id", "bigint"), ("contract_id", "bigint"),
        ("sign_time", "timestamp_ntz"), ("amount", "decimal(18,2)"), ("op_ts", "timestamp_ntz"),
        ("_seq", "bigint"), ("_source_file", "string"), ("_source_line", "bigint"),
        ("_commit_id", "bigint")]
    assert cols(stream.quarantine) == [
        ("reason", "string"), ("raw_line", "string"), ("_source_file", "string"),
        ("_source_line", "bigint"), ("_quarantined_at", "timestamp_ntz"), ("_commit_id", "bigint")]
    assert cols(stream.ingest_log) == [
        ("files", "bigint"), ("events_landed", "bigint"), ("applied", "bigint"),
        ("noop", "bigint"), ("stale", "bigint"), ("before_image", "bigint"),
        ("quarantined", "bigint"), ("_committed_at", "timestamp_ntz"), ("skipped", "bigint"), ("_commit_id", "bigint")]


def test_an_ingest_log_of_an_earlier_version_gets_the_new_count(spark, tmp_path):
    """A log created before ``skipped`` existed is given the column in place (its old commits
    read NULL); a table whose columns differ otherwise is still refused."""
    from python_udfs.ingest.contract_ingest import INGEST_LOG_DDL
    from python_udfs.ingest.tables import ensure_table

    old_ddl = INGEST_LOG_DDL.replace(", skipped BIGINT", "")
    spark.sql("CREATE SCHEMA IF NOT EXISTS migrate")
    spark.sql(f"CREATE TABLE migrate.old_log ({old_ddl}) USING parquet PARTITIONED BY (_commit_id) "
              f"LOCATION '{tmp_path}/old_log'")
    spark.sql("INSERT INTO migrate.old_log PARTITION (_commit_id = 0) "
              "SELECT 1, 2, 2, 0, 0, 0, 0, timestamp_ntz'2024-03-04 09:00:00'")
    ensure_table(spark, "migrate.old_log", INGEST_LOG_DDL)
    rows = spark.sql("SELECT events_landed, skipped, _commit_id FROM migrate.old_log").collect()
    assert [tuple(r) for r in rows] == [(2, None, 0)]
    with pytest.raises(ValueError, match="exists with columns"):
        ensure_table(spark, "migrate.old_log", INGEST_LOG_DDL.replace("files BIGINT", "files INT"))
    spark.sql("DROP SCHEMA migrate CASCADE")


def test_semantics_across_builds(stream):
    D1 = "2024-03-01 09:00:00"
    D2 = "2024-03-02 09:00:00"
    D3 = "2024-03-03 18:30:00"
    f1 = stream.land([
        ev("+I", 1, "2024-03-05 10:00:00.000", 100, D1, "10.5"),                 # 1 applied +I
        "",                                                                        # 2 blank
        ev("+I", 2, "2024-03-05 10:00:00.000", 100, D2),                          # 3 applied +I
        ev("+I", 1, "2024-03-05 10:00:01.000", 100, D1, 10.50),                   # 4 noop (same image)
        ev("+U", 2, "2024-03-05 10:05:00.000", 200, D3),                          # 5 applied -U/+U (moves)
        ev("-U", 2, "2024-03-05 10:05:00.000", 100, D2),                          # 6 before_image
        "   \t ",                                                                  # 7 whitespace only
        ev("+I", 3, "2024-03-05 10:00:00", 100, D1),                              # 8 applied +I (no millis)
        ev("-D", 3, "2024-03-05 11:00:00.000"),                                    # 9 applied -D
        ev("-D", 4, "2024-03-05 12:00:00.000"),                                    # 10 noop (tombstone)
        "not json",                                                                # 11
        '{"op":"X","contract_id":5,"op_ts":"2024-03-05 10:00:00.000"}',            # 12
        json.dumps(ev("+I", 6, "2024-03-05 10:00:00.000", 100, "2024-13-01 00:00:00")),  # 13
        '{"op":"+I","project_id":1,"sign_time":"2024-03-01 00:00:00","op_ts":"2024-03-05 10:00:00.000"}',  # 14
        json.dumps(ev("+I", 7, "2024-03-05 10:00:00.000", 100, D1, "abc")),       # 15
        "[1, 2]",                                                                  # 16
        '{"op":"+U","contract_id":8,"project_id":1,"sign_time":"2024-03-01 00:00:00"}',  # 17
        '{"op":"+I","contract_id":"1.5","project_id":1,"sign_time":"2024-03-01 00:00:00",'
        '"op_ts":"2024-03-05 10:00:00.000"}',  # 18
        '{"contract_id":9,"op_ts":"2024-03-05 10:00:00.000"}',                     # 19
        ev("+U", 10, "2024-03-05 10:00:00.000", None, D1),                        # 20 null project_id
        '{"op":"+I","contract_id":"12","project_id":1,"sign_time":"2024-03-01 00:00:00",'
        '"op_ts":"2024-03-05 10:00:00.000"}',  # 21
        '{"op":"+I","contract_id":11,"project_id":1,"sign_time":"2024-03-01 00:00:00",'
        '"op_ts":"2024-03-05 10:30:00.000","amount":1234567890123456.785}',        # 22 exact, half-up
        '{"op":"-D","contract_id":13,"op_ts":"2024-03-05 10:00:00.000"} trailing',  # 23
    ])
    s1 = stream.run()
    assert s1 == "commit 0: landed 21, applied 6, noop 2, stale 0, before_image 1, quarantined 12"

    f1u = uri(f1)
    assert stream.changelog_rows() == [
        (0, 1, "+I", 100, 1, D1, "10.50", "2024-03-05 10:00:00.000", f1u, 1),
        (0, 2, "+I", 100, 2, D2, None, "2024-03-05 10:00:00.000", f1u, 3),
        (0, 3, "+I", 100, 3, D1, None, "2024-03-05 10:00:00.000", f1u, 8),
        (0, 4, "-U", 100, 2, D2, None, "2024-03-05 10:05:00.000", f1u, 5),
        (0, 5, "+U", 200, 2, D3, None, "2024-03-05 10:05:00.000", f1u, 5),
        (0, 6, "+I", 1, 11, "2024-03-01 00:00:00", "1234567890123456.79", "2024-03-05 10:30:00.000", f1u, 22),
        (0, 7, "-D", 100, 3, D1, None, "2024-03-05 11:00:00.000", f1u, 9),
    ]
    q = [(r[2], r[3], r[4]) for r in stream.quarantine_rows()]
    assert q == [
        (11, "invalid json", "not json"),
        (12, "unknown op 'X'", '{"op":"X","contract_id":5,"op_ts":"2024-03-05 10:00:00.000"}'),
        (13, "bad sign_time '2024-13-01 00:00:00'",
         json.dumps(ev("+I", 6, "2024-03-05 10:00:00.000", 100, "2024-13-01 00:00:00"))),
        (14, "null contract_id",
         '{"op":"+I","project_id":1,"sign_time":"2024-03-01 00:00:00","op_ts":"2024-03-05 10:00:00.000"}'),
        (15, "bad amount 'abc'", json.dumps(ev("+I", 7, "2024-03-05 10:00:00.000", 100, D1, "abc"))),
        (16, "not a json object", "[1, 2]"),
        (17, "null op_ts", '{"op":"+U","contract_id":8,"project_id":1,"sign_time":"2024-03-01 00:00:00"}'),
        (18, "bad contract_id '1.5'",
         '{"op":"+I","contract_id":"1.5","project_id":1,"sign_time":"2024-03-01 00:00:00",'
         '"op_ts":"2024-03-05 10:00:00.000"}'),
        (19, "missing op", '{"contract_id":9,"op_ts":"2024-03-05 10:00:00.000"}'),
        (20, "null project_id", json.dumps(ev("+U", 10, "2024-03-05 10:00:00.000", None, D1))),
        (21, "bad contract_id '12'",
         '{"op":"+I","contract_id":"12","project_id":1,"sign_time":"2024-03-01 00:00:00",'
         '"op_ts":"2024-03-05 10:00:00.000"}'),
        (23, "invalid json", '{"op":"-D","contract_id":13,"op_ts":"2024-03-05 10:00:00.000"} trailing'),
    ]
    assert {r[1] for r in stream.quarantine_rows()} == {f1u}

    # Second build: late and stale events against the state of the first build.
    f2 = stream.land([
        ev("+U", 1, "2024-03-05 09:00:00.000", 100, D2, "1"),      # 1 stale (older than applied)
        ev("+I", 4, "2024-03-05 11:00:00.000", 100, D1),           # 2 stale (older than tombstone)
        ev("+I", 3, "2024-03-05 13:00:00.000", 300, D2, "7"),      # 3 applied +I (re-insert after -D)
        ev("+U", 1, "2024-03-05 14:00:00.000", 100, D1, "11"),     # 4 applied -U/+U (amount)
        ev("+I", 2, "2024-03-05 10:05:00.000", 200, D3),           # 5 noop (same op_ts, later file)
        ev("-U", 1, "2024-03-05 08:00:00.000", 100, D1, "10.5"),   # 6 before_image, whatever its order
    ])
    s2 = stream.run()
    assert s2 == "commit 1: landed 6, applied 2, noop 1, stale 2, before_image 1, quarantined 0"
    f2u = uri(f2)
    assert stream.changelog_rows()[7:] == [
        (1, 1, "+I", 300, 3, D2, "7.00", "2024-03-05 13:00:00.000", f2u, 3),
        (1, 2, "-U", 100, 1, D1, "10.50", "2024-03-05 14:00:00.000", f2u, 4),
        (1, 3, "+U", 100, 1, D1, "11.00", "2024-03-05 14:00:00.000", f2u, 4),
    ]

    logs = stream.log_rows()
    assert [{k: v for k, v in r.items() if k != "at"} for r in logs] == [
        dict(_commit_id=0, files=1, events_landed=21, applied=6, noop=2, stale=0,
             before_image=1, quarantined=12),
        dict(_commit_id=1, files=1, events_landed=6, applied=2, noop=1, stale=2,
             before_image=1, quarantined=0),
    ]
    assert_reconciles(logs)
    assert {r[5] for r in stream.quarantine_rows()} == {logs[0]["at"]}

    # The changelog is a clean retract stream that replays to the live set.
    assert live_set(stream.changelog_rows()) == {
        1: (100, 1, D1, "11.00"),
        2: (200, 2, D3, None),
        3: (300, 3, D2, "7.00"),
        11: (1, 11, "2024-03-01 00:00:00", "1234567890123456.79"),
    }

    # A build with no new files writes nothing.
    before = stream.snapshot()
    assert stream.run().startswith("no new commits")
    assert stream.snapshot() == before
    assert stream.partitions(stream.changelog) == ["_commit_id=0", "_commit_id=1"]


def test_file_handling_and_batches(stream):
    now = time.time()
    stream.land([ev("+I", 1, "2024-03-05 10:00:00.000", 1, "2024-03-01 00:00:00")], name="b.jsonl",
                mtime=now - 60)
    stream.land([ev("+I", 2, "2024-03-05 10:00:00.000", 1, "2024-03-01 00:00:00")], name="sub/c.data",
                mtime=now - 30)
    stream.land([ev("+I", 90, "2024-03-05 10:00:00.000", 1, "2024-03-01 00:00:00")], name=".hidden.jsonl")
    stream.land([ev("+I", 91, "2024-03-05 10:00:00.000", 1, "2024-03-01 00:00:00")], name="_tmp.jsonl")
    stream.land([ev("+I", 92, "2024-03-05 10:00:00.000", 1, "2024-03-01 00:00:00")], name="_x/d.jsonl")
    crlf = os.path.join(stream.landing, "e.jsonl")
    with open(crlf, "wb") as fh:  # byte-order mark, CRLF, a lone CR, no final newline
        fh.write(b'\xef\xbb\xbf{"op":"+I","contract_id":3,"project_id":1,"sign_time":"2024-03-01 00:00:00",'
                 b'"op_ts":"2024-03-05 10:00:00.000"}\r\n\r\nbroken\r'
                 b'{"op":"-D","contract_id":1,"op_ts":"2024-03-05 11:00:00.000"}')
    os.utime(crlf, (now, now))
    summary = stream.run(max_files_per_trigger=2)
    assert summary == "commits 0..1: landed 5, applied 4, noop 0, stale 0, before_image 0, quarantined 1"
    rows = stream.changelog_rows()
    prefix = uri(stream.landing) + "/"
    assert [(r[0], r[2], r[4], r[8].startswith(prefix), r[9]) for r in rows] == [
        (0, "+I", 1, True, 1), (0, "+I", 2, True, 1), (1, "+I", 3, True, 1), (1, "-D", 1, True, 4)]
    assert rows[1][8].endswith("/sub/c.data")
    assert [(r[2], r[3], r[4]) for r in stream.quarantine_rows()] == [(3, "invalid json", "broken")]
    logs = stream.log_rows()
    assert [(r["_commit_id"], r["files"], r["events_landed"]) for r in logs] == [(0, 2, 2), (1, 1, 3)]
    assert_reconciles(logs)

    # A file whose modification time is weeks older than the files already seen
    # (e.g. copied with its mtime) is still consumed; so is an empty file.
    old = now - 40 * 86400
    stream.land([ev("+U", 2, "2024-03-05 12:00:00.000", 5, "2024-03-01 00:00:00")], name="a_old.jsonl",
                mtime=old)
    stream.land([], name="f_empty.jsonl")
    assert stream.run() == "commit 2: landed 1, applied 1, noop 0, stale 0, before_image 0, quarantined 0"
    assert [(r[2], r[3], r[4]) for r in stream.changelog_rows()[4:]] == [("-U", 1, 2), ("+U", 5, 2)]
    # Empty files carry no line: they are consumed but not counted in `files`.
    assert [(r["_commit_id"], r["files"], r["events_landed"]) for r in stream.log_rows()][2:] == [(2, 1, 1)]

    # A batch of empty files only still gets its ingest log row (and nothing else).
    stream.land([], name="g_empty.jsonl")
    assert stream.run() == "commit 3: landed 0, applied 0, noop 0, stale 0, before_image 0, quarantined 0"
    last = stream.log_rows()[-1]
    assert (last["_commit_id"], last["files"], last["events_landed"]) == (3, 0, 0)
    assert last["at"] is not None
    assert stream.partitions(stream.changelog) == ["_commit_id=0", "_commit_id=1", "_commit_id=2"]


def test_replay_of_an_uncommitted_batch_is_identical(stream):
    stream.land([
        ev("+I", 1, "2024-03-05 10:00:00.000", 1, "2024-03-01 00:00:00", "1.25"),
        ev("+I", 2, "2024-03-05 10:00:00.000", 1, "2024-03-02 00:00:00"),
        "oops",
    ])
    assert stream.run().startswith("commit 0:")
    stream.land([
        ev("+U", 1, "2024-03-05 11:00:00.000", 2, "2024-03-01 00:00:00", "1.25"),
        ev("-D", 2, "2024-03-05 11:00:00.000"),
        ev("+I", 3, "2024-03-05 11:00:00.000", 1, "2024-03-03 00:00:00"),
        ev("+I", 1, "2024-03-05 09:00:00.000", 9, "2024-03-09 00:00:00"),
        '{"op":"+I"',
    ])
    first = stream.run()
    assert first == "commit 1: landed 5, applied 3, noop 0, stale 1, before_image 0, quarantined 1"
    done = stream.snapshot()
    assert len(done[0]) == 2 + 4

    def crash_before_commit(batch_id):
        """What a kill -9 after the sink's writes but before Spark's commit leaves."""
        for name in (str(batch_id), f".{batch_id}.crc"):
            path = os.path.join(stream.checkpoint, "commits", name)
            if os.path.exists(path):
                os.remove(path)

    # Crash after all three tables were written.
    crash_before_commit(1)
    assert stream.run() == first
    assert stream.snapshot() == done

    # Crash after the quarantine and ingest log were written but not the changelog.
    crash_before_commit(1)
    stream.spark.sql(f"ALTER TABLE {stream.changelog} DROP PARTITION (_commit_id=1)")
    assert stream.run() == first
    assert stream.snapshot() == done

    # A full disk (injected, issue F.5) while a replay writes commit 1: the run fails with the
    # disk's message and the tables still read the commit as it was; the next run replays it
    # again, and each table keeps one directory of the commit (a replay deletes the attempts
    # it replaced, the failed one's torn file included).
    crash_before_commit(1)
    os.environ["LAKERANK_INGEST_WRITE_FAULT"] = "/_v/i1_"
    try:
        with pytest.raises(Exception, match="No space left on device"):
            stream.run()
    finally:
        del os.environ["LAKERANK_INGEST_WRITE_FAULT"]
    assert stream.snapshot() == done
    assert stream.run() == first
    assert stream.snapshot() == done
    for table in (stream.changelog, stream.quarantine, stream.ingest_log):
        location = stream.spark.sql(f"describe formatted {table}").where("col_name = 'Location'").first()[1]
        staged = os.listdir(os.path.join(location.replace("file:", ""), "_v"))
        assert len([d for d in staged if d.startswith("i1_")]) == 1, (table, staged)

    assert stream.run().startswith("no new commits")
    assert stream.snapshot() == done
    assert_reconciles(done[2])


def reference_fold(batches):
    """A plain-Python model of the documented semantics (the per-contract fold of the former
    streaming-state ingest): per batch, the changelog rows (seq, rowkind, project, contract,
    sign_time, amount, op_ts, file, line) in (op_ts, file, line, n) order, and the counts."""
    from decimal import ROUND_HALF_UP, Decimal

    state = {}  # contract -> (last key, live, image)
    out = []
    for files in batches:
        events = []
        for path, lines in files:
            for no, e in enumerate(lines, 1):
                amount = e.get("amount")
                if amount is not None:
                    amount = str(Decimal(str(amount)).quantize(Decimal("0.01"), ROUND_HALF_UP))
                ts = e["op_ts"] if "." in e["op_ts"] else e["op_ts"] + ".000"
                events.append((ts, uri(path), no, e["op"], e["contract_id"],
                               (e.get("project_id"), e.get("sign_time"), amount)))
        rows, counts = [], dict(applied=0, noop=0, stale=0, before_image=0)
        for ts, file, no, op, cid, image in sorted(events, key=lambda x: x[:3]):
            last, live, cur = state.get(cid, (None, False, None))
            key = (ts, file, no)
            if op == "-U":
                counts["before_image"] += 1
                continue
            if last is not None and key <= last:
                counts["stale"] += 1
                continue
            if op in ("+I", "+U"):
                if live and cur == image:
                    counts["noop"] += 1
                elif live:
                    rows += [(key, 0, "-U", cur), (key, 1, "+U", image)]
                    counts["applied"] += 1
                else:
                    rows.append((key, 0, "+I", image))
                    counts["applied"] += 1
                state[cid] = (key, True, image)
            else:
                if live:
                    rows.append((key, 0, "-D", cur))
                    counts["applied"] += 1
                else:
                    counts["noop"] += 1
                state[cid] = (key, False, None)
        rows.sort(key=lambda r: (r[0], r[1]))
        out.append((rows, counts))
    return out


def test_set_based_state_matches_the_per_contract_fold(stream, monkeypatch):
    """Random batches over a few contracts (many events per contract and batch, op_ts ties
    within and across files, deletes of unknown contracts, re-inserts, identical images,
    late events) give the reference fold's changelog rows and counts, commit by commit.
    A commit's output of more than `_ONE_FILE_MAX` rows (7 here; 200,000 in production)
    takes the bulk path: ranges numbered and written in parallel, several files."""
    import random

    import python_udfs.ingest.sorted_output as ci

    monkeypatch.setattr(ci, "_ONE_FILE_MAX", 7)

    rng = random.Random(11)
    times = [f"2024-03-05 10:00:0{s}.{ms:03d}" for s in range(4) for ms in (0, 500)]
    images = [(1, "2024-03-01 00:00:00", None), (1, "2024-03-01 00:00:00", "2.5"),
              (2, "2024-03-02 12:00:00", "2.50"), (2, "2024-03-01 00:00:00", None)]
    batches = []
    for b in range(5):
        files = []
        for _ in range(rng.randint(1, 3)):
            lines = []
            for _ in range(rng.randint(5, 25)):
                op = rng.choice(["+I", "+U", "+U", "-U", "-D"])
                pid, sign, amount = rng.choice(images)
                # op_ts moves forward by batch, with some late events from earlier batches
                day = 5 + max(0, b - rng.choice([0, 0, 0, 1, 2]))
                ts = rng.choice(times).replace("03-05", f"03-{day:02d}")
                lines.append(ev(op, rng.randint(1, 6), ts,
                                None if op == "-D" else pid, None if op == "-D" else sign,
                                None if op == "-D" else amount))
            files.append(lines)
        batches.append(files)

    persistent = stream.spark.sparkContext._jsc.sc().getPersistentRDDs
    held_before = persistent().size()
    landed = []
    for files in batches:
        paths = [stream.land(lines) for lines in files]
        landed.append(list(zip(paths, files)))
        assert stream.run().startswith(f"commit {len(landed) - 1}:")
    # Every frame a commit kept (parsed lines, state step, bulk ranges) is released after it.
    assert persistent().size() == held_before
    expected = reference_fold(landed)

    got = stream.changelog_rows()
    logs = stream.log_rows()
    assert len(logs) == len(batches)
    for commit, (rows, counts) in enumerate(expected):
        mine = [r for r in got if r[0] == commit]
        # the reference's rows do not carry the contract id: take it from the key's event
        by_key = {(uri(p), no): e["contract_id"] for p, lines in landed[commit]
                  for no, e in enumerate(lines, 1)}
        want = [(commit, seq, kind, img[0], by_key[(key[1], key[2])], img[1], img[2], key[0],
                 key[1], key[2]) for seq, (key, _n, kind, img) in enumerate(rows, 1)]
        assert mine == want, commit
        log = logs[commit]
        assert {k: log[k] for k in counts} == counts, commit
        assert log["events_landed"] == sum(len(lines) for _, lines in landed[commit])
    assert sum(log["applied"] for log in logs) > 10 and sum(log["stale"] for log in logs) > 5
    assert sum(log["noop"] for log in logs) > 3
    assert_reconciles(logs)

    # The state table holds one row per contract and commit that changed it.
    state = stream.spark.table(stream.changelog + "_state")
    assert state.count() == state.select("contract_id", "_commit_id").distinct().count()
    # A commit of at most 7 changes is one file; a larger one is several (the bulk path).
    files = {r[0]: r[1] for r in stream.spark.sql(
        f"select _commit_id, count(distinct _metadata.file_path) from {stream.changelog} group by 1").collect()}
    changes = collections.Counter(r[0] for r in got)
    assert all((files[c] == 1) == (n <= 7) for c, n in changes.items()), (changes, files)
    assert any(n > 7 for n in changes.values()), changes


def test_bad_bytes_odd_lines_and_file_lifecycle(stream):
    """Issue F.5: bytes that are not UTF-8, a 10 MB line, a truncated last line, a local time
    that does not exist in a daylight-saving business zone; a file written under a hidden
    name and then renamed, new content re-landed under a consumed name, a consumed file
    deleted, the landing folder removed. Every event is
    applied or quarantined with a reason, the counts reconcile, and no run fails on data."""
    zone = stream.spark.conf.get("spark.sql.session.timeZone")
    stream.spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        os.makedirs(stream.landing, exist_ok=True)
        first = os.path.join(stream.landing, "a.jsonl")
        big_note = "x" * (10 * 1024 * 1024)
        valid = (b'{"op":"+I","contract_id":1,"project_id":7,"sign_time":"2024-03-01 00:00:00",'
                 b'"op_ts":"2024-03-05 10:00:00.000"}')
        with open(first, "wb") as fh:
            fh.write(valid + b"\n")                                                      # 1 applied
            fh.write(b"\xff\xfe\x00garbage\n")                                          # 2 invalid json
            fh.write(b'{"op":"+I","contract_id":2,"project_id":7,"sign_time":"2024-03-02 00:00:00",'
                     b'"op_ts":"2024-03-05 10:00:00.000","note":"caf\xe9"}\n')          # 3 applied (note ignored)
            fh.write(json.dumps({**ev("+I", 3, "2024-03-05 10:00:00.000", 7, "2024-03-03 00:00:00"),
                                 "note": big_note}).encode() + b"\n")                  # 4 applied, 10 MB
            fh.write(b"y" * (10 * 1024 * 1024) + b"\n")                                 # 5 invalid json, 10 MB
            # 02:30 on 2024-03-10 does not exist in New York (clocks jump 02:00 -> 03:00):
            # a wall-clock business time is stored and read back as landed.
            fh.write(json.dumps(ev("+I", 4, "2024-03-10 02:30:00.000", 7, "2024-03-10 02:30:00")).encode() + b"\n")
            fh.write(b'{"op":"+I","contract_id":5,"project_id":7,"sign_t')            # 7 truncated, no newline
        assert stream.run() == "commit 0: landed 7, applied 4, noop 0, stale 0, before_image 0, quarantined 3"
        rows = stream.changelog_rows()
        assert [(r[2], r[4]) for r in rows] == [("+I", 1), ("+I", 2), ("+I", 3), ("+I", 4)]
        # Read zone-free (date_format would pass the NTZ value through the session zone, which
        # has no 02:30 that day and moves it to 03:30).
        (gap,) = stream.spark.sql(f"""select cast(sign_time as string), cast(op_ts as string)
                                      from {stream.changelog} where contract_id = 4""").collect()
        assert tuple(gap) == ("2024-03-10 02:30:00", "2024-03-10 02:30:00")
        quarantined = stream.quarantine_rows()
        assert [(r[2], r[3]) for r in quarantined] == [(2, "invalid json"), (5, "invalid json"), (7, "invalid json")]
        assert len(quarantined[1][4]) == 10 * 1024 * 1024  # the raw line is kept whole
        assert quarantined[2][4] == '{"op":"+I","contract_id":5,"project_id":7,"sign_t'

        # A file still being written under a hidden name is not read; renamed, it is.
        hidden = os.path.join(stream.landing, ".b.jsonl.tmp")
        with open(hidden, "w") as fh:
            fh.write(json.dumps(ev("-D", 1, "2024-03-06 10:00:00.000")) + "\n")
        assert stream.run().startswith("no new commits")
        os.replace(hidden, os.path.join(stream.landing, "b.jsonl"))
        assert stream.run() == "commit 1: landed 1, applied 1, noop 0, stale 0, before_image 0, quarantined 0"

        # New content landed under a consumed name is read (the file is renamed first: Spark's
        # file source would skip a path it has seen); an untouched consumed file is not re-read.
        second = os.path.join(stream.landing, "b.jsonl")
        consumed_at = os.stat(second).st_mtime
        with open(second, "w") as fh:
            fh.write(json.dumps(ev("+I", 6, "2024-03-07 10:00:00.000", 7, "2024-03-07 00:00:00")) + "\n")
        os.utime(second, (consumed_at + 5, consumed_at + 5))
        assert stream.run() == "commit 2: landed 1, applied 1, noop 0, stale 0, before_image 0, quarantined 0"
        assert stream.changelog_rows()[-1][8].startswith(uri(os.path.join(stream.landing, "b.relanded-")))
        assert stream.run().startswith("no new commits")

        # A consumed file deleted, then the whole landing folder removed: nothing fails,
        # nothing already committed changes.
        before = stream.snapshot()
        os.remove(first)
        assert stream.run().startswith("no new commits")
        shutil.rmtree(stream.landing)
        assert stream.run().startswith("no new commits")
        assert stream.snapshot() == before
        assert_reconciles(stream.log_rows())
    finally:
        stream.spark.conf.set("spark.sql.session.timeZone", zone)


def test_large_file_read_in_splits_keeps_line_numbers(stream):
    """A file larger than a split is read by several tasks (no whole-file read): every line
    keeps its physical line number and file order, across \\n, \\r\\n and \\r endings, blank
    lines and a leading byte-order mark; the counts reconcile."""
    rng = random.Random(3)
    text, expected, quarantined, line_no = [], {}, {}, 0
    for i in range(1, 1201):
        line_no += 1
        if i % 97 == 0:
            text.append("   ")  # blank: skipped, still a physical line
        elif i % 89 == 0:
            text.append("not json")
            quarantined[line_no] = "invalid json"
        else:
            cid = 10_000 + i
            text.append(json.dumps(ev("+I", cid, "2024-01-01 00:00:00.000", 1, "2024-01-01 00:00:00")))
            expected[cid] = line_no
        text.append(rng.choice(["\n", "\r\n", "\r"]))
    body = "\ufeff" + "".join(text)
    os.makedirs(stream.landing, exist_ok=True)
    path = os.path.join(stream.landing, "big.jsonl")
    with open(path, "w", encoding="utf-8", newline="") as fh:
        fh.write(body)
    conf = stream.spark.conf
    saved = {k: conf.get(k) for k in ("spark.sql.files.maxPartitionBytes", "spark.sql.files.openCostInBytes")}
    conf.set("spark.sql.files.maxPartitionBytes", "8192")  # ~100 KB file: a dozen splits
    conf.set("spark.sql.files.openCostInBytes", "0")
    try:
        summary = stream.run()
    finally:
        for k, v in saved.items():
            conf.set(k, v)
    n_events = len(expected) + len(quarantined)
    assert summary.startswith(f"commit 0: landed {n_events}, applied {len(expected)}, "), summary
    got = {r[4]: r[9] for r in stream.changelog_rows()}
    assert got == expected
    assert {r[2]: r[3] for r in stream.quarantine_rows()} == quarantined
    # _seq follows (op_ts, file, line): all share op_ts, so it follows the line numbers
    seq = [r[9] for r in stream.changelog_rows()]
    assert seq == sorted(seq)
    (log,) = stream.log_rows()
    assert (log["files"], log["events_landed"], log["quarantined"]) == (1, n_events, len(quarantined))


WALL_CLOCK_CASES = [
    "2024-01-01 00:00:00", "2024-02-29 12:00:00", "2023-02-29 12:00:00", "2024-02-30 00:00:00",
    "2024-04-31 10:00:00", "2024-13-01 00:00:00", "2024-01-01 24:00:00", "2024-01-01 23:60:00",
    "2024-01-01 23:59:60", "2024-01-01 00:00:00.1", "2024-01-01 00:00:00.12", "2024-01-01 00:00:00.123",
    "2024-01-01 00:00:00.000", "2024-01-01 00:00:00.1234", "2024-01-01 00:00:00.", "2024-1-01 00:00:00",
    "2024-01-01 0:00:00", "2024-01-01T00:00:00", " 2024-01-01 00:00:00", "2024-01-01 00:00:00 ",
    "2024-01-01 00:00", "2024-01-01", "+2024-01-01 00:00:00", "02024-01-01 00:00:00",
    "0000-01-01 00:00:00", "0001-01-01 00:00:00", "1582-10-10 00:00:00", "9999-12-31 23:59:59.999",
    "2024-03-10 02:30:00", "\uff12\uff10\uff12\uff14-01-01 00:00:00", "2024-01-01 00:00:00Z",
    "2024-01-01 00:00:00+08:00", "", "garbage",
]


def test_wall_clock_fast_parse_equals_the_pattern_parse(spark):
    """The contract ingest's cheap timestamp parse (shape check + cast) accepts and reads
    exactly what the pattern parse (`parse_ntz`) does, in a zone with daylight saving."""
    from pyspark.sql import functions as F

    from python_udfs.ingest.wall_clock import WALL_CLOCK, WALL_CLOCK_MS, parse_ntz, parse_wall_clock

    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        t = F.col("t")
        rows = spark.createDataFrame([(c,) for c in WALL_CLOCK_CASES], "t string").select(
            "t",
            parse_ntz(t, "yyyy-MM-dd HH:mm:ss").cast("string"),
            parse_wall_clock(t, WALL_CLOCK).cast("string"),
            parse_ntz(t, "yyyy-MM-dd HH:mm:ss.SSS", "yyyy-MM-dd HH:mm:ss").cast("string"),
            parse_wall_clock(t, WALL_CLOCK_MS).cast("string"),
        ).collect()
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)
    assert len(rows) == len(WALL_CLOCK_CASES)
    assert [(r[0], r[1], r[3]) for r in rows] == [(r[0], r[2], r[4]) for r in rows]
    assert sum(r[1] is not None for r in rows) >= 6 and sum(r[3] is not None for r in rows) >= 11


def test_whole_file_numbering_equals_the_split_count(spark, tmp_path):
    """The two ways `landed_lines.numbered_lines` numbers lines (a window per file when each
    file is one split; per-split counts otherwise) give the same rows, over a byte-order
    mark, blank and whitespace-only lines, \\r and \\r\\n endings and an empty file; and a
    real micro-batch of small files takes the window (`whole_files`)."""
    from pyspark.sql import functions as F

    from python_udfs.ingest.landed_lines import batch_files, line_stream, numbered_lines, whole_files

    landing = tmp_path / "landing"
    landing.mkdir()
    bodies = ["\ufeff{\"a\": 1}\n\n  \n{\"a\": 2}\r\n{\"a\": 3}\r", "", "\n\n\n", "x\ny", "\ufeff\n{}"]
    for i, body in enumerate(bodies):
        with open(landing / f"f{i}.jsonl", "w", encoding="utf-8", newline="") as fh:
            fh.write(body)
    df = spark.read.format("text").load(str(landing)).select(
        F.col("_metadata.file_path").alias("file"), F.col("_metadata.file_block_start").alias("block"),
        F.col("value").alias("text"), F.lit(7).cast("bigint").alias("batch_us"))
    window = sorted(map(tuple, numbered_lines(df, one_split_each=True).collect()), key=repr)
    counted = sorted(map(tuple, numbered_lines(df).collect()), key=repr)
    assert window == counted
    assert len([r for r in window if r[1] == 0]) == 4  # a marker per file with a byte
    assert sorted((os.path.basename(r[0]), r[1]) for r in window if r[1] and r[0].endswith("f0.jsonl")) == [
        ("f0.jsonl", 1), ("f0.jsonl", 4), ("f0.jsonl", 5)]

    checkpoint = str(tmp_path / "checkpoint")
    seen = {}
    query = (line_stream(spark, str(landing), None).writeStream
             .foreachBatch(lambda d, b: seen.update({b: (batch_files(spark, checkpoint, b),
                                                         whole_files(spark, checkpoint, b))}))
             .option("checkpointLocation", checkpoint).trigger(availableNow=True).start())
    query.awaitTermination()
    ((files, whole),) = seen.values()
    assert sorted(os.path.basename(f) for f in files) == [f"f{i}.jsonl" for i in range(len(bodies))]
    assert whole


_TEXT_CHARS = " \t\n\x0b\x0c\r\x1c\x85\xa0\u2003\u2028\u2029\u3000\ufeff{}\"a1.5"


def test_cheap_text_helpers_equal_their_regexes(spark):
    """`landed_lines.trim_space`, `is_event` and `without_bom` (character trims and a prefix
    check) decide what the regexes they replace decided, on random texts over every kind of
    white space Java's `\\s` and `(?U)\\s` tell apart, line terminators, a byte-order mark
    and NULL: the same blank lines and BOM-stripped texts, and for trimmed texts the same
    leading `{`, trailing `}` and number casts (the texts themselves are equal unless they end
    in a line terminator, before which the regex's `$` also matched)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from pyspark.sql import functions as F

    from python_udfs.ingest.landed_lines import BLANK, is_event, trim_space, without_bom

    def decided(trimmed):
        return [trimmed.startswith("{"), trimmed.endswith("}"), trimmed.try_cast("decimal(18,2)"),
                trimmed.try_cast("double"), F.when(~trimmed.rlike("[\\n\\r\\x85\\u2028\\u2029]$"), trimmed)]

    @settings(max_examples=5, deadline=None, database=None)
    @given(st.lists(st.none() | st.text(alphabet=_TEXT_CHARS, max_size=8), min_size=1, max_size=400))
    def check(texts):
        t = F.col("t")
        old = [~t.rlike(BLANK), F.regexp_replace(t, "^\ufeff", ""), *decided(F.regexp_replace(t, r"^\s+|\s+$", ""))]
        new = [is_event(t), without_bom(t), *decided(trim_space(t))]
        rows = spark.createDataFrame([(x,) for x in texts], "t string").select(
            "t", F.array(*[c.cast("string") for c in old]), F.array(*[c.cast("string") for c in new])).collect()
        assert [(r[0], r[1]) for r in rows] == [(r[0], r[2]) for r in rows]

    check()
