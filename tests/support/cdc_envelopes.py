"""Source-database changes of the contract table rendered as the landed formats: native
``lakerank`` events and the CDC envelopes ``debezium-json`` (with and without the
``schema``/``payload`` wrapper), ``canal-json`` and ``maxwell-json``, shaped as Flink's format
pages and the tools' own documentation show them (docs/cdc_formats.md).

A change is one row of a statement (``Statement``: the rows one SQL statement changed, at one
source time). ``native_lines`` gives the native events a change becomes, which is also the
clean changelog the ingest must stage for it (a consistent source has no duplicates and no
stale events)."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import random
from decimal import Decimal
from typing import List, Optional, Tuple
from zoneinfo import ZoneInfo

FORMATS = ("lakerank", "debezium-json", "debezium-json-wrapped", "debezium-json-postgres", "debezium-json-zoned",
           "canal-json", "maxwell-json")
_EPOCH = _dt.datetime(1970, 1, 1)


@dataclasses.dataclass(frozen=True)
class Row:
    contract_id: int
    project_id: int
    sign_time: _dt.datetime
    amount: Optional[Decimal]

    def shifted(self, k: int) -> "Row":
        """The row of format number ``k``: its own contracts and projects."""
        return Row(self.contract_id + 100_000 * k, self.project_id + 100 * k, self.sign_time, self.amount)


@dataclasses.dataclass(frozen=True)
class Statement:
    kind: str  # snapshot, insert, update, delete
    ts_ms: int  # the source's change time (whole seconds: Maxwell's ts is in seconds)
    changes: Tuple[Tuple[Optional[Row], Optional[Row]], ...]  # (before, after) per row

    def shifted(self, k: int) -> "Statement":
        return Statement(self.kind, self.ts_ms, tuple(
            (b and b.shifted(k), a and a.shifted(k)) for b, a in self.changes))


def wall_clock(ts_ms: int, zone: str) -> str:
    """The business wall clock of an instant, as the ingest renders op_ts."""
    t = _dt.datetime.fromtimestamp(ts_ms / 1000, ZoneInfo(zone)).replace(tzinfo=None)
    return t.strftime("%Y-%m-%d %H:%M:%S.") + f"{t.microsecond // 1000:03d}"


def _st(t: _dt.datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S")


def _epoch_ms(t: _dt.datetime) -> int:
    """io.debezium.time.Timestamp: a DATETIME's wall clock as milliseconds past the epoch."""
    return (t - _EPOCH) // _dt.timedelta(milliseconds=1)


# --------------------------------------------------------------------------------------------
# Native events (the expected changelog)
# --------------------------------------------------------------------------------------------

def native_events(st: Statement) -> List[Tuple[str, Row]]:
    """(rowkind, image) of each native event of a statement, in order."""
    out = []
    for before, after in st.changes:
        if st.kind in ("snapshot", "insert"):
            out.append(("+I", after))
        elif st.kind == "delete":
            out.append(("-D", before))
        elif before.contract_id != after.contract_id:
            out += [("-D", before), ("+I", after)]
        else:
            out += [("-U", before), ("+U", after)]
    return out


def native_lines(st: Statement, zone: str) -> List[str]:
    op_ts = wall_clock(st.ts_ms, zone)
    return [json.dumps({
        "op": op, "project_id": r.project_id, "contract_id": r.contract_id, "sign_time": _st(r.sign_time),
        "amount": None if r.amount is None else str(r.amount), "op_ts": op_ts,
    }) for op, r in native_events(st)]


# --------------------------------------------------------------------------------------------
# Envelopes
# --------------------------------------------------------------------------------------------

def _number(d: Optional[Decimal]):
    return None if d is None else float(d)


