#!/usr/bin/env python3
"""Records a real PostgreSQL 15 change stream as Debezium delivers it (issue 50), for
tests/functional/test_debezium_replay.py to replay in CI.

The real tools: a throwaway PostgreSQL 15 (scripts/services/postgres.sh) at the default
replica identity (updates carry no before image, deletes only the key) and Debezium's
Postgres connector in its embedded engine (tools/debezium-runner: pgoutput, the JSON
converter with the schema/payload wrapper, the default decimal.handling.mode=precise, a file
offset store). Two tables receive the same workload: ``contracts`` (``amount numeric``:
Debezium's ``io.debezium.data.VariableScaleDecimal``) and ``contracts_p`` (``amount
numeric(12,2)``: ``org.apache.kafka.connect.data.Decimal``); a third, ``markers``, is written
between build points only to know that the engine has delivered everything committed before
(its events, like ``contracts_p``'s, are other tables' lines that lakerank's table filter
skips).

The workload runs in multi-statement transactions, each statement applied to ``contracts`` and
then to ``contracts_p``. At each build point the current file is closed and PostgreSQL's own
``dense_rank()``, ``rank()`` and ``row_number()`` (ties by ``contract_id``, as lakerank's
``row_number``) over ``partition by project_id order by sign_time`` are recorded for every live
contract with its row, for both tables.

Build point 3 holds the connector's offsets (nothing committed), then halts the engine
(``Runtime.halt``): the restart re-sends everything since the last committed offset (the end of
build 2) into later files, and the first of them is cut between two changes of one contract in
one transaction (file 4 ends after the re-sent first change, file 5 starts with the re-sent
second one): a build of file 4 must still show the newer image.

Output (tests/fixtures/debezium_pg/): the files in landing order (``pg-0001.jsonl``, ...), one
``expected-NN.json`` per build point and ``manifest.json`` (which files each build lands,
what it exercises, the versions, the date, the event counts, this command).

    python3 scripts/record_debezium.py                    # rewrites tests/fixtures/debezium_pg/
    python3 scripts/record_debezium.py --out /tmp/dbz     # elsewhere

Needs Java 17+ and Maven (the runner is built with ``mvn package`` on first use; Debezium from
Maven Central) and PostgreSQL 15 (installed with apt-get by the service script if missing).
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import os
import pathlib
import queue
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
RUNNER = ROOT / "tools" / "debezium-runner"
SERVICES = ROOT / "scripts" / "services"
DEBEZIUM_VERSION = "3.6.1.Final"
DATABASE = "sales"
START = dt.datetime(2026, 3, 2, 9, 0, 0)
SEED = 50


def log(msg: str) -> None:
    print(f"[record_debezium] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- the tools

def build_runner() -> str:
    """The runner's classpath (built with Maven when missing)."""
    jar = RUNNER / "target" / "debezium-runner-1.jar"
    if not jar.exists() or not (RUNNER / "target" / "lib").is_dir():
        log("building tools/debezium-runner (mvn package)")
        subprocess.run(["mvn", "-B", "-q", "-f", str(RUNNER / "pom.xml"), "package", "-DskipTests"], check=True)
    return f"{jar}:{RUNNER / 'target' / 'lib'}/*"


def _start_service(script: str, env=None) -> dict:
    out = subprocess.run(["bash", str(SERVICES / script), "start"], check=True, capture_output=True, text=True,
                         env={**os.environ, **(env or {})}).stdout
    return dict(line.split("=", 1) for line in out.split())


RANKS = """dense_rank() over w as dense_rank, rank() over w as rank,
           row_number() over (partition by project_id order by sign_time, contract_id) as row_number"""


