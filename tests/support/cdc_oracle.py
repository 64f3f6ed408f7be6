"""CDC test support, the independent oracle: the live contracts and ranks from the landed
lines, with DuckDB.

Application rules (per contract; what the Spark implementation follows too)
---------------------------------------------------------------------------
Order key of an event = ``(op_ts, file_name, line_no)`` (line numbers 1-based, blank lines
counted in the numbering).  The events of one micro-batch (one ``consume`` call, or all files of
one ``consume_many`` call) are sorted by order key and applied one by one against the state left
by earlier micro-batches:

  valid ``-U``                                    -> ``before_image`` (never changes anything,
                                                     never advances the key, whatever its order)
  order key <= contract's last advanced key       -> ``stale``
  ``+I``/``+U``, contract live with identical image -> ``noop``    (key advances)
  ``+I``/``+U``, otherwise                        -> ``applied`` (live, image replaced)
  ``-D``, contract live                           -> ``applied`` (deleted; key advances)
  ``-D``, contract not live (never seen/deleted)  -> ``noop``    (tombstone: key advances)

Image = (project_id, sign_time, amount as Decimal quantized to 0.01 or None).
Invariant: events_landed = applied + noop + stale + before_image + quarantined.
The final live set is independent of how files are grouped into micro-batches (it is the
last-writer-wins by order key); the outcome counts are not.
"""
from __future__ import annotations

import bisect
import dataclasses
import datetime as _dt
import glob
import os
from collections import Counter
from typing import Any, Optional, Sequence, Union

import pandas as pd

from cdc_events import (
    OUTCOMES,
    RANK_FUNCTIONS,
    UPSERT_OPS,
    Event,
    Quarantined,
    batch_file_name,
    parse_line,
    segment_start,
    split_lines,
)

# --------------------------------------------------------------------------------------------
# Oracle
# --------------------------------------------------------------------------------------------

@dataclasses.dataclass
class _ContractState:
    key: tuple
    live: bool
    image: Optional[tuple]


_DUCKDB = None
_NS_MAX = _dt.datetime(2262, 4, 11)


def _duckdb_cursor():
    """A cursor on one process-wide in-memory DuckDB (connecting costs ~30 ms, a cursor ~0)."""
    global _DUCKDB
    import duckdb

    if _DUCKDB is None:
        _DUCKDB = duckdb.connect(":memory:")
    return _DUCKDB.cursor()