def _debezium_row(r: Optional[Row], wrapped: bool):
    if r is None:
        return None
    # Plain: DATETIME as io.debezium.time.Timestamp (epoch ms), DECIMAL as a number
    # (decimal.handling.mode=double); wrapped: the string forms (string modes).
    return {
        "project_id": r.project_id, "contract_id": r.contract_id,
        "sign_time": _st(r.sign_time) if wrapped else _epoch_ms(r.sign_time),
        "amount": (None if r.amount is None else str(r.amount)) if wrapped else _number(r.amount),
    }


def debezium_message(op: str, before: Optional[dict], after: Optional[dict], ts_ms: int, table: str = "contracts",
                     wrapped: bool = False, pos: int = 0, row: int = 0) -> str:
    """One Debezium change event of a MySQL table (``source.ts_ms`` the change time, the
    envelope's ``ts_ms`` 250 ms later), plain or in the ``schema``/``payload`` wrapper."""
    envelope = {
        "before": before, "after": after,
        "source": {"version": "2.7.0.Final", "connector": "mysql", "name": "dbserver1",
                   "ts_ms": ts_ms, "snapshot": "true" if op == "r" else "false",
                   "db": "lakerank", "table": table, "server_id": 223344,
                   "file": "mysql-bin.000003", "pos": pos, "row": row},
        "op": op, "ts_ms": ts_ms + 250, "transaction": None,
    }
    if not wrapped:
        return json.dumps(envelope)
    schema = {"type": "struct", "name": f"dbserver1.lakerank.{table}.Envelope", "optional": False,
              "fields": [{"type": "struct", "optional": True, "field": "before"},
                         {"type": "struct", "optional": True, "field": "after"},
                         {"type": "struct", "optional": False, "field": "source"},
                         {"type": "string", "optional": False, "field": "op"},
                         {"type": "int64", "optional": True, "field": "ts_ms"}]}
    return json.dumps({"schema": schema, "payload": envelope})


def debezium_lines(st: Statement, wrapped: bool = False, pos: int = 0) -> List[str]:
    """One message a row; a key change is a delete and a create (as Debezium emits it)."""
    out = []
    for i, (before, after) in enumerate(st.changes):
        if st.kind == "update" and before.contract_id != after.contract_id:
            parts = [("d", before, None), ("c", None, after)]
        else:
            op = {"snapshot": "r", "insert": "c", "update": "u", "delete": "d"}[st.kind]
            parts = [(op, before, after)]
        for op, b, a in parts:
            out.append(debezium_message(op, _debezium_row(b, wrapped), _debezium_row(a, wrapped), st.ts_ms,
                                        wrapped=wrapped, pos=pos, row=i))
    return out


# --------------------------------------------------------------------------------------------
# Debezium's Postgres connector at the table's default REPLICA IDENTITY: an update carries no
# before image ("before": null), a delete's before only the primary key, a key change is a
# delete and a create; each delete is followed by a tombstone (a null value, landed as `null`).
# `timestamp` columns are io.debezium.time.MicroTimestamp (time.precision.mode adaptive, the
# default), `timestamptz` io.debezium.time.ZonedTimestamp (an ISO-8601 string in UTC),
# `numeric` a string (decimal.handling.mode=string).
# --------------------------------------------------------------------------------------------

def _pg_value_schema(table: str, zoned: bool) -> dict:
    sign = ({"type": "string", "optional": False, "name": "io.debezium.time.ZonedTimestamp", "version": 1,
             "field": "sign_time"} if zoned else
            {"type": "int64", "optional": False, "name": "io.debezium.time.MicroTimestamp", "version": 1,
             "field": "sign_time"})
    return {"type": "struct", "optional": True, "name": f"pg1.public.{table}.Value", "fields": [
        {"type": "int64", "optional": False, "field": "contract_id"},
        {"type": "int64", "optional": False, "field": "project_id"}, sign,
        {"type": "string", "optional": True, "field": "amount"}]}


