"""The real tools scripts/record_debezium.py drives: the databases (PostgreSQL, MariaDB, started
by scripts/services/) and the Debezium runner (tools/debezium-runner), built on first use."""

from __future__ import annotations

import json
import os
import pathlib
import queue
import subprocess
import sys
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[2]
RUNNER = ROOT / "tools" / "debezium-runner"
SERVICES = ROOT / "scripts" / "services"
DEBEZIUM_VERSION = "3.6.1.Final"
DATABASE = "sales"



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