class Oracle:
    """Plain-Python reference of the CDC semantics (see module docstring)."""

    def __init__(self, check_amount_on_delete: bool = True):
        self.check_amount_on_delete = check_amount_on_delete
        self._state: dict[int, _ContractState] = {}
        self._counts = Counter({k: 0 for k in ("events_landed",) + OUTCOMES})
        self._reasons: Counter = Counter()
        self._log: list[dict] = []
        self.files: list[str] = []

    # -- feeding --------------------------------------------------------------------------------
    def consume(self, file_name: str, lines: Union[str, Sequence[str]]) -> dict:
        """Consume one file as one micro-batch. Returns this call's outcome counts."""
        return self.consume_many([(file_name, lines)])

    def consume_many(self, files: Sequence[tuple[str, Union[str, Sequence[str]]]]) -> dict:
        """Consume several files as ONE micro-batch (one build that picked them all up)."""
        before = dict(self._counts)
        valid: list[Event] = []
        for file_name, content in files:
            file_name = os.path.basename(os.fspath(file_name))
            self.files.append(file_name)
            for i, ln in enumerate(split_lines(content), start=1):
                ev = parse_line(ln, file_name, i, self.check_amount_on_delete)
                if ev is None:
                    continue
                self._counts["events_landed"] += 1
                if isinstance(ev, Quarantined):
                    self._count(ev, "quarantined", ev.reason)
                elif ev.op == "-U":
                    self._count(ev, "before_image")
                else:
                    valid.append(ev)
        valid.sort(key=lambda e: e.key)
        for ev in valid:
            self._count(ev, self._apply(ev))
        return {k: self._counts[k] - before.get(k, 0) for k in self._counts}

    def consume_file(self, path: Union[str, os.PathLike]) -> dict:
        with open(path, encoding="utf-8", newline="") as f:
            return self.consume(os.path.basename(os.fspath(path)), f.read())

    def consume_dir(self, landing_dir: Union[str, os.PathLike], pattern: str = "*.jsonl",
                    one_batch: bool = False) -> dict:
        """Consume the not-yet-consumed files of a folder in file-name order (each file its own
        micro-batch, or all of them as one with ``one_batch``)."""
        paths = sorted(glob.glob(os.path.join(os.fspath(landing_dir), pattern)),
                       key=os.path.basename)
        paths = [p for p in paths if os.path.basename(p) not in self.files]
        if one_batch:
            items = []
            for p in paths:
                with open(p, encoding="utf-8", newline="") as f:
                    items.append((os.path.basename(p), f.read()))
            return self.consume_many(items)
        before = dict(self._counts)
        for p in paths:
            self.consume_file(p)
        return {k: self._counts[k] - before.get(k, 0) for k in self._counts}

    @classmethod
    def from_batches(cls, batches: Sequence[Sequence[str]], **kw) -> "Oracle":
        o = cls(**kw)
        for i, b in enumerate(batches):
            o.consume(batch_file_name(i), b)
        return o

    def _count(self, ev, outcome: str, reason: Optional[str] = None):
        self._counts[outcome] += 1
        if reason:
            self._reasons[reason] += 1
        self._log.append({
            "file_name": ev.file_name, "line_no": ev.line_no,
            "op": getattr(ev, "op", None), "contract_id": getattr(ev, "contract_id", None),
            "op_ts": getattr(ev, "op_ts", None), "outcome": outcome, "reason": reason,
            "raw": ev.raw,
        })

    def _apply(self, ev: Event) -> str:
        st = self._state.get(ev.contract_id)
        if st is not None and ev.key <= st.key:
            return "stale"
        if ev.op in UPSERT_OPS:
            img = ev.image
            outcome = "noop" if (st is not None and st.live and st.image == img) else "applied"
            self._state[ev.contract_id] = _ContractState(ev.key, True, img)
            return outcome
        # -D
        outcome = "applied" if (st is not None and st.live) else "noop"
        self._state[ev.contract_id] = _ContractState(ev.key, False, None)
        return outcome

    # -- results --------------------------------------------------------------------------------
    def counts(self) -> dict:
        return {k: int(self._counts[k]) for k in ("events_landed",) + OUTCOMES}

    def quarantine_reasons(self) -> dict:
        return dict(self._reasons)

    def outcomes(self) -> pd.DataFrame:
        """One row per landed event: file_name, line_no, op, contract_id, op_ts, outcome,
        reason, raw (sorted by file_name, line_no)."""
        cols = ["file_name", "line_no", "op", "contract_id", "op_ts", "outcome", "reason", "raw"]
        df = pd.DataFrame(self._log, columns=cols)
        return df.sort_values(["file_name", "line_no"], kind="stable").reset_index(drop=True)

    def contract_state(self, contract_id: int) -> Optional[dict]:
        st = self._state.get(contract_id)
        if st is None:
            return None
        return {"key": st.key, "live": st.live, "image": st.image}

    def live(self) -> pd.DataFrame:
        rows = [(s.image[0], c, s.image[1], s.image[2])
                for c, s in self._state.items() if s.live]
        rows.sort(key=lambda r: (r[0], r[1]))
        df = pd.DataFrame({
            "project_id": pd.Series([r[0] for r in rows], dtype="int64"),
            "contract_id": pd.Series([r[1] for r in rows], dtype="int64"),
            "sign_time": pd.Series([r[2] for r in rows], dtype="datetime64[ns]"),
            "amount": pd.Series([r[3] for r in rows], dtype="object"),
        })
        return df

    @staticmethod
    def _check_rank_function(rank_function: str):
        if rank_function not in RANK_FUNCTIONS:
            raise ValueError(f"rank_function must be one of {RANK_FUNCTIONS}, "
                             f"got {rank_function!r}")

    def ranks(self, rank_function: str = "dense_rank") -> pd.DataFrame:
        """project_id, contract_id, sign_time, asc_rn over the live set, computed by DuckDB;
        sorted by project_id, asc_rn, contract_id."""
        self._check_rank_function(rank_function)
        order = "sign_time, contract_id" if rank_function == "row_number" else "sign_time"
        live = self.live()[["project_id", "contract_id", "sign_time"]]
        con = _duckdb_cursor()
        try:
            con.register("live_contracts", live)
            df = con.execute(f"""
                select project_id, contract_id, sign_time,
                       {rank_function}() over (partition by project_id order by {order}) as asc_rn
                from live_contracts
                order by project_id, asc_rn, contract_id
            """).df()
        finally:
            con.close()
        return pd.DataFrame({
            "project_id": df["project_id"].astype("int64"),
            "contract_id": df["contract_id"].astype("int64"),
            "sign_time": pd.to_datetime(df["sign_time"]).astype("datetime64[ns]"),
            "asc_rn": df["asc_rn"].astype("int64"),
        })

    def _project_times(self, project_id: int) -> list[_dt.datetime]:
        return sorted(s.image[1] for s in self._state.values()
                      if s.live and s.image[0] == project_id)

    def zipper_value(self, project_id: int, t: Any, rank_function: str = "dense_rank") -> int:
        """Rank positions used by the project's live contracts with sign_time <= t."""
        self._check_rank_function(rank_function)
        t = pd.Timestamp(t).to_pydatetime()
        times = self._project_times(project_id)
        if rank_function == "dense_rank":
            times = sorted(set(times))
        return bisect.bisect_right(times, t)

    def expected_zipper(self, rank_function: str = "dense_rank",
                        open_end: Any = None) -> pd.DataFrame:
        """project_id, ver_start, ver_end, base_max_rn: one row per project and distinct live
        sign_time s (ver_start = s, ver_end = next distinct sign_time or ``open_end`` — NaT by
        default; pass '9999-12-31 23:59:59' for the sentinel form), sorted by project_id,
        ver_start.  Timestamps are datetime64[ns], or datetime64[us] when ``open_end`` does not
        fit the ns range (e.g. the 9999-12-31 sentinel)."""
        self._check_rank_function(rank_function)
        by_project: dict[int, list] = {}
        for s in self._state.values():
            if s.live:
                by_project.setdefault(s.image[0], []).append(s.image[1])
        rows = []
        for p in sorted(by_project):
            times = sorted(by_project[p])
            distinct = sorted(set(times))
            for i, s in enumerate(distinct):
                ver_end = distinct[i + 1] if i + 1 < len(distinct) else open_end
                if rank_function == "dense_rank":
                    n = i + 1
                else:
                    n = bisect.bisect_right(times, s)
                rows.append((p, s, ver_end, n))
        # datetime64[ns] like live(); [us] if the open_end sentinel is beyond the ns range
        end = pd.Timestamp(open_end).to_pydatetime() if open_end is not None else None
        unit = "ns" if end is None or end < _NS_MAX else "us"
        return pd.DataFrame({
            "project_id": pd.Series([r[0] for r in rows], dtype="int64"),
            "ver_start": pd.Series([r[1] for r in rows], dtype=f"datetime64[{unit}]"),
            "ver_end": pd.Series([(end if r[2] is open_end else r[2]) if r[2] is not None
                                  else pd.NaT for r in rows], dtype=f"datetime64[{unit}]"),
            "base_max_rn": pd.Series([r[3] for r in rows], dtype="int64"),
        })

    segment_start = staticmethod(segment_start)