def _pg_row(r: Optional[Row], zone: str, zoned: bool):
    if r is None:
        return None
    if zoned:  # the wall clock of the business zone, as the instant it is, in UTC
        utc = r.sign_time.replace(tzinfo=ZoneInfo(zone)).astimezone(_dt.timezone.utc)
        sign = utc.strftime("%Y-%m-%dT%H:%M:%SZ")
    else:
        sign = (r.sign_time - _EPOCH) // _dt.timedelta(microseconds=1)
    return {"contract_id": r.contract_id, "project_id": r.project_id, "sign_time": sign,
            "amount": None if r.amount is None else str(r.amount)}


def postgres_message(op: str, before, after, ts_ms: int, zone: str, wrapped: bool, lsn: int,
                     table: str = "contracts") -> str:
    """One change event of Debezium's Postgres connector (``before``/``after`` rows, or a dict
    for a key-only before image); wrapped (schema/payload, MicroTimestamp) or plain
    (ZonedTimestamp strings)."""
    def image(r):
        return r if isinstance(r, dict) or r is None else _pg_row(r, zone, zoned=not wrapped)

    envelope = {
        "before": image(before), "after": image(after),
        "source": {"version": "2.7.0.Final", "connector": "postgresql", "name": "pg1", "ts_ms": ts_ms,
                   "snapshot": "true" if op == "r" else "false", "db": "lakerank", "sequence": f'["{lsn - 8}","{lsn}"]',
                   "schema": "public", "table": table, "txId": 780 + lsn, "lsn": lsn, "xmin": None},
        "op": op, "ts_ms": ts_ms + 180, "transaction": None,
    }
    if not wrapped:
        return json.dumps(envelope)
    value = _pg_value_schema(table, zoned=False)
    schema = {"type": "struct", "name": f"pg1.public.{table}.Envelope", "optional": False, "version": 1, "fields": [
        dict(value, field="before"), dict(value, field="after"),
        {"type": "struct", "optional": False, "name": "io.debezium.connector.postgresql.Source", "field": "source"},
        {"type": "string", "optional": False, "field": "op"},
        {"type": "int64", "optional": True, "field": "ts_ms"}]}
    return json.dumps({"schema": schema, "payload": envelope})


def postgres_lines(st: Statement, zone: str, wrapped: bool, lsn: int = 0) -> List[str]:
    """One message a row at the default replica identity; a tombstone after each delete."""
    out = []
    for before, after in st.changes:
        if st.kind == "update" and before.contract_id != after.contract_id:
            parts = [("d", {"contract_id": before.contract_id}, None), ("c", None, after)]
        elif st.kind == "delete":
            parts = [("d", {"contract_id": before.contract_id}, None)]
        else:
            parts = [({"snapshot": "r", "insert": "c", "update": "u"}[st.kind], None, after)]
        for op, b, a in parts:
            out.append(postgres_message(op, b, a, st.ts_ms, zone, wrapped, lsn))
            if op == "d":
                out.append("null")
    return out


def native_lines_without_before(st: Statement, zone: str) -> List[str]:
    """The native events the Postgres messages stand for: an update is its ``+U`` alone, a
    delete a ``-D`` of the key (the ingest's state has the rest)."""
    op_ts = wall_clock(st.ts_ms, zone)
    out = []
    for kind, r in native_events(st):
        if kind == "-U":
            continue
        row = {"op": kind, "contract_id": r.contract_id, "op_ts": op_ts}
        if kind != "-D":
            row.update(project_id=r.project_id, sign_time=_st(r.sign_time),
                       amount=None if r.amount is None else str(r.amount))
        out.append(json.dumps(row))
    return out


# --------------------------------------------------------------------------------------------
# What is not data, and other tables' messages (multi-table topics), as each tool writes them
# --------------------------------------------------------------------------------------------

