"""The examples (models/examples/) against an independent oracle computed from the raw landed
events in plain Python/pandas + DuckDB:

* the generic landing ingest (python_udfs/ingest/landing_ingest.py) of three streams: typed rows,
  quarantine with reason and raw line, counts that reconcile;
* seed 003's wide table ``dim_project_wide`` (partial-update, one sequence group per stream, fed
  by ``int_project_wide_changes``' multi-source commits), ``int_payments``;
* seed 002's dimension ``dim_project`` (deduplicate, -D), its event-time versions
  ``dim_project_history`` and the enrichment ``fct_contract_enriched`` (temporal and
  lookup join);
* the audit logs of the pk_tables replay to the tables.

Three builds; each lands one file per stream with late, out-of-order, duplicate, corrected,
deleted and bad events (and the contracts of the seed-000 generator).

Then, on the same home with every model built, issue G.3's dbt-native checks: the docs
catalog, source freshness of the ingest logs, `dbt ls` without a Spark session.

The examples are off unless the var `lakerank_examples` turns them on: every dbt call here
passes it (``Lakerank(..., examples=True)``), and the last test checks that a plain `dbt ls`
leaves them out."""

from __future__ import annotations

import datetime as dt
import json
import os
import random
import shutil
from decimal import Decimal
from typing import Any, Optional

import pandas as pd
import pytest

import cdc
from crossings import by_node, counting_crossings
from lakerank_project import ROOT, Lakerank

SCHEMA = "lakerank"
OPEN_END = "9999-12-31 23:59:59"
MS = "%Y-%m-%d %H:%M:%S.%f"
N_BUILDS = 3
DIM_PROJECTS = [1, 2, 3, 4, 6]  # contracts use 1..5: project 5 has no dimension row
WIDE_PROJECTS = [1, 2, 3, 4, 5, 6, 7]
CITIES = ["Shanghai", "Hangzhou", "Suzhou"]
DESIGNERS = ["wang", "li", "zhang", "chen"]
STATUSES = ["signed", "designing", "building", "done"]
DESIGN_STATUSES = ["draft", "review", "approved"]


# ------------------------------------------------------------------------------------------
# Event generators: per build, a list of (line, expected quarantine reason or None)
# ------------------------------------------------------------------------------------------

class _Num:
    """A JSON number literal written verbatim (12.50 stays 12.50)."""

    def __init__(self, text: str):
        self.text = text


def dumps(obj: dict) -> str:
    return "{" + ", ".join(
        json.dumps(k) + ": " + (v.text if isinstance(v, _Num) else json.dumps(v)) for k, v in obj.items()
    ) + "}"