class Postgres:
    """PostgreSQL 15 (scripts/services/postgres.sh) and Debezium's Postgres connector."""

    name = "postgresql"
    title = "PostgreSQL"
    option = ""
    connector = ("io.debezium.connector.postgresql.PostgresConnector (pgoutput, default replica identity, "
                 "decimal.handling.mode=precise, JSON converter with schemas)")
    described_tables = {"contracts": "amount numeric (io.debezium.data.VariableScaleDecimal)",
                        "contracts_p": "amount numeric(12,2) (org.apache.kafka.connect.data.Decimal)",
                        "markers": "build-point markers"}
    prefix = "pg"
    out = ROOT / "tests" / "fixtures" / "debezium_pg"
    # contracts: numeric (VariableScaleDecimal); contracts_p: numeric(12,2) (Decimal)
    tables = ("contracts", "contracts_p")
    cid_off = project_off = 0
    snapshot = True

    def __init__(self):
        self.env = _start_service("postgres.sh")
        self.port = int(self.env["PGPORT"])
        log(f"PostgreSQL on 127.0.0.1:{self.port} ({self.env['LAKERANK_PG_DIR']})")

    def sql(self, sql: str, db: str = DATABASE) -> str:
        env = {**os.environ, **{k: v for k, v in self.env.items() if k.startswith("PG")}, "PGDATABASE": db}
        res = subprocess.run(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1"], input=sql, env=env,
                             capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError(f"psql failed: {res.stderr}\n{sql}")
        return res.stdout.strip()

    def setup(self):
        self.sql(f"create database {DATABASE};", db="postgres")
        self.sql("""
            create table contracts (contract_id bigint primary key, project_id bigint, sign_time timestamp,
                                    amount numeric);
            create table contracts_p (contract_id bigint primary key, project_id bigint, sign_time timestamp,
                                      amount numeric(12,2));
            create table markers (id bigint primary key, at timestamptz);""")

    def version(self) -> str:
        return self.sql("show server_version;")

    def props(self, work: pathlib.Path) -> list[str]:
        return [
            "connector.class=io.debezium.connector.postgresql.PostgresConnector",
            f"offset.storage.file.filename={work / 'offsets.dat'}",
            "database.hostname=127.0.0.1",
            f"database.port={self.port}",
            f"database.user={self.env['PGUSER']}",
            "database.password=unused",
            f"database.dbname={DATABASE}",
            "topic.prefix=pg",
            "plugin.name=pgoutput",
            "slot.name=lakerank_recording",
            "table.include.list=public.contracts,public.contracts_p,public.markers",
        ]

    def rows(self, table: str) -> list[dict]:
        return json.loads(self.sql(f"""
            select coalesce(json_agg(r order by contract_id), '[]') from (
              select contract_id, project_id, to_char(sign_time, 'YYYY-MM-DD HH24:MI:SS') as sign_time,
                     amount::text as amount, {RANKS}
              from {table} window w as (partition by project_id order by sign_time)) r;"""))

    def after_halt(self):
        for _ in range(300):  # the slot is free once the walsender of the halted engine has exited
            if self.sql("select count(*) from pg_replication_slots where active;") == "0":
                return
            time.sleep(0.1)

    def stop(self):
        subprocess.run(["bash", str(SERVICES / "postgres.sh"), "stop", self.env["LAKERANK_PG_DIR"]], check=True)


class MariaDB:
    """Debian's MariaDB 10.11 (scripts/services/mariadb.sh) and Debezium's MySQL connector.

    Debezium 3.6.1's MySQL connector does not stream from MariaDB as it is (its MariaDB
    connector, io.debezium:debezium-connector-mariadb, is not served), so:
    - the server reports version 5.7.44 (MariaDB's `version` option): as 10.11 the connector
      takes it for MySQL >= 8.2 and runs `SHOW BINARY LOG STATUS`, which MariaDB lacks;
    - MariaDB's JDBC driver (`database.jdbc.driver`, `database.protocol`): MySQL's Connector/J
      sets `transaction_isolation`, which MariaDB 10.11 lacks;
    - `snapshot.mode=no_data`: the snapshot fails with MariaDB's driver (its result-set
      streaming fetch size, then `DATETIME cannot be decoded as Blob`), so every row is
      streamed from the binlog;
    - binlog_row_image=FULL: the connector refuses any other (MINIMAL) at start.
    Contract ids are shifted by 100,000 and projects by 100, so that its stream and the
    PostgreSQL one can share a home.
    """

    name = "mariadb"
    title = "MariaDB"
    option = " --database mariadb"
    connector = ("io.debezium.connector.mysql.MySqlConnector (binlog_format=ROW, binlog_row_image=FULL, "
                 "decimal.handling.mode=precise, JSON converter with schemas; MariaDB's JDBC driver, the server "
                 "reporting version 5.7.44, snapshot.mode=no_data: scripts/record_debezium.py, class MariaDB)")
    described_tables = {"contracts": "amount decimal(16,4) (org.apache.kafka.connect.data.Decimal)",
                        "markers": "build-point markers"}
    prefix = "my"
    out = ROOT / "tests" / "fixtures" / "debezium_mysql"
    tables = ("contracts",)  # amount decimal(16,4): Decimal, scale 4
    cid_off, project_off = 100_000, 100
    snapshot = False

    def __init__(self):
        self.env = _start_service("mariadb.sh", {"LAKERANK_MARIADB_VERSION": "5.7.44-log",
                                                 "LAKERANK_MARIADB_ROW_IMAGE": "FULL"})
        self.port = int(self.env["MYSQL_TCP_PORT"])
        log(f"MariaDB on 127.0.0.1:{self.port} ({self.env['LAKERANK_MARIADB_DIR']})")

    def sql(self, sql: str, db: str = DATABASE) -> str:
        cmd = ["mariadb", "--protocol=tcp", "-h", "127.0.0.1", "-P", str(self.port), "-u", self.env["MYSQL_USER"],
               "-N", "-B"] + ([db] if db else [])
        res = subprocess.run(cmd, input=sql, env={**os.environ, "MYSQL_PWD": self.env["MYSQL_PWD"]},
                             capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError(f"mariadb failed: {res.stderr}\n{sql}")
        return res.stdout.strip()

    def setup(self):
        self.sql(f"create database {DATABASE};", db="")
        self.sql("""
            create table contracts (contract_id bigint primary key, project_id bigint, sign_time datetime,
                                    amount decimal(16,4));
            create table markers (id bigint primary key, at datetime(3));""")

    def version(self) -> str:
        real = subprocess.run(["mariadbd", "--version"], capture_output=True, text=True).stdout.strip()
        return f"{real} (reporting version {self.sql('select version();')})"

    def props(self, work: pathlib.Path) -> list[str]:
        return [
            "connector.class=io.debezium.connector.mysql.MySqlConnector",
            f"offset.storage.file.filename={work / 'offsets.dat'}",
            "database.hostname=127.0.0.1",
            f"database.port={self.port}",
            f"database.user={self.env['MYSQL_USER']}",
            f"database.password={self.env['MYSQL_PWD']}",
            "database.server.id=5401",
            "database.jdbc.driver=org.mariadb.jdbc.Driver",
            "database.protocol=jdbc:mariadb",
            "database.ssl.mode=disabled",
            "snapshot.mode=no_data",
            "topic.prefix=my",
            f"database.include.list={DATABASE}",
            f"table.include.list={DATABASE}.contracts,{DATABASE}.markers",
            "schema.history.internal=io.debezium.storage.file.history.FileSchemaHistory",
            f"schema.history.internal.file.filename={work / 'schema_history.dat'}",
        ]

    def rows(self, table: str) -> list[dict]:
        out = self.sql(f"""
            select contract_id, project_id, date_format(sign_time, '%Y-%m-%d %H:%i:%s'), amount,
                   dense_rank() over w, rank() over w,
                   row_number() over (partition by project_id order by sign_time, contract_id)
            from {table} window w as (partition by project_id order by sign_time) order by contract_id;""")
        rows = []
        for line in filter(None, out.split("\n")):
            c = line.split("\t")
            rows.append({"contract_id": int(c[0]), "project_id": int(c[1]), "sign_time": c[2],
                         "amount": None if c[3] == "NULL" else c[3], "dense_rank": int(c[4]), "rank": int(c[5]),
                         "row_number": int(c[6])})
        return rows

    def after_halt(self):
        pass

    def stop(self):
        subprocess.run(["bash", str(SERVICES / "mariadb.sh"), "stop", self.env["LAKERANK_MARIADB_DIR"]], check=True)


DATABASES = {"postgresql": Postgres, "mariadb": MariaDB}


class Runner:
    """The Debezium runner process: commands on its stdin, answers read from its stdout."""

    def __init__(self, classpath: str, props: pathlib.Path, out: pathlib.Path, first_file: int, logfile, prefix: str):
        self.out = out
        self.prefix = prefix
        self.proc = subprocess.Popen(
            ["java", "-cp", classpath, "lakerank.tools.DebeziumRunner", str(props), str(out), str(first_file), prefix],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=logfile, text=True, bufsize=1)
        self.answers: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.current = f"{prefix}-{first_file:04d}.jsonl"
        self.expect("started")

    def _read(self):
        for line in self.proc.stdout:
            self.answers.put(line.rstrip("\n"))
        self.answers.put("<eof>")

    def send(self, command: str):
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def expect(self, word: str, timeout: float = 180.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            try:
                answer = self.answers.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise TimeoutError(f"no '{word}' from the runner in {timeout} s") from None
            if answer == "<eof>":
                raise RuntimeError(f"the runner ended while waiting for '{word}' (exit {self.proc.wait()})")
            if answer.startswith("wrote "):
                self.current = answer.split()[1]
            if answer.split()[0] == word:
                return answer

    def rotate(self) -> str:
        """Closes the current file; returns its name."""
        self.send("rotate")
        name = self.expect("rotated").split()[1]
        self.current = _next_name(name)
        return name

    def halt(self):
        self.send("halt")
        self.proc.wait(timeout=60)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _number(name: str) -> int:
    return int(name.rsplit("-", 1)[1].split(".")[0])


def _next_name(name: str) -> str:
    return f"{name.rsplit('-', 1)[0]}-{_number(name) + 1:04d}.jsonl"


def _payload(line: str):
    if line == "null":
        return None
    return json.loads(line).get("payload")


# --------------------------------------------------------------------------- the workload

def ts(hours: float) -> str:
    """A sign time, whole seconds, ``hours`` after START."""
    return (START + dt.timedelta(seconds=round(hours * 3600))).strftime("%Y-%m-%d %H:%M:%S")


def amount_sql(a) -> str:
    return "null" if a is None else str(a)


class Workload:
    """Statements applied to both tables, one transaction at a time; keeps the live set to
    draw random valid changes from."""

    def __init__(self, db, rng: random.Random):
        self.db = db
        self.rng = rng
        self.live: dict[int, tuple[int, str]] = {}  # contract_id -> (project_id, sign_time)
        self.deleted: set[int] = set()
        self.next_id = 1000
        self.marker = 0
        self.txn: list[str] = []

    def _both(self, template: str):
        for t in self.db.tables:
            self.txn.append(template.format(t=t))

    def c(self, cid: int) -> int:
        """A contract id as the database holds it."""
        return cid + self.db.cid_off

    def p(self, project: int) -> int:
        return project + self.db.project_off

    def insert(self, cid, project, sign_time, amount):
        self._both(f"insert into {{t}} values ({self.c(cid)}, {self.p(project)}, '{sign_time}', "
                   f"{amount_sql(amount)});")
        self.live[cid] = (project, sign_time)
        self.deleted.discard(cid)

    def update(self, cid, project=None, sign_time=None, amount="keep"):
        sets = []
        p, s = self.live[cid]
        if project is not None:
            sets.append(f"project_id = {self.p(project)}")
            p = project
        if sign_time is not None:
            sets.append(f"sign_time = '{sign_time}'")
            s = sign_time
        if amount != "keep":
            sets.append(f"amount = {amount_sql(amount)}")
        self._both(f"update {{t}} set {', '.join(sets)} where contract_id = {self.c(cid)};")
        self.live[cid] = (p, s)

    def rekey(self, cid, new_cid):
        self._both(f"update {{t}} set contract_id = {self.c(new_cid)} where contract_id = {self.c(cid)};")
        self.live[new_cid] = self.live.pop(cid)
        self.deleted.add(cid)

    def delete(self, cid):
        self._both(f"delete from {{t}} where contract_id = {self.c(cid)};")
        del self.live[cid]
        self.deleted.add(cid)

    def commit(self):
        self.db.sql("begin;\n" + "\n".join(self.txn) + "\ncommit;\n")
        self.txn = []

    def random_amount(self):
        r = self.rng.random()
        if r < 0.1:
            return None
        places = self.rng.choice([0, 1, 2, 2, 3, 4])
        value = self.rng.randint(-50_000, 2_000_000) / (10 ** places)
        return f"{value:.{places}f}"

    def random_txn(self, n: int, late_from: float, until: float):
        """n random statements in one transaction: inserts (some late), sign-time updates, moves,
        amount updates, deletes, re-inserts."""
        for _ in range(n):
            r = self.rng.random()
            ids = sorted(self.live)
            if r < 0.35 or len(ids) < 5:
                cid = self.next_id
                self.next_id += 1
                self.insert(cid, self.rng.randint(1, 4), ts(self.rng.uniform(late_from, until)), self.random_amount())
            elif r < 0.5:
                self.update(self.rng.choice(ids), sign_time=ts(self.rng.uniform(late_from, until)))
            elif r < 0.6:
                self.update(self.rng.choice(ids), project=self.rng.randint(1, 4))
            elif r < 0.7:
                self.update(self.rng.choice(ids), amount=self.random_amount())
            elif r < 0.85:
                self.delete(self.rng.choice(ids))
            elif self.deleted - set(self.live):
                cid = self.rng.choice(sorted(self.deleted - set(self.live)))
                self.insert(cid, self.rng.randint(1, 4), ts(self.rng.uniform(late_from, until)), self.random_amount())
            else:
                self.update(self.rng.choice(ids), project=self.rng.randint(1, 4),
                            sign_time=ts(self.rng.uniform(0, until)))
        self.commit()

    def sync(self, runner: Runner, timeout: float = 180.0) -> None:
        """Writes a marker row and waits until the engine has written its streamed event:
        everything committed before it has been delivered."""
        give_up = time.monotonic() + timeout
        while time.monotonic() < give_up:
            self.marker += 1
            self.db.sql(f"insert into markers values ({self.marker}, now());")
            # Before streaming starts a marker is read by the snapshot (op r) or, without one,
            # committed before the position streaming starts from (never delivered): another.
            again = time.monotonic() + 15
            while time.monotonic() < again:
                seen = self._marker_op(runner)
                if seen == "c":
                    return
                if seen == "r":
                    break
                time.sleep(0.2)
        raise TimeoutError(f"marker {self.marker} not delivered in {timeout} s")

    def _marker_op(self, runner: Runner):
        while True:  # drain answers (keeps runner.current up to date)
            try:
                answer = runner.answers.get_nowait()
            except queue.Empty:
                break
            if answer.startswith("wrote "):
                runner.current = answer.split()[1]
        for path in sorted(runner.out.glob(f"{runner.prefix}-*.jsonl")):
            for line in path.read_text().splitlines():
                p = _payload(line)
                if p and p["source"]["table"] == "markers" and (p.get("after") or {}).get("id") == self.marker:
                    return p["op"]
        return None

    def expected(self) -> dict:
        out = {t: self.db.rows(t) for t in self.db.tables}
        got = {r["contract_id"] - self.db.cid_off: (r["project_id"] - self.db.project_off, r["sign_time"])
               for r in out["contracts"]}
        assert got == self.live, "the workload's model of the live set drifted from the database's"
        return out


# --------------------------------------------------------------------------- the recording

def record(kind: str, out: pathlib.Path | None, keep_work: bool) -> None:
    classpath = build_runner()
    rng = random.Random(SEED)
    work = pathlib.Path(tempfile.mkdtemp(prefix="lakerank-dbz-"))
    files_dir = work / "files"
    runner_log = open(work / "runner.log", "w")
    db = DATABASES[kind]()
    out = out or db.out
    runner = None
    try:
        db.setup()
        version = db.version()
        props = work / "connector.properties"
        props.write_text("\n".join(["name=lakerank-recording", *db.props(work)]) + "\n")
        w = Workload(db, rng)
        builds = []

        def build_point(exercises: str, files: list[str]):
            expected = w.expected()
            n = len(builds) + 1
            builds.append({"build": n, "files": files, "expected": f"expected-{n:02d}.json", "exercises": exercises,
                           "live_contracts": len(expected["contracts"]), "expected_rows": expected})
            log(f"build point {n}: {files}, {len(expected['contracts'])} live contracts")

        def start_runner(first_file: int) -> Runner:
            return Runner(classpath, props, files_dir, first_file, runner_log, db.prefix)

        if not db.snapshot:  # no snapshot: the first rows are streamed
            runner = start_runner(1)
            w.sync(runner)
        # The first rows: the snapshot's, read before streaming starts (a tie in project 1).
        for cid, (project, hours, amount) in enumerate([
                (1, 0, "1250.00"), (1, 2, "300"), (1, 2, "12.5"), (2, 1, "0.125"), (2, 5, "-40.10"),
                (3, 3, "99999.999"), (3, 4, None), (1, 6, "7"), (2, 7, "0"), (3, 8, "1.005"),
                (4, 9, "-0.5"), (4, 9.5, "45.675")], start=1):
            w.insert(cid, project, ts(hours), amount)
        w.commit()

        if db.snapshot:
            runner = start_runner(1)
            w.sync(runner)  # the snapshot is over: what follows is streamed
        # Build 1: the snapshot (op r), then inserts streamed: late ones (before every row of
        # their project), ties, amounts of 0 to 4 decimal places, negative and null.
        w.insert(13, 2, ts(-5), "12.345")      # late: before all of project 2
        w.insert(14, 1, ts(2), "-7.005")        # a third tie at +2 h in project 1
        w.insert(15, 3, ts(3), "0.01")          # a tie with 6
        w.insert(16, 3, ts(12), "100.1")
        w.insert(17, 4, ts(-1), None)
        w.commit()
        w.insert(18, 4, ts(9), "2.5")           # a tie with 11
        w.insert(19, 1, ts(-3), "-1234.5678")   # late
        w.commit()
        w.random_txn(8, -10, 30)
        w.random_txn(6, -10, 30)
        w.sync(runner)
        build_point(("snapshot reads (op r) of 12 contracts" if db.snapshot else "12 contracts inserted (no snapshot)")
                    + ", then streamed inserts in multi-statement "
                    "transactions: late inserts (earlier than every row of their project), ties, amounts "
                    "with 0-4 decimal places, negative and null", [runner.rotate()])

        # Build 2: updates without before images, moves, key changes, deletes, re-inserts,
        # several changes to one row in one transaction.
        w.update(3, sign_time=ts(20))           # later
        w.update(5, sign_time=ts(-8))           # earlier: late update
        w.update(7, project=4)                  # a move
        w.update(8, amount="-0.005")
        w.commit()
        w.rekey(9, 109)                         # a primary-key change: d + tombstone + c
        w.delete(10)
        w.delete(2)
        w.commit()
        w.insert(10, 2, ts(1), "10.10")         # re-insert of a deleted key, another project
        w.update(12, sign_time=ts(15))          # four changes to 12 in one transaction
        w.update(12, amount="3.333")
        w.update(12, project=1)
        w.update(12, sign_time=ts(2))           # ends in the tie of project 1
        w.commit()
        w.delete(13)                            # delete and re-insert in one transaction
        w.insert(13, 3, ts(3), "66.66")
        w.commit()
        for _ in range(3):
            w.random_txn(6, -10, 30)
        a, b = sorted(w.live)[:2]               # b moved onto a's project and sign time: a tie
        w.update(b, project=w.live[a][0], sign_time=w.live[a][1])
        w.commit()
        w.sync(runner)
        build_point(("updates (before: null)" if db.snapshot else "updates (with before images: binlog_row_image=FULL)")
                    + ", sign-time updates (later, earlier), a project move, a primary-key "
                    "change (9 -> 109: delete, tombstone, create), deletes, a re-insert of a deleted key, four "
                    "changes to one row in one transaction, a delete and re-insert in one transaction, a move "
                    "into a tie",
                    [runner.rotate()])

        # Build 3: nothing committed from here (hold), then the halt.
        runner.send("hold")
        runner.expect("holding")
        first_cut = len(db.tables) + 1          # re-sent: 300 (each table), then 14's first change
        w.insert(300, 2, ts(4), "5.55")
        w.update(14, sign_time=ts(-20))         # change A of 14 (the re-sent copy ends file 4)
        tie = min(c for c, (p, _) in w.live.items() if p == 3 and c != 14)
        w.update(14, project=3, sign_time=w.live[tie][1], amount="14.14")   # change B (file 5): a tie

        w.delete(15)                            # delete and re-insert of 15 in the same transaction
        w.insert(15, 3, ts(25), "15.015")
        w.update(16, amount="-16.16")
        w.commit()
        w.random_txn(5, -10, 30)
        w.sync(runner)
        held = runner.rotate()
        build_point("the held transactions (offsets not committed): one transaction inserts 300, changes 14 "
                    "twice (sign time, then project, sign time and amount, into a tie), deletes and re-inserts 15, "
                    "changes 16's amount; then random changes", [held])
        runner.halt()
        db.after_halt()
        log(f"halted; restarting at file {_number(held) + 1}, cut after {first_cut} events")

        # Build 4: the restart re-sends since build 2's offset; the first file is cut after the
        # re-sent first change of 14.
        runner = start_runner(_number(held) + 1)
        runner.send(f"cut {first_cut}")
        cut = runner.expect("cut").split()[1]
        runner.current = _next_name(cut)
        lines = (files_dir / cut).read_text().splitlines()
        last = _payload(lines[-1])
        assert len(lines) == first_cut and last["source"]["table"] == "contracts" and \
            last["after"]["contract_id"] == w.c(14) and last["after"]["project_id"] == w.p(1), \
            f"the re-sent file does not end with 14's first change: {lines}"
        build_point("re-sent events only (the restart after the halt): 300's insert and 14's first change, "
                    "re-sent; the file ends between 14's two changes: the newer image (build 3's) must stay",
                    [cut])

        # Build 5: the rest of the re-sent events, then new transactions.
        w.random_txn(6, -10, 30)
        w.insert(301, 1, ts(-30), "0.999")      # late
        w.update(300, project=1, sign_time=ts(2))   # into the tie of project 1
        w.commit()
        w.sync(runner)
        f5 = runner.rotate()
        first = next(p for p in map(_payload, (files_dir / f5).read_text().splitlines())
                     if p and p["source"]["table"] == "contracts")
        assert first["after"]["contract_id"] == w.c(14) and first["after"]["project_id"] == w.p(3), first
        build_point("the rest of the re-sent events (14's second change first, 15's delete and re-insert, 16, the "
                    "random transaction, build 3's marker), then new transactions", [f5])

        # Build 6: a key changed onto a deleted key, a project emptied, more ties and late rows.
        w.rekey(109, 9)                         # back onto the key it left
        w.update(301, sign_time=ts(2), project=1)
        for cid in sorted(c for c, (p, _) in w.live.items() if p == 2):
            w.delete(cid)                       # project 2 emptied
        w.commit()
        w.insert(302, 2, ts(0), "2.00")         # project 2 again, one row
        w.random_txn(6, -10, 30)
        w.sync(runner)
        build_point("a key changed back onto a deleted key (109 -> 9), a late update into a tie, every contract of "
                    "project 2 deleted then one re-inserted, random changes", [runner.rotate()])
        runner.stop()
        runner = None
        write_fixture(db, out, files_dir, builds, version)
    finally:
        if runner is not None:
            runner.stop()
        db.stop()
        runner_log.close()
        if keep_work:
            log(f"work kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def write_fixture(db, out: pathlib.Path, files_dir: pathlib.Path, builds: list, version: str) -> None:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    landed = [f for b in builds for f in b["files"]]
    counts = collections.Counter()
    for name in landed:
        shutil.copy(files_dir / name, out / name)
        for line in (out / name).read_text().splitlines():
            p = _payload(line)
            if p is None:
                counts["tombstone"] += 1
            elif "op" not in p:  # the MySQL connector's schema changes (ddl)
                counts["schema change"] += 1
            else:
                counts[f"{p['source']['table']} {p['op']}"] += 1
    for b in builds:
        rows = b.pop("expected_rows")  # one row a line
        (out / b["expected"]).write_text("{\n" + ",\n".join(
            f' "{t}": [\n  ' + ",\n  ".join(json.dumps(r) for r in rows[t]) + "\n ]" for t in db.tables) + "\n}\n")
    manifest = {
        "what": f"{db.title} changes as Debezium's embedded engine delivered them (scripts/record_debezium.py); "
                "land each build's files in order, build with contracts_format: debezium-json, "
                "contracts_table_include: contracts, compare with the build's expected ranks",
        "regenerate": f"python3 scripts/record_debezium.py{db.option}",
        "debezium": DEBEZIUM_VERSION,
        "connector": db.connector,
        db.name: version,
        "recorded": dt.date.today().isoformat(),
        "tables": db.described_tables,
        "events": dict(sorted(counts.items())),
        "builds": builds,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    log(f"wrote {out}: {len(landed)} files, events {dict(sorted(counts.items()))}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--database", choices=sorted(DATABASES), default="postgresql",
                    help="postgresql (tests/fixtures/debezium_pg) or mariadb (tests/fixtures/debezium_mysql)")
    ap.add_argument("--out", type=pathlib.Path, help="the fixture folder (default: the database's)")
    ap.add_argument("--keep-work", action="store_true", help="keep the temporary folder (runner log, offsets)")
    args = ap.parse_args()
    record(args.database, args.out, args.keep_work)


if __name__ == "__main__":
    main()
