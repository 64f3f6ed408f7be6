"""The workload scripts/record_debezium.py runs against a database: multi-statement transactions
of inserts, late inserts, ties, updates, moves, key changes, deletes and re-inserts."""

from __future__ import annotations

import datetime as dt
import queue
import random
import time

from sources import Runner, _payload

START = dt.datetime(2026, 3, 2, 9, 0, 0)  # the sign times' origin


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