def not_data(fmt: str, ts_ms: int) -> List[str]:
    """Lines a stream of ``fmt`` carries beside its table's changes that are not data: Debezium
    heartbeats (plain and wrapped), transaction markers and a MySQL schema-change event; Canal
    DDL; Maxwell DDL and bootstrap markers."""
    if fmt.startswith("debezium-json"):
        mysql = fmt not in ("debezium-json-postgres", "debezium-json-zoned")  # a schema-change topic: MySQL's
        heartbeat = {"schema": {"type": "struct", "fields": [{"type": "int64", "optional": False, "field": "ts_ms"}],
                                "optional": False, "name": "io.debezium.connector.common.Heartbeat"},
                     "payload": {"ts_ms": ts_ms}}
        return [json.dumps({"ts_ms": ts_ms}), json.dumps(heartbeat),
                json.dumps({"status": "BEGIN", "id": "571:53195829", "ts_ms": ts_ms, "event_count": None,
                            "data_collections": None}),
                json.dumps({"status": "END", "id": "571:53195829", "ts_ms": ts_ms, "event_count": 2,
                            "data_collections": [{"data_collection": "public.contracts", "event_count": 2}]}),
                json.dumps({"source": {"version": "2.7.0.Final", "connector": "mysql", "name": "dbserver1",
                                       "ts_ms": ts_ms, "db": "lakerank", "table": "contracts"},
                            "ts_ms": ts_ms, "databaseName": "lakerank", "schemaName": None,
                            "ddl": "ALTER TABLE contracts ADD COLUMN note VARCHAR(64)",
                            "tableChanges": [{"type": "ALTER", "id": "\"lakerank\".\"contracts\"", "table": {}}]}),
                ][:5 if mysql else 4]
    if fmt == "canal-json":
        return [json.dumps({"data": None, "database": "lakerank", "es": ts_ms, "id": 7, "isDdl": True,
                            "mysqlType": None, "old": None, "pkNames": None,
                            "sql": "CREATE TABLE `notes` (`id` bigint PRIMARY KEY, `body` text)", "sqlType": None,
                            "table": "notes", "ts": ts_ms + 120, "type": "CREATE"})]
    return [json.dumps({"database": "lakerank", "table": "notes", "type": "table-create", "ts": ts_ms // 1000,
                        "def": {"database": "lakerank", "table": "notes", "primary-key": ["id"]},
                        "sql": "create table notes (id bigint primary key, body text)",
                        "position": "master.000006:802100"}),
            json.dumps({"database": "lakerank2", "type": "database-create", "ts": ts_ms // 1000,
                        "sql": "create database lakerank2", "position": "master.000006:802300"}),
            json.dumps({"database": "lakerank", "table": "contracts", "type": "bootstrap-start", "ts": ts_ms // 1000,
                        "data": {}}),
            json.dumps({"database": "lakerank", "table": "contracts", "type": "bootstrap-complete",
                        "ts": ts_ms // 1000, "data": {}})]


def other_table(fmt: str, ts_ms: int, n: int) -> str:
    """A change of another table of the same database (``projects``) or of the same table
    name in another database, as the multi-table topic of ``fmt`` carries it."""
    row = {"project_id": 7, "contract_id": 5000 + n, "sign_time": "2024-03-04 10:00:00", "amount": "1.00"}
    table, database = ("projects", "lakerank") if n % 2 else ("contracts", "lakerank_archive")
    if fmt in ("debezium-json-postgres", "debezium-json-zoned"):
        wrapped = fmt.endswith("postgres")
        sign = 1709546400000000 if wrapped else "2024-03-04T02:00:00Z"
        line = json.loads(postgres_message("c", None, dict(row, sign_time=sign), ts_ms, "UTC", wrapped, n, table))
        (line["payload"] if wrapped else line)["source"]["db"] = database
        return json.dumps(line)
    if fmt.startswith("debezium-json"):
        line = json.loads(debezium_message("c", None, dict(row, sign_time=1709546400000), ts_ms, table, pos=n))
        line["source"]["db"] = database
        return json.dumps(line)
    if fmt == "canal-json":
        obj = json.loads(canal_message("INSERT", [{k: str(v) for k, v in row.items()}], None, ts_ms, table,
                                       {"contract_id": "bigint", "project_id": "bigint", "sign_time": "datetime",
                                        "amount": "decimal(18,2)"}, n))
        obj["database"] = database
        return json.dumps(obj)
    obj = json.loads(maxwell_message("insert", row, None, ts_ms, table, n))
    obj["database"] = database
    return json.dumps(obj)


def _strings(r: Row) -> dict:
    return {"contract_id": str(r.contract_id), "project_id": str(r.project_id), "sign_time": _st(r.sign_time),
            "amount": None if r.amount is None else str(r.amount)}


def changed(before: dict, after: dict) -> dict:
    """Canal's and Maxwell's ``old``: the before values of the changed columns only."""
    return {k: v for k, v in before.items() if after[k] != v}


_SQL_TYPES = {"bigint": -5, "datetime": 93, "decimal(18,2)": 3, "varchar(64)": 12}


def canal_message(kind: str, data: List[dict], old: Optional[List[dict]], es: int, table: str,
                  mysql_types: dict, msg_id: int = 1) -> str:
    """One Canal flat message (``kind`` INSERT, UPDATE or DELETE; ``es`` the binlog time,
    ``ts`` Canal's 120 ms later); ``data``'s first column is the primary key."""
    return json.dumps({
        "data": data, "database": "lakerank", "es": es, "id": msg_id, "isDdl": False,
        "mysqlType": mysql_types, "old": old, "pkNames": [next(iter(mysql_types))], "sql": "",
        "sqlType": {k: _SQL_TYPES[t] for k, t in mysql_types.items()},
        "table": table, "ts": es + 120, "type": kind,
    })


def canal_lines(st: Statement, msg_id: int = 1) -> List[str]:
    """One message for the statement's rows (values as strings)."""
    data = [_strings(a if a is not None else b) for b, a in st.changes]
    old = None
    if st.kind == "update":
        old = [changed(_strings(b), _strings(a)) for b, a in st.changes]
    kind = {"snapshot": "INSERT", "insert": "INSERT", "update": "UPDATE", "delete": "DELETE"}[st.kind]
    types = {"contract_id": "bigint", "project_id": "bigint", "sign_time": "datetime", "amount": "decimal(18,2)"}
    return [canal_message(kind, data, old, st.ts_ms, "contracts", types, msg_id)]


def _typed(r: Row) -> dict:
    return {"contract_id": r.contract_id, "project_id": r.project_id, "sign_time": _st(r.sign_time),
            "amount": _number(r.amount)}


def maxwell_message(kind: str, data: dict, old: Optional[dict], ts_ms: int, table: str, xid: int = 1,
                    i: int = 0, last: bool = True) -> str:
    """One Maxwell message (``ts`` in seconds) of row ``i`` of transaction ``xid``; ``data``'s
    first column is the primary key."""
    key = next(iter(data))
    msg = {"database": "lakerank", "table": table, "type": kind, "ts": ts_ms // 1000,
           "xid": xid, "position": f"master.000006:{800911 + 1000 * xid + i}", "server_id": 23042,
           "thread_id": 108, "primary_key": [data[key]], "primary_key_columns": [key], "data": data}
    if old is not None:
        msg["old"] = old
    if last:
        msg["commit"] = True  # the transaction's last row; the others carry their xoffset
    else:
        msg["xoffset"] = i
    return json.dumps(msg)


def maxwell_lines(st: Statement, xid: int = 1) -> List[str]:
    """One message a row."""
    kind = {"snapshot": "bootstrap-insert", "insert": "insert", "update": "update", "delete": "delete"}[st.kind]
    return [maxwell_message(kind, _typed(after if after is not None else before),
                            changed(_typed(before), _typed(after)) if st.kind == "update" else None,
                            st.ts_ms, "contracts", xid, i, i == len(st.changes) - 1)
            for i, (before, after) in enumerate(st.changes)]


def render(fmt: str, st: Statement, zone: str, n: int = 1) -> List[str]:
    """The lines of one statement in ``fmt`` (one of FORMATS); ``n`` numbers the messages."""
    if fmt == "lakerank":
        return native_lines(st, zone)
    if fmt in ("debezium-json-postgres", "debezium-json-zoned"):
        return postgres_lines(st, zone, wrapped=fmt.endswith("postgres"), lsn=1000 + n)
    if fmt.startswith("debezium-json"):
        return debezium_lines(st, wrapped=fmt.endswith("wrapped"), pos=1000 + n)
    if fmt == "canal-json":
        return canal_lines(st, n)
    return maxwell_lines(st, n)


# --------------------------------------------------------------------------------------------
# A source table's history
# --------------------------------------------------------------------------------------------

def generate_statements(seed: int, n: int, start: _dt.datetime, n_projects: int = 3) -> List[Statement]:
    """A consistent history of the contract table: a snapshot of 3 rows, then ``n`` random
    statements (inserts of 1-3 rows, updates of 1-2 rows changing the sign time, the
    project, the amount or the key, deletes, re-inserts of deleted keys); source times in
    whole seconds, some equal."""
    rng = random.Random(seed)
    live: dict = {}
    dead: list = []
    next_id = [1]
    ts = [_epoch_ms(start) - 8 * 3_600_000]  # start is a Shanghai wall clock

    def new_row(cid=None) -> Row:
        if cid is None:
            cid, next_id[0] = next_id[0], next_id[0] + 1
        day = start.replace(hour=0, minute=0, second=0) + _dt.timedelta(days=rng.randrange(3))
        sign = day + _dt.timedelta(seconds=rng.choice((0, 0, rng.randrange(86400))))
        amount = None if rng.random() < 0.2 else Decimal(rng.randrange(0, 1_000_000)) / 100
        return Row(cid, rng.randint(1, n_projects), sign, amount)

    def tick() -> int:
        ts[0] += rng.choice((0, 1000, 1000, 2000))
        return ts[0]

    out = []
    rows = [new_row() for _ in range(3)]
    live.update({r.contract_id: r for r in rows})
    out.append(Statement("snapshot", tick(), tuple((None, r) for r in rows)))
    while len(out) < n + 1:
        kind = rng.choice(("insert", "insert", "update", "update", "update", "delete", "reinsert"))
        if kind == "insert" or (kind == "reinsert" and not dead) or not live:
            rows = [new_row() for _ in range(rng.randint(1, 3))]
            live.update({r.contract_id: r for r in rows})
            out.append(Statement("insert", tick(), tuple((None, r) for r in rows)))
        elif kind == "reinsert":
            r = new_row(dead.pop(rng.randrange(len(dead))))
            live[r.contract_id] = r
            out.append(Statement("insert", tick(), ((None, r),)))
        elif kind == "delete":
            cid = rng.choice(sorted(live))
            dead.append(cid)
            out.append(Statement("delete", tick(), ((live.pop(cid), None),)))
        else:
            changes = []
            for cid in rng.sample(sorted(live), min(len(live), rng.randint(1, 2))):
                old = live.pop(cid)
                how = rng.choice(("sign_time", "project", "amount", "both", "key"))
                if how == "key":
                    new = dataclasses.replace(old, contract_id=next_id[0])
                    next_id[0] += 1
                    dead.append(cid)
                elif how == "sign_time":
                    later = old.sign_time + _dt.timedelta(seconds=rng.randint(1, 90000))
                    new = dataclasses.replace(old, sign_time=later)
                elif how == "project":
                    new = dataclasses.replace(old, project_id=old.project_id % n_projects + 1)
                elif how == "amount":
                    new = dataclasses.replace(old, amount=Decimal(rng.randrange(1, 1_000_000)) / 100)
                else:
                    new = new_row(cid)
                if new == old:  # an update changes something
                    new = dataclasses.replace(new, project_id=old.project_id % n_projects + 1)
                live[new.contract_id] = new
                changes.append((old, new))
            out.append(Statement("update", tick(), tuple(changes)))
    return out