def fmt_s(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S")


def fmt_ms(t: dt.datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S") + ".%03d" % (t.microsecond // 1000)


def _spread(rng: random.Random, events: list, forced: dict, nominal: Optional[list] = None) -> list[list]:
    """Assign events to builds: forced index -> build; else the event's nominal build (its
    place in time), or a random one for 30% of them (late and early arrivals); shuffle."""
    builds: list[list] = [[] for _ in range(N_BUILDS)]
    for i, ev in enumerate(events):
        b = nominal[i] if nominal is not None and rng.random() >= 0.3 else rng.randrange(N_BUILDS)
        builds[forced.get(i, b)].append(ev)
    for b in builds:
        rng.shuffle(b)
    return builds


def _resend(rng: random.Random, builds: list[list], n: int) -> None:
    """Re-send n valid lines verbatim in the same or a later build."""
    for _ in range(n):
        src = rng.randrange(N_BUILDS)
        if not builds[src]:
            continue
        line = rng.choice(builds[src])
        dst = rng.randrange(src, N_BUILDS)
        builds[dst].insert(rng.randrange(len(builds[dst]) + 1), line)


def gen_projects(rng: random.Random) -> list[list[tuple[str, Optional[str]]]]:
    """Project dimension CDC: per project a history of c/u/d with increasing update_time,
    sometimes several changes in the same second (ordered by op_ts), unchanged updates,
    deletes and re-creations; spread over the builds out of order, with re-sends."""
    events: list[str] = []
    nominal: list[int] = []
    forced: dict[int, int] = {}
    for p in DIM_PROJECTS:
        t = dt.datetime(2024, 2, 27, 8) + dt.timedelta(hours=rng.randint(0, 36), seconds=rng.randint(0, 59))
        op_ts = t + dt.timedelta(milliseconds=rng.randint(0, 500))
        live, values = False, None
        n = 4 if p == 3 else rng.randint(5, 8)
        for k in range(n):
            if p == 3:
                op = "cuud"[k]  # project 3 ends deleted; its 2nd update lands after the delete
            elif not live:
                op = "c"
            else:
                op = "d" if rng.random() < 0.12 else "u"
            if op == "d":
                obj = {"project_id": p, "op": "d", "update_time": fmt_s(t), "op_ts": fmt_ms(op_ts)}
                if rng.random() < 0.5:  # sometimes with the before image
                    obj.update(zip(("city", "designer", "status"), values))
                live = False
            else:
                if op == "u" and rng.random() < 0.25:
                    new = values  # an update that changes none of the tracked columns
                else:
                    new = (rng.choice(CITIES), rng.choice(DESIGNERS), rng.choice(STATUSES))
                obj = {"project_id": p, "op": op, "city": new[0], "designer": new[1], "status": new[2],
                       "update_time": fmt_s(t), "op_ts": fmt_ms(op_ts)}
                values, live = new, True
            if p == 3:
                forced[len(events)] = (0, 0, 2, 1)[k]
            events.append(dumps(obj))
            nominal.append(k * N_BUILDS // n)
            if rng.random() < 0.15:  # next change in the same second
                op_ts += dt.timedelta(milliseconds=rng.randint(1, 200))
            else:
                t += dt.timedelta(hours=rng.randint(4, 26), seconds=rng.randint(0, 59))
                op_ts = t + dt.timedelta(milliseconds=rng.randint(0, 500))
    builds = _spread(rng, events, forced, nominal)
    _resend(rng, builds, 4)
    out = [[(line, None) for line in b] for b in builds]
    out[0] += [('{"project_id": 1, "op": "x", "update_time": "2024-03-01 10:00:00", '
                '"op_ts": "2024-03-01 10:00:00.000"}', "bad op 'x'"),
               ("", None)]  # a blank line: not an event
    out[1] += [('{"project_id": "7", "op": "u", "update_time": "2024-03-01 10:00:00", '
                '"op_ts": "2024-03-01 10:00:00.000"}', "bad project_id '7'"),
               ('{"project_id": 2, "op": "u", "op_ts": "2024-03-01 10:00:00.000"}', "missing update_time")]
    out[2] += [('{"project_id": 2, "op": "u"} trailing', "invalid json")]
    for b in out:
        rng.shuffle(b)
    return out


def gen_payments(rng: random.Random) -> list[list[tuple[str, Optional[str]]]]:
    """Payments: versions of a payment differ in amount only (corrections with a newer
    op_ts); versions land out of order (a late older version is stale), re-sends, and two
    versions with the same op_ts in one file (the later line wins)."""
    events: list[str] = []
    nominal: list[int] = []
    forced: dict[int, int] = {}
    for pay_id in range(101, 119):
        project = rng.choice(WIDE_PROJECTS)
        pay_time = dt.datetime(2024, 3, 1) + dt.timedelta(minutes=rng.randint(0, 4 * 24 * 60))
        op_ts = pay_time + dt.timedelta(milliseconds=rng.randint(0, 900))
        n = 1 + (rng.random() < 0.6) + (rng.random() < 0.2)
        build = rng.randrange(N_BUILDS - 1)
        for _ in range(n):
            amount = Decimal(rng.randint(100, 500000)) / 100
            text = _Num(f"{amount:.2f}") if rng.random() < 0.5 else str(amount)
            obj = {"payment_id": pay_id, "project_id": project, "amount": text,
                   "pay_time": fmt_s(pay_time), "op_ts": fmt_ms(op_ts)}
            events.append(dumps(obj))
            nominal.append(build)
            build = min(N_BUILDS - 1, build + 1)
            op_ts += dt.timedelta(seconds=rng.randint(1, 3600))
    builds = _spread(rng, events, forced, nominal)
    # same op_ts, same file: the later line wins
    tie = dt.datetime(2024, 3, 2, 9, 30, 0)
    for amount in ("11.00", "22.00"):
        builds[1].append(dumps({"payment_id": 150, "project_id": 2, "amount": _Num(amount),
                                "pay_time": fmt_s(tie), "op_ts": fmt_ms(tie)}))
    _resend(rng, builds, 4)
    out = [[(line, None) for line in b] for b in builds]
    out[0] += [("not json", "invalid json"),
               ('{"payment_id": 1.5, "project_id": 1, "amount": 1, "pay_time": "2024-03-01 10:00:00", '
                '"op_ts": "2024-03-01 10:00:00.000"}', "bad payment_id '1.5'")]
    out[1] += [('{"payment_id": 160, "project_id": 1, "amount": "abc", "pay_time": "2024-03-01 10:00:00", '
                '"op_ts": "2024-03-01 10:00:00.000"}', "bad amount 'abc'")]
    out[2] += [('{"payment_id": 161, "project_id": 1, "amount": 3, "op_ts": "2024-03-01 10:00:00.000"}',
                "missing pay_time"),
               ('{"payment_id": 162, "project_id": 1, "amount": 3, "pay_time": "2024/03/01 10:00:00", '
                '"op_ts": "2024-03-01 10:00:00.000"}', "bad pay_time '2024/03/01 10:00:00'")]
    # the second line of the tie stays after the first (kept in order after the shuffle)
    for b in out:
        tie_lines = [x for x in b if '"payment_id": 150,' in x[0]]
        rest = [x for x in b if '"payment_id": 150,' not in x[0]]
        rng.shuffle(rest)
        b[:] = rest + tie_lines
    return out


def gen_design_changes(rng: random.Random) -> list[list[tuple[str, Optional[str]]]]:
    """Design changes (immutable events): out of order across builds, re-sends, and an
    older change of project 1 landing two builds after a newer one."""
    events: list[str] = []
    forced: dict[int, int] = {}
    for change_id in range(501, 521):
        project = 1 if change_id in (501, 502) else rng.choice(WIDE_PROJECTS)
        change_time = dt.datetime(2024, 3, 1) + dt.timedelta(minutes=rng.randint(0, 5 * 24 * 60))
        if change_id == 502:
            change_time = dt.datetime(2024, 3, 6, 12)  # newer than 501, lands first
        elif change_id == 501:
            change_time = dt.datetime(2024, 3, 1, 12)
        op_ts = change_time + dt.timedelta(milliseconds=rng.randint(0, 900))
        obj = {"change_id": change_id, "project_id": project, "designer": rng.choice(DESIGNERS),
               "design_status": rng.choice(DESIGN_STATUSES), "change_time": fmt_s(change_time),
               "op_ts": fmt_ms(op_ts)}
        if change_id in (501, 502):
            forced[len(events)] = 2 if change_id == 501 else 0
        events.append(dumps(obj))
    builds = _spread(rng, events, forced)
    _resend(rng, builds, 3)
    out = [[(line, None) for line in b] for b in builds]
    out[0] += [('{"change_id": 600, "project_id": 1, "design_status": "draft", '
                '"change_time": "2024-03-01 10:00:00", "op_ts": "2024-03-01 10:00:00.000"}', "missing designer")]
    out[1] += [("[1, 2]", "not a json object")]
    out[2] += [('{"change_id": 601, "project_id": 1, "designer": "wang", "design_status": "draft", '
                '"change_time": "yesterday", "op_ts": "2024-03-01 10:00:00.000"}', "bad change_time 'yesterday'")]
    for b in out:
        rng.shuffle(b)
    return out


# ------------------------------------------------------------------------------------------
# Oracle (plain Python over the landed lines; DuckDB for the as-of join)
# ------------------------------------------------------------------------------------------

def ts(s: str) -> dt.datetime:
    return dt.datetime.strptime(s, MS) if "." in s else dt.datetime.strptime(s, "%Y-%m-%d %H:%M:%S")


def valid_events(landed: list[tuple[str, list[tuple[str, Optional[str]]]]]) -> list[dict]:
    """Valid events of one stream with their file name and line number."""
    out = []
    for file_name, lines in landed:
        for i, (line, reason) in enumerate(lines, start=1):
            if reason is None and line.strip():
                ev = json.loads(line, parse_float=Decimal)
                ev.update(_file=file_name, _line=i)
                out.append(ev)
    return out


def contract_changelog(landed_contracts: list[tuple[str, list[str]]]) -> list[tuple]:
    """The retract changelog of the contract CDC rules (see tests/support/cdc.py), one micro-batch
    per landed file: (rowkind, project_id, sign_time, amount, op_ts)."""
    state: dict[int, tuple] = {}
    rows = []
    for file_name, lines in landed_contracts:
        evs = [e for e in (cdc.parse_line(ln, file_name, i) for i, ln in enumerate(lines, 1))
               if isinstance(e, cdc.Event) and e.op != "-U"]
        for ev in sorted(evs, key=lambda e: e.key):
            key, live, img = state.get(ev.contract_id, (None, False, None))
            if key is not None and ev.key <= key:
                continue
            if ev.op in ("+I", "+U"):
                new = ev.image
                if live and img != new:
                    rows += [("-U", *img, ev.op_ts), ("+U", *new, ev.op_ts)]
                elif not live:
                    rows.append(("+I", *new, ev.op_ts))
                state[ev.contract_id] = (ev.key, True, new)
            else:
                if live:
                    rows.append(("-D", *img, ev.op_ts))
                state[ev.contract_id] = (ev.key, False, None)
    return rows


def expected_wide(contract_rows, payments: dict, design: list[dict]) -> dict[int, dict]:
    wide: dict[int, dict] = {}

    def row(p):
        return wide.setdefault(p, {c: None for c in WIDE_COLUMNS})

    for kind, project, sign_time, amount, op_ts in contract_rows:
        r = row(project)
        sign = 1 if kind in ("+I", "+U") else -1
        r["contract_count"] = (r["contract_count"] or 0) + sign
        if amount is not None:
            r["contract_amount"] = (r["contract_amount"] or Decimal("0")) + sign * amount
        if sign == 1:
            r["last_sign_time"] = max(filter(None, [r["last_sign_time"], sign_time]))
        r["contracts_changed_at"] = max(filter(None, [r["contracts_changed_at"], op_ts]))
    for p in payments.values():
        r = row(p["project_id"])
        r["payment_count"] = (r["payment_count"] or 0) + 1
        r["paid_amount"] = (r["paid_amount"] or Decimal("0")) + Decimal(str(p["amount"]))
        r["last_pay_time"] = max(filter(None, [r["last_pay_time"], ts(p["pay_time"])]))
    newest: dict[int, dict] = {}
    for d in design:
        key = (ts(d["change_time"]), ts(d["op_ts"]), d["change_id"])
        if d["project_id"] not in newest or key > newest[d["project_id"]][0]:
            newest[d["project_id"]] = (key, d)
    for project, (key, d) in newest.items():
        r = row(project)
        r.update(designer=d["designer"], design_status=d["design_status"], design_changed_at=key[0],
                 design_op_ts=key[1], design_change_id=d["change_id"])
    return wide


def latest_payments(events: list[dict]) -> dict[int, dict]:
    latest: dict[int, dict] = {}
    for e in events:
        key = (ts(e["op_ts"]), e["_file"], e["_line"])
        if e["payment_id"] not in latest or key > latest[e["payment_id"]]["_key"]:
            latest[e["payment_id"]] = {**e, "_key": key}
    return latest


def project_order_key(e: dict) -> tuple:
    return (ts(e["update_time"]), ts(e["op_ts"]), e["_file"], e["_line"])


def expected_dim(events: list[dict]) -> dict[int, dict]:
    last: dict[int, dict] = {}
    for e in events:
        if e["project_id"] not in last or project_order_key(e) > project_order_key(last[e["project_id"]]):
            last[e["project_id"]] = e
    return {p: e for p, e in last.items() if e["op"] != "d"}


def expected_history(events: list[dict]) -> list[tuple]:
    """(project_id, ver_start, ver_end, city, designer, status): per distinct update_time the
    last change wins; a delete ends a version; equal consecutive states merge."""
    out = []
    for p in sorted({e["project_id"] for e in events}):
        winners: dict[dt.datetime, dict] = {}
        for e in sorted((e for e in events if e["project_id"] == p), key=project_order_key):
            winners[ts(e["update_time"])] = e
        kept: list[tuple] = []
        for t in sorted(winners):
            e = winners[t]
            state = None if e["op"] == "d" else (e.get("city"), e.get("designer"), e.get("status"))
            if not kept or kept[-1][1] != state:
                kept.append((t, state))
        for i, (t, state) in enumerate(kept):
            if state is not None:
                end = fmt_s(kept[i + 1][0]) if i + 1 < len(kept) else OPEN_END
                out.append((p, fmt_s(t), end, *state))
    return sorted(out, key=repr)


def expected_enriched(live: pd.DataFrame, history: list[tuple], dim: dict[int, dict]) -> list[tuple]:
    import duckdb

    versions = pd.DataFrame(history, columns=["project_id", "ver_start", "ver_end", "city", "designer", "status"])
    versions["ver_start"] = pd.to_datetime(versions["ver_start"])
    versions["ver_end"] = versions["ver_end"].where(versions["ver_end"] != OPEN_END, None)
    versions["ver_end"] = pd.to_datetime(versions["ver_end"])
    current = pd.DataFrame(
        [(p, e.get("city"), e.get("designer"), e.get("status")) for p, e in dim.items()],
        columns=["project_id", "latest_city", "latest_designer", "latest_status"])
    con = duckdb.connect()
    con.register("contracts", live[["project_id", "contract_id", "sign_time"]])
    con.register("versions", versions)
    con.register("current_projects", current)
    df = con.execute("""
        select c.project_id, c.contract_id, strftime(c.sign_time, '%Y-%m-%d %H:%M:%S') as sign_time,
               strftime(v.ver_start, '%Y-%m-%d %H:%M:%S') as project_version_start,
               v.city, v.designer, v.status, l.latest_city, l.latest_designer, l.latest_status
        from contracts c
        left join versions v
          on v.project_id = c.project_id and v.ver_start <= c.sign_time
         and (v.ver_end is null or c.sign_time < v.ver_end)
        left join current_projects l on l.project_id = c.project_id
    """).df()
    con.close()
    return sorted((tuple(None if pd.isna(v) else v for v in r) for r in df.itertuples(index=False)), key=repr)


WIDE_COLUMNS = ["contract_count", "contract_amount", "last_sign_time", "contracts_changed_at",
                "payment_count", "paid_amount", "last_pay_time", "designer", "design_status",
                "design_changed_at", "design_op_ts", "design_change_id"]


# ------------------------------------------------------------------------------------------
# Reading lakerank's tables
# ------------------------------------------------------------------------------------------

def read(lr, sql: str) -> pd.DataFrame:
    """A query as pandas: timestamps as 'yyyy-MM-dd HH:mm:ss[.SSS]' strings (millis only when
    not zero), decimals as strings."""
    spark = lr.spark()
    df = spark.sql(sql)
    cols = []
    for f in df.schema.fields:
        name = f"`{f.name}`"
        if f.dataType.typeName() in ("timestamp", "timestamp_ntz"):
            cols.append(f"case when {name} is null then null when date_format({name}, 'SSS') = '000' "
                        f"then date_format({name}, 'yyyy-MM-dd HH:mm:ss') "
                        f"else date_format({name}, 'yyyy-MM-dd HH:mm:ss.SSS') end as {name}")
        elif f.dataType.typeName() == "decimal":
            cols.append(f"cast({name} as string) as {name}")
        else:
            cols.append(name)
    return spark.sql(f"select {', '.join(cols)} from ({sql})").toPandas()


def shown(v: Any) -> Any:
    """The oracle's value as `read` renders it."""
    if v is None:
        return None
    if isinstance(v, dt.datetime):
        return fmt_s(v) if v.microsecond == 0 else fmt_ms(v)
    if isinstance(v, Decimal):
        return str(v.quantize(Decimal("0.01")))
    return v


def norm(v: Any) -> Any:
    """pandas' value as a plain one (nullable integer columns come back as floats)."""
    if v is None or (not isinstance(v, str) and pd.isna(v)):
        return None
    if isinstance(v, float) and v.is_integer():
        return int(v)
    if hasattr(v, "item"):
        return v.item()
    return v


def rows(df: pd.DataFrame, cols: list[str]) -> list[tuple]:
    return sorted((tuple(norm(v) for v in r) for r in df[cols].itertuples(index=False)), key=repr)


def assert_same(name: str, got: list[tuple], want: list[tuple]) -> None:
    if got != want:
        g, w = set(got), set(want)
        raise AssertionError(f"{name} != oracle: unexpected {sorted(g - w, key=repr)[:6]}, "
                             f"missing {sorted(w - g, key=repr)[:6]} ({len(got)} vs {len(want)} rows)")


def replay_audit_log(lr, table: str, key: str, cols: list[str]) -> list[tuple]:
    """Replays lakerank_lib.audit_log(table) (lookup changelog) in commit order."""
    props = {r[0]: r[1] for r in lr.spark().sql(f"show tblproperties {SCHEMA}.{table}").collect()}
    log = read(lr, f"select * from {SCHEMA}.{table}__audit_log "
                   f"where _commit_id <= {int(props.get('lakerank.snapshot_id', '0'))}")
    state: dict = {}
    for commit in sorted(log["_commit_id"].unique()):
        part = log[log["_commit_id"] == commit]
        assert set(part["rowkind"]) <= {"+I", "-U", "+U", "-D"}
        for r in part.itertuples(index=False):
            r = r._asdict()
            if r["rowkind"] in ("+I", "+U"):
                state[r[key]] = tuple(norm(r[c]) for c in [key] + cols)
            elif r["rowkind"] == "-D":
                state.pop(r[key], None)
    return sorted(state.values(), key=repr)


def _load_model(name: str):
    import importlib.util

    path = os.path.join(os.path.dirname(__file__), "..", "..", "models", "examples", f"{name}.py")
    spec = importlib.util.spec_from_file_location(f"examples_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ------------------------------------------------------------------------------------------
# The test
# ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def examples_home(runner, tmp_path_factory) -> Lakerank:
    """The module's one home: test_examples_match_oracle builds the examples there, and the
    dbt-native checks below run on it afterwards (one home built once, not two)."""
    return Lakerank(runner, tmp_path_factory.mktemp("examples") / "home", examples=True)


def test_examples_match_oracle(examples_home):
    lakerank = examples_home
    rng = random.Random(20240301)
    streams = {
        "payments": gen_payments(rng),
        "design_changes": gen_design_changes(rng),
        "projects": gen_projects(rng),
    }
    contract_batches = cdc.generate_batches(seed=31, n_batches=N_BUILDS, events_per_batch=40, n_projects=5)
    contract_oracle = cdc.Oracle()
    landed: dict[str, list] = {name: [] for name in streams}
    landed_contracts: list[tuple[str, list[str]]] = []
    ingest_tables = {"payments": "stg_payments", "design_changes": "stg_design_changes",
                     "projects": "stg_project_changes"}

    for build in range(N_BUILDS):
        path = lakerank.land(contract_batches[build])
        contract_oracle.consume(os.path.basename(path), contract_batches[build])
        landed_contracts.append((os.path.basename(path), contract_batches[build]))
        for name, builds in streams.items():
            path = lakerank.land([line for line, _ in builds[build]], stream=name)
            landed[name].append((os.path.basename(path), builds[build]))

        with counting_crossings() as crossings:
            lakerank.dbt("build", "--select", "+path:models/examples")
        if build > 0:
            # One commit surface (docs/design.md): a pk_table commit, with the Python merge
            # (dim_project_wide) or the SQL one, crosses from Jinja to Python at most 8 times.
            calls = {node: sum(methods.values()) for node, methods in by_node(crossings).items()}
            pk_tables = ["dim_project", "dim_project_wide", "int_payments"]
            assert all(calls[m] <= 8 for m in pk_tables), {m: by_node(crossings)[m] for m in pk_tables}

        # -- the landing ingest: typed rows, quarantine, counts ------------------------------
        for name, table in ingest_tables.items():
            log = read(lakerank, f"select * from {SCHEMA}.{table}__ingest_log")
            assert (log["events_landed"] == log["applied"] + log["quarantined"]).all(), log
            lines = [(f, i, line, reason) for f, ls in landed[name] for i, (line, reason) in enumerate(ls, 1)]
            events = [x for x in lines if x[2].strip()]
            bad = [x for x in events if x[3] is not None]
            assert int(log["events_landed"].sum()) == len(events), name
            assert int(log["quarantined"].sum()) == len(bad), name
            assert int(log["applied"].sum()) == len(events) - len(bad), name
            assert len(log) == build + 1, f"{name}: one commit per build"
            quarantine = read(lakerank, f"select * from {SCHEMA}.{table}__quarantine")
            got = sorted((os.path.basename(r.file), int(r.line), r.raw, r.reason) for r in quarantine.rename(
                columns={"_source_file": "file", "_source_line": "line", "raw_line": "raw"}).itertuples())
            assert got == sorted((f, i, line, reason) for f, i, line, reason in bad), name
            applied = read(lakerank, f"select _source_file, _source_line from {SCHEMA}.{table}")
            assert sorted((os.path.basename(f), int(i)) for f, i in applied.itertuples(index=False)) == \
                sorted((f, i) for f, i, _, reason in events if reason is None), name

        # -- seed 003: int_payments and the wide table ---------------------------------------
        payments = latest_payments(valid_events(landed["payments"]))
        got = rows(read(lakerank, f"select * from {SCHEMA}.int_payments"),
                   ["payment_id", "project_id", "amount", "pay_time", "op_ts"])
        want = sorted(((p, e["project_id"], shown(Decimal(str(e["amount"]))), e["pay_time"], shown(ts(e["op_ts"])))
                       for p, e in payments.items()), key=repr)
        assert_same("int_payments", got, want)

        contract_rows = contract_changelog(landed_contracts)
        wide = expected_wide(contract_rows, payments, valid_events(landed["design_changes"]))
        got = rows(read(lakerank, f"select * from {SCHEMA}.dim_project_wide"), ["project_id"] + WIDE_COLUMNS)
        want = sorted(((p, *[shown(r[c]) for c in WIDE_COLUMNS]) for p, r in wide.items()), key=repr)
        assert_same("dim_project_wide", got, want)
        assert_same("dim_project_wide audit log replay",
                    replay_audit_log(lakerank, "dim_project_wide", "project_id", WIDE_COLUMNS), got)

        # the multi-source commit: every source consumed up to its head, nothing twice
        props = {r[0]: r[1] for r in lakerank.spark().sql(
            f"show tblproperties {SCHEMA}.int_project_wide_changes").collect()}
        heads = {
            "contracts": lakerank.spark().sql(f"show tblproperties {SCHEMA}.stg_contract_changelog").collect(),
            "payments": lakerank.spark().sql(f"show tblproperties {SCHEMA}.int_payments").collect(),
            "design_changes": lakerank.spark().sql(f"show tblproperties {SCHEMA}.stg_design_changes").collect(),
        }
        head_key = {"contracts": "lakerank.commit_id", "payments": "lakerank.snapshot_id",
                    "design_changes": "lakerank.commit_id"}
        for source, rows_ in heads.items():
            head = {r[0]: r[1] for r in rows_}.get(head_key[source])
            assert props.get(f"lakerank.source.{source}") == head, (source, props, head)
        union = read(lakerank, f"select source_stream, count(*) as n from {SCHEMA}.int_project_wide_changes "
                               f"group by source_stream")
        counts = dict(zip(union["source_stream"], union["n"]))
        assert counts.get("contracts", 0) == len(contract_rows)
        assert counts.get("design_changes", 0) == len(valid_events(landed["design_changes"]))

        # -- seed 002: dimension, its versions, the enrichment -------------------------------
        project_events = valid_events(landed["projects"])
        dim = expected_dim(project_events)
        dim_cols = ["project_id", "city", "designer", "status", "update_time", "op_ts"]
        got = rows(read(lakerank, f"select * from {SCHEMA}.dim_project"), dim_cols)
        want = sorted(((p, e.get("city"), e.get("designer"), e.get("status"), e["update_time"],
                        shown(ts(e["op_ts"]))) for p, e in dim.items()), key=repr)
        assert_same("dim_project", got, want)
        assert_same("dim_project audit log replay",
                    replay_audit_log(lakerank, "dim_project", "project_id", dim_cols[1:]), got)

        history = expected_history(project_events)
        got = rows(read(lakerank, f"select * from {SCHEMA}.dim_project_history"),
                   ["project_id", "ver_start", "ver_end", "city", "designer", "status"])
        assert_same("dim_project_history", got, history)

        live = contract_oracle.live()
        enriched = read(lakerank, f"select * from {SCHEMA}.fct_contract_enriched")
        got = rows(enriched, ["project_id", "contract_id", "sign_time", "project_version_start", "city",
                              "designer", "status", "latest_city", "latest_designer", "latest_status"])
        assert_same("fct_contract_enriched", got, expected_enriched(live, history, dim))

    # a union commit published by a run killed before it recorded it is never read: the next
    # run drops it (and would recompute it from the same source windows)
    spark = lakerank.spark()
    union_table = f"{SCHEMA}.int_project_wide_changes"
    head = int(props["lakerank.commit_id"])
    before = rows(read(lakerank, f"select * from {union_table}"), ["_commit_id", "source_stream", "project_id"])
    cols = ", ".join(c for c in spark.table(union_table).columns if c != "_commit_id")
    spark.sql(f"insert into {union_table} partition (_commit_id = {head + 1}) "
              f"select {cols} from {union_table} where _commit_id = {head}")
    union_model = _load_model("int_project_wide_changes")
    from python_udfs.ingest.commit_union import run_commit_union

    result = run_commit_union(spark, table=union_table, ddl=union_model.DDL, sources=union_model.sources(SCHEMA))
    assert result.startswith("no pending commits"), result
    after = rows(read(lakerank, f"select * from {union_table}"), ["_commit_id", "source_stream", "project_id"])
    assert after == before

    # the generated streams did exercise what they claim to
    kinds = read(lakerank, f"select rowkind, count(*) as n from {SCHEMA}.dim_project__audit_log group by rowkind")
    assert {"+I", "-U", "+U", "-D"} <= set(kinds["rowkind"]), kinds
    kinds = read(lakerank, f"select rowkind, count(*) as n from {SCHEMA}.int_payments__audit_log group by rowkind")
    assert {"+I", "-U", "+U"} <= set(kinds["rowkind"]), kinds
    assert any(k in ("-U", "-D") for k, *_ in contract_changelog(landed_contracts))
    assert enriched["city"].isna().any() and enriched["city"].notna().any()
    both = enriched.dropna(subset=["city", "latest_city"])
    changed = (both["city"] != both["latest_city"]) | (both["designer"] != both["latest_designer"]) | (
        both["status"] != both["latest_status"])
    assert changed.any(), "no contract saw its project change after signing"


def test_declared_stream_fields_read_as_the_tuples():
    """A stream's fields declared in YAML (mappings) normalise exactly as the tuple form, and a
    declaration with an unknown key or no folder is refused with a message naming it."""
    import types

    import yaml

    from python_udfs.ingest.landing_ingest import normalise_fields, run_declared_stream

    examples_yml = os.path.join(os.path.dirname(__file__), "..", "..", "models", "examples", "_examples_streams.yml")
    with open(examples_yml, encoding="utf-8") as fh:
        declared = yaml.safe_load(fh)
    streams = {m["name"]: m["config"]["stream"] for m in declared["models"] if "stream" in m.get("config", {})}
    assert sorted(streams) == ["stg_design_changes", "stg_payments", "stg_project_changes"]
    assert normalise_fields(streams["stg_project_changes"]["fields"]) == normalise_fields([
        ("project_id", "bigint", True),
        ("op", "string", True, {"values": ["c", "u", "d"]}),
        ("city", "string", False),
        ("designer", "string", False),
        ("status", "string", False),
        ("update_time", "timestamp", True, {"formats": ["yyyy-MM-dd HH:mm:ss"], "unit": "millis"}),
        ("op_ts", "timestamp", True),
    ])
    with pytest.raises(ValueError, match="expected keys name, type"):
        normalise_fields([{"name": "a", "type": "bigint", "requird": True}])
    this = types.SimpleNamespace(schema="lakerank", identifier="stg_x")
    with pytest.raises(ValueError, match="stg_x: config 'stream' must declare 'folder' and 'fields'"):
        run_declared_stream(None, this, {"fields": streams["stg_payments"]["fields"]})


# ------------------------------------------------------------------------------------------
# dbt-native inputs (issue G.3), on the same home: `dbt docs generate` catalogs every model and
# every declared source with exactly its documented columns, `dbt source freshness` reads the
# ingests' logs as sources, and `dbt ls` on that built home starts no Spark session (last in
# the file: it stops the session).
# ------------------------------------------------------------------------------------------

DEMO = ROOT / "seeds" / "demo"
STREAMS = ("contracts", "payments", "design_changes", "projects")
PIPELINE_SOURCE = "source.lakerank.lakerank_ingest.stg_contract_ingest_log"
EXAMPLE_SOURCES = {f"source.lakerank.lakerank_examples_ingest.{m}__ingest_log"
                   for m in ("stg_payments", "stg_design_changes", "stg_project_changes")}
STALE_SOURCE = "source.lakerank.lakerank_examples_ingest.stg_payments__ingest_log"


@pytest.fixture(scope="module")
def built(examples_home) -> Lakerank:
    """The examples' home with every model built (the pipeline's marts and publication too).
    Alone (test_examples_match_oracle not selected), the demo's first batch of every stream
    is landed first."""
    lakerank = examples_home
    if lakerank.landed == 0:
        for stream in STREAMS:
            src = DEMO / "batch_00.jsonl" if stream == "contracts" else DEMO / stream / "batch_00.jsonl"
            (lakerank.home / "landing" / stream).mkdir(parents=True, exist_ok=True)
            shutil.copy(src, lakerank.home / "landing" / stream / "demo_batch_00.jsonl")
    # every model, the examples too; no data tests; the four landing ingests side by side
    lakerank.dbt("run", "--select", "lakerank", "--threads", "6")
    return lakerank


def test_docs_catalog_has_every_model_and_source(built):
    """`dbt docs generate` writes target/catalog.json with every model's relation and every
    declared source table, each with exactly the columns its YAML documents."""
    manifest = built.dbt("parse").result
    models = {uid: node for uid, node in manifest.nodes.items() if node.resource_type == "model"}
    catalog_path = ROOT / os.environ["DBT_TARGET_PATH"] / "catalog.json"
    if catalog_path.exists():
        catalog_path.unlink()
    built.dbt("docs", "generate")
    catalog = json.loads(catalog_path.read_text())
    assert not catalog.get("errors"), catalog["errors"]
    assert set(catalog["nodes"]) == set(models) and len(models) >= 18
    assert set(catalog["sources"]) == set(manifest.sources)
    assert {PIPELINE_SOURCE, *EXAMPLE_SOURCES} <= set(catalog["sources"])
    for uid, entry in [*catalog["nodes"].items(), *catalog["sources"].items()]:
        node = models.get(uid) or manifest.sources[uid]
        meta = entry["metadata"]
        assert (meta["schema"], meta["name"]) == (node.schema, node.identifier if uid in manifest.sources
                                                  else node.alias), uid
        assert {c.lower() for c in entry["columns"]} == {c.lower() for c in node.columns}, uid


def test_source_freshness_reads_the_ingest_logs(built):
    """Every ingest log is a source with a loaded_at_field: fresh right after the build, its
    age the seconds since that build (the business wall clock of `_committed_at`, eight hours
    ahead of UTC here, read as the instant it is); a log whose last commit is four days old
    (rewritten here) is past `error_after`."""
    spark = built.spark()
    old = spark.sql("select files, events_landed, applied, quarantined, _committed_at - interval 4 days "
                    "as _committed_at, skipped, _commit_id from lakerank.stg_payments__ingest_log")
    spark.createDataFrame(old.collect(), old.schema).createOrReplaceTempView("old_log")  # read before the overwrite
    spark.sql("insert overwrite table lakerank.stg_payments__ingest_log partition (_commit_id) "
              "select * from old_log").collect()
    # dbt labels the times UTC; PySpark hands instants over as this machine's local time
    started = dt.datetime.now()
    result = built.dbt("source", "freshness", expect_success=False)
    results = {r.node.unique_id: r for r in result.result.results if r.node.resource_type == "source"}  # not the hook
    assert set(results) == {PIPELINE_SOURCE, *EXAMPLE_SOURCES}
    stale = results.pop(STALE_SOURCE)
    assert str(stale.status) == "error" and abs(stale.age - 4 * 86400) < 900, (stale.status, stale.age)
    for name, r in results.items():
        assert str(r.status) == "pass", (name, r.status, r.message)
        assert 0 <= r.age < 900, (name, r.age, r.max_loaded_at, r.snapshotted_at)
        loaded, snapshot = (t.replace(tzinfo=None) for t in (r.max_loaded_at, r.snapshotted_at))
        assert loaded <= started + dt.timedelta(seconds=1) <= snapshot + dt.timedelta(seconds=1), (loaded, snapshot)


def test_ls_on_a_built_home_starts_no_session(built):
    """`dbt ls` of a built home with the process's session stopped: it starts none (no JVM
    work, no metastore), and lists the models and the sources; without the `lakerank_examples`
    var (the default, what `dbt build` and `dbt source freshness` see) none of the examples'
    models and sources, although this home holds them. Last in the file: the session stays
    stopped."""
    from pyspark.sql import SparkSession

    from dbt.adapters.lakerank.session import stop_embedded_session

    stop_embedded_session()
    pipeline = Lakerank(built.runner, built.home)
    result = pipeline.dbt("ls", "--resource-type", "model", "--resource-type", "source", "--output", "name")
    assert SparkSession._instantiatedSession is None
    listed = set(result.result)
    assert {"fct_contract_rank", "published_commit", "lakerank_ingest.stg_contract_ingest_log"} <= listed, listed
    assert not {x for x in listed if "examples" in x or x in ("stg_payments", "dim_project_wide")}, listed
