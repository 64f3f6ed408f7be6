"""The bench's event streams (scripts/bench.py, the pipeline's wide exactness scenario and the
spike in scripts/probes/): a history of `+I` events landed as JSON Lines files, and micro-batches
with late, updated, moved, deleted and duplicate events."""

from __future__ import annotations

import json
import os
import pathlib
import random
from datetime import datetime, timedelta

HISTORY_START = datetime(2022, 1, 1)
HISTORY_DAYS = 3 * 365
N_PROJECTS = 50_000
N_LARGE = 100
FILE_ROWS = 1_000_000



def land_history(landing: pathlib.Path, n: int, projects: int, seed: int) -> None:
    """n `+I` events (contract ids 1..n) as JSON Lines files of FILE_ROWS lines, via DuckDB."""
    import duckdb

    landing.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect()
    con.execute(f"select setseed({(seed % 1000) / 1000})")
    large = min(N_LARGE, projects)
    span_s = HISTORY_DAYS * 86400
    for part, lo in enumerate(range(0, n, FILE_ROWS)):
        hi = min(n, lo + FILE_ROWS)
        tmp, dst = landing / f".history_{part:04d}.tmp", landing / f"history_{part:04d}.jsonl"
        # A fifth of the contracts in the large projects, the rest spread over the others.
        con.execute(f"""
            copy (
                select
                    '+I' as op,
                    case when random() < 0.2 then 1 + cast(floor(random() * {large}) as bigint)
                         else {large} + 1 + cast(floor(random() * {max(1, projects - large)}) as bigint)
                    end as project_id,
                    i as contract_id,
                    strftime(timestamp '{HISTORY_START:%Y-%m-%d %H:%M:%S}'
                             + to_seconds(cast(floor(random() * {span_s}) as bigint)),
                             '%Y-%m-%d %H:%M:%S') as sign_time,
                    cast(round(random() * 100000, 2) as decimal(18, 2)) as amount,
                    strftime(timestamp '2021-12-31 00:00:00' + to_microseconds(i * 1000),
                             '%Y-%m-%d %H:%M:%S.%g') as op_ts
                from range({lo + 1}, {hi + 1}) as t(i)
            ) to '{tmp}' (format json)
        """)
        os.replace(tmp, dst)


class BatchMaker:
    """Micro-batches after a history of `n_history` contracts (ids 1..n_history)."""

    def __init__(self, n_history: int, projects: int, seed: int):
        self.rng = random.Random(seed)
        self.next_cid = n_history + 1
        self.max_cid = n_history
        self.projects = projects
        self.now = HISTORY_START + timedelta(days=HISTORY_DAYS)
        # op_ts after every history event (history op_ts run from 2021-12-31 by 1 ms each)
        self.op_ts = datetime(2021, 12, 31) + timedelta(milliseconds=n_history + 1_000)

    def _tick(self) -> str:
        self.op_ts += timedelta(milliseconds=1)
        return self.op_ts.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]

    def _project(self) -> int:
        large = min(N_LARGE, self.projects)
        if self.rng.random() < 0.2:
            return self.rng.randint(1, large)
        return self.rng.randint(large + 1, max(large + 1, self.projects))

    def _line(self, op, pid, cid, sign: datetime) -> str:
        return json.dumps({"op": op, "project_id": pid, "contract_id": cid,
                           "sign_time": sign.strftime("%Y-%m-%d %H:%M:%S"),
                           "amount": round(self.rng.random() * 100000, 2), "op_ts": self._tick()})

    def history(self, n: int) -> list[str]:
        """n `+I` events of new contracts spread like land_history's (a fifth in the large
        projects, sign times over the three years), as lines: small histories for tests."""
        lines = []
        for _ in range(n):
            sign = HISTORY_START + timedelta(seconds=self.rng.randint(0, HISTORY_DAYS * 86400 - 1))
            lines.append(self._line("+I", self._project(), self._new_cid(), sign))
        return lines

    def batch(self, n: int) -> list[str]:
        rng, lines = self.rng, []
        self.now += timedelta(hours=6)
        for _ in range(n):
            r = rng.random()
            if r < 0.02:  # late: a new contract signed up to 30 days ago
                sign = self.now - timedelta(seconds=rng.randint(0, 30 * 86400))
                lines.append(self._line("+I", self._project(), self._new_cid(), sign))
            elif r < 0.03:  # update of an existing contract: new time, sometimes another project
                sign = HISTORY_START + timedelta(seconds=rng.randint(0, HISTORY_DAYS * 86400))
                lines.append(self._line("+U", self._project(), rng.randint(1, self.max_cid), sign))
            elif r < 0.035:  # delete
                lines.append(json.dumps({"op": "-D", "contract_id": rng.randint(1, self.max_cid),
                                         "op_ts": self._tick()}))
            elif r < 0.045 and lines:  # duplicate of an event of this batch
                lines.append(rng.choice(lines))
            else:  # a new contract signed now
                sign = self.now - timedelta(seconds=rng.randint(0, 6 * 3600))
                lines.append(self._line("+I", self._project(), self._new_cid(), sign))
        return lines

    def _new_cid(self) -> int:
        cid = self.next_cid
        self.next_cid += 1
        self.max_cid = cid
        return cid
