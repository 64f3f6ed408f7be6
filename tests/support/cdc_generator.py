"""CDC test support, the generator of landed batches with every case the ingest must handle.

Generator cases (labels of ``generate_labeled_batches``; each GeneratedLine also carries the
outcome the oracle gives it when every batch file is its own micro-batch)
-------------------------------------------------------------------------------------------
  insert          +I of a new contract; sign_time on one of ``n_days`` days from base_date,
                  ~30% exactly 00:00:00, ~5% 23:59:59, else a random second
  tie_insert      +I copying the (project, sign_time) of a live contract
  late_insert     +I (batch >= 1) 1-3 days before the earliest sign_time seen so far (bounded
                  by ``max_late_days`` before base_date; then a random old day below base_date)
  segment_burst   3 +I of one project on 3 different days in a row (first at 00:00:00)
  duplicate       verbatim copy of a valid line of an earlier batch (noop if it was the
                  contract's latest event, stale if older, before_image for a -U, applied if it
                  re-wins a same-op_ts tie)
  stale_update    +U with op_ts 1 ms-10 s older than the contract's applied change (made in an
                  earlier batch), a different image -> stale
  stale_delete    same with -D of a live contract -> stale (stays live)
  update_time / update_project / update_both / update_amount
                  +U of a live contract changing sign_time / project / both / amount only;
                  about half preceded by
  before_image    the -U before-image (old image, same op_ts as its +U, the line before)
  noop_update     +I/+U with the identical image, amount reformatted ("12.5" vs 12.50, null vs
                  absent) -> noop
  tie_op_ts       two +U of one contract with the same op_ts, consecutive lines: the 2nd wins
  cross_file_tie  +U with op_ts EQUAL to the contract's applied op_ts from an earlier batch and
                  a different image: the later file wins -> applied
  delete          -D of a live contract (30% minimal: op, contract_id, op_ts only) -> applied
  reinsert        +I of a deleted contract, new op_ts and image -> applied
  delete_unseen   -D of a never-seen contract id -> noop (tombstone)
  bad_<kind>      kinds in BAD_KINDS, round robin; floor(total_lines * bad_rate) in all
op_ts: one clock from base_date 09:00:00.000, +0-2.5 s per event (5% equal to the previous
one), +1-60 min between batches; only duplicate/stale_*/cross_file_tie go back in time, and
only for contracts not yet touched in the same batch (so emission order = order-key order per
contract and the generator's expected outcomes are exact).
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import random
from decimal import Decimal
from typing import Optional

from cdc_events import _CENT, UPSERT_OPS, format_op_ts, format_sign_time, parse_line

# --------------------------------------------------------------------------------------------
# Generator
# --------------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class GeneratedLine:
    """One generated line with the case it exercises and its outcome under the oracle rules
    when each batch file is consumed as its own micro-batch, in file-name order."""
    label: str
    line: str
    expected: str          # one of OUTCOMES
    contract_id: Optional[int] = None


# Cases the generator guarantees (once enough room: n_batches >= 2, and roughly
# events_per_batch * (n_batches - 1) >= 3 * len(REQUIRED_CASES)).
REQUIRED_CASES = (
    "insert", "tie_insert", "late_insert", "segment_burst", "duplicate",
    "stale_update", "stale_delete", "update_time", "update_project", "update_both",
    "update_amount", "before_image", "noop_update", "tie_op_ts", "cross_file_tie",
    "delete", "reinsert", "delete_unseen",
)
BAD_KINDS = (
    "invalid_json", "unknown_op", "null_contract_id", "bad_sign_time", "bad_op_ts",
    "missing_op", "bad_project_id", "bad_amount",
)
_BAD_EXPECTED_REASON = {
    "invalid_json": "invalid_json", "unknown_op": "unknown_op",
    "null_contract_id": "bad_contract_id", "bad_sign_time": "bad_sign_time",
    "bad_op_ts": "bad_op_ts", "missing_op": "missing_op",
    "bad_project_id": "bad_project_id", "bad_amount": "bad_amount",
}

DEFAULT_WEIGHTS = {
    "insert": 30, "tie_insert": 6, "late_insert": 3, "segment_burst": 3, "duplicate": 5,
    "stale_update": 3, "stale_delete": 1, "update_time": 6, "update_project": 4,
    "update_both": 2, "update_amount": 3, "noop_update": 3, "tie_op_ts": 2,
    "cross_file_tie": 2, "delete": 6, "reinsert": 3, "delete_unseen": 1,
}
_CASE_LINES = {"segment_burst": 3, "tie_op_ts": 2, "before_image": 2}


class _Raw:
    """JSON text written verbatim (a number literal such as 12.50)."""

    def __init__(self, text: str):
        self.text = text


def _dumps(obj: dict) -> str:
    parts = []
    for k, v in obj.items():
        parts.append(json.dumps(k) + ": " + (v.text if isinstance(v, _Raw) else json.dumps(v)))
    return "{" + ", ".join(parts) + "}"


@dataclasses.dataclass
class _GenState:
    key: tuple
    live: bool
    image: Optional[tuple]     # (project_id, sign_time datetime, amount Decimal|None)
    last_batch: int


class _IndexedSet:
    """Insertion-ordered set with O(1) add/remove and deterministic random choice."""

    def __init__(self):
        self.items: list = []
        self.pos: dict = {}

    def add(self, x):
        if x not in self.pos:
            self.pos[x] = len(self.items)
            self.items.append(x)

    def discard(self, x):
        i = self.pos.pop(x, None)
        if i is not None:
            last = self.items.pop()
            if i < len(self.items):
                self.items[i] = last
                self.pos[last] = i

    def __len__(self):
        return len(self.items)

    def choice(self, rng):
        return self.items[rng.randrange(len(self.items))] if self.items else None


class _Generator:
    def __init__(self, seed, n_batches, events_per_batch, n_projects, bad_rate, base_date,
                 n_days, weights, require_all_cases, max_late_days):
        self.rng = random.Random(seed)
        self.max_late_days = max(1, int(max_late_days))
        self.n_batches = n_batches
        self.epb = events_per_batch
        self.projects = list(range(1, max(1, n_projects) + 1))
        self.bad_rate = bad_rate
        self.base = _dt.datetime.strptime(str(base_date)[:10], "%Y-%m-%d")
        self.n_days = max(1, n_days)
        self.weights = dict(DEFAULT_WEIGHTS if weights is None else weights)
        self.require = list(REQUIRED_CASES) if require_all_cases else []
        self.rng.shuffle(self.require)
        self.next_cid = 1000 + self.rng.randrange(100)
        self.state: dict[int, _GenState] = {}
        self.live = _IndexedSet()
        self.dead = _IndexedSet()
        self.known = _IndexedSet()
        self.clock = self.base + _dt.timedelta(hours=9)
        self.min_sign_time: Optional[_dt.datetime] = None
        self.pool: list[tuple[int, str, int]] = []  # (contract_id, raw line, batch) of valid lines
        self.bad_done = 0
        self.bad_offset = self.rng.randrange(len(BAD_KINDS))
        self.total_lines = 0

    # -- helpers ------------------------------------------------------------------------------
    def new_cid(self) -> int:
        cid = self.next_cid
        self.next_cid += self.rng.choice((1, 1, 1, 2, 3))
        return cid

    def tick(self) -> _dt.datetime:
        step = 0 if self.rng.random() < 0.05 else self.rng.randint(1, 2500)
        self.clock += _dt.timedelta(milliseconds=step)
        return self.clock

    def rand_sign_time(self, day: Optional[int] = None, midnight: Optional[bool] = None):
        if day is None:
            day = self.rng.randrange(self.n_days)
        d = self.base + _dt.timedelta(days=day)
        r = self.rng.random()
        if midnight or (midnight is None and r < 0.3):
            return d
        if midnight is None and r < 0.35:
            return d + _dt.timedelta(hours=23, minutes=59, seconds=59)
        return d + _dt.timedelta(seconds=self.rng.randrange(1, 86400))

    def rand_amount(self) -> Optional[Decimal]:
        if self.rng.random() < 0.15:
            return None
        return Decimal(self.rng.randrange(0, 5_000_000)) / 100 + Decimal("0.00")

    def amount_field(self, obj: dict, amount: Optional[Decimal], reformat: bool = False):
        r = self.rng.random()
        if amount is None:
            if r < 0.5:
                obj["amount"] = None
            return
        text = format(amount.quantize(_CENT), "f")
        if reformat:
            text = format(amount.normalize(), "f")  # "12.5" for 12.50, "100" for 100.00
        if r < 0.6:
            obj["amount"] = text
        else:
            obj["amount"] = _Raw(text)

    def line_for(self, op, cid, image, op_ts, reformat=False, minimal=False) -> str:
        obj: dict = {"op": op}
        if image is not None and not minimal:
            obj["project_id"] = image[0]
        obj["contract_id"] = cid
        if image is not None and not minimal:
            obj["sign_time"] = format_sign_time(image[1])
            self.amount_field(obj, image[2], reformat)
        obj["op_ts"] = format_op_ts(op_ts)
        return _dumps(obj)

    def note_sign_time(self, t: _dt.datetime):
        if self.min_sign_time is None or t < self.min_sign_time:
            self.min_sign_time = t

    # -- the mirror of the oracle rules (emission order == order-key order, see below) -------
    def emit(self, label, op, cid, image, op_ts, line=None, reformat=False, minimal=False,
             pool=True) -> GeneratedLine:
        if line is None:
            line = self.line_for(op, cid, image, op_ts, reformat, minimal)
        key = (op_ts, self.b, len(self.lines) + 1)
        st = self.state.get(cid)
        if op == "-U":
            outcome = "before_image"
        elif st is not None and key <= st.key:
            outcome = "stale"
        elif op in UPSERT_OPS:
            outcome = "noop" if (st is not None and st.live and st.image == image) else "applied"
            self.state[cid] = _GenState(key, True, image, self.b)
            self.note_sign_time(image[1])
            self.live.add(cid)
            self.dead.discard(cid)
            self.known.add(cid)
        else:
            outcome = "applied" if (st is not None and st.live) else "noop"
            self.state[cid] = _GenState(key, False, None, self.b)
            self.live.discard(cid)
            self.dead.add(cid)
            self.known.add(cid)
        self.touched.add(cid)
        if pool:
            self.pool.append((cid, line, self.b))
        g = GeneratedLine(label, line, outcome, cid)
        self.lines.append(g)
        return g

    # Back-dated events (duplicate, stale_*, cross_file_tie) are only made for contracts not yet
    # touched in the current batch; all other events use the monotone clock.  Hence, per
    # contract, emission order equals order-key order and the sequential mirror is exact.
    def pick_untouched(self, live_only=False) -> Optional[int]:
        src = self.live if live_only else self.known
        for _ in range(30):
            c = src.choice(self.rng)
            if c is None:
                return None
            if c not in self.touched and self.state[c].last_batch < self.b:
                return c
        return None

    def pick_duplicate(self):
        for _ in range(30):
            if not self.pool:
                return None
            e = self.pool[self.rng.randrange(len(self.pool))]
            if e[2] < self.b and e[0] not in self.touched:
                return e
        return None

    def other_project(self, p):
        others = [q for q in self.projects if q != p]
        return self.rng.choice(others) if others else None

    # -- cases ----------------------------------------------------------------------------------
    def do_case(self, kind: str, room: int) -> bool:
        """Emit one case of `kind`; False if not feasible now (nothing emitted)."""
        rng = self.rng
        if _CASE_LINES.get(kind, 1) > room:
            return False
        if kind == "insert":
            img = (rng.choice(self.projects), self.rand_sign_time(), self.rand_amount())
            self.emit("insert", "+I", self.new_cid(), img, self.tick())
            return True
        if kind == "tie_insert":
            if not self.live:
                return False
            other = self.state[self.live.choice(rng)].image
            img = (other[0], other[1], self.rand_amount())
            self.emit("tie_insert", "+I", self.new_cid(), img, self.tick())
            return True
        if kind == "late_insert":
            if self.b == 0 or self.min_sign_time is None:
                return False
            day0 = self.min_sign_time.replace(hour=0, minute=0, second=0)
            d = day0 - _dt.timedelta(days=rng.randint(1, 3))
            floor = self.base - _dt.timedelta(days=self.max_late_days)
            if d < floor:  # history floor reached: an old segment below the base range
                d = floor + _dt.timedelta(days=rng.randrange(max(1, self.max_late_days)))
            t = d if rng.random() < 0.4 else d + _dt.timedelta(seconds=rng.randrange(1, 86400))
            img = (rng.choice(self.projects), t, self.rand_amount())
            self.emit("late_insert", "+I", self.new_cid(), img, self.tick())
            return True
        if kind == "segment_burst":
            if self.n_days < 2:
                return False
            p = rng.choice(self.projects)
            days = rng.sample(range(self.n_days), min(3, self.n_days))
            for i, day in enumerate(days):
                img = (p, self.rand_sign_time(day, midnight=(i == 0) or None), self.rand_amount())
                self.emit("segment_burst", "+I", self.new_cid(), img, self.tick())
            return True
        if kind == "duplicate":
            e = self.pick_duplicate()
            if e is None:
                return False
            cid, line, _ = e
            ev = parse_line(line)
            img = (ev.project_id, ev.sign_time, ev.amount) if ev.op != "-D" else None
            self.emit("duplicate", ev.op, cid, img, ev.op_ts, line=line, pool=False)
            return True
        if kind in ("stale_update", "stale_delete", "cross_file_tie"):
            cid = self.pick_untouched(live_only=(kind == "stale_delete"))
            if cid is None:
                return False
            st = self.state[cid]
            if kind == "stale_delete":
                op_ts = st.key[0] - _dt.timedelta(milliseconds=rng.randint(1, 10_000))
                self.emit(kind, "-D", cid, st.image, op_ts, minimal=rng.random() < 0.3)
                return True
            base = st.image or (rng.choice(self.projects), self.rand_sign_time(), None)
            img = self.changed_image(base, rng.choice(("time", "project", "both", "amount")))
            if kind == "stale_update":
                op_ts = st.key[0] - _dt.timedelta(milliseconds=rng.randint(1, 10_000))
            else:
                op_ts = st.key[0]  # same op_ts as the applied change, later file: it wins
            self.emit(kind, "+U", cid, img, op_ts)
            return True
        if kind in ("update_time", "update_project", "update_both", "update_amount",
                    "before_image"):
            if not self.live:
                return False
            if kind in ("update_project", "update_both") and len(self.projects) < 2:
                return False
            cid = self.live.choice(rng)
            old = self.state[cid].image
            how = kind[len("update_"):] if kind != "before_image" else \
                rng.choice(("time", "project", "both"))
            if how in ("project", "both") and self.other_project(old[0]) is None:
                how = "time"
            img = self.changed_image(old, how)
            label = "update_" + how
            want_before = kind == "before_image" or (room >= 2 and rng.random() < 0.5)
            op_ts = self.tick()
            if want_before and room >= 2:
                self.emit("before_image", "-U", cid, old, op_ts)
            self.emit(label, "+U", cid, img, op_ts)
            return True
        if kind == "noop_update":
            if not self.live:
                return False
            cid = self.live.choice(rng)
            self.emit("noop_update", rng.choice(UPSERT_OPS), cid, self.state[cid].image,
                      self.tick(), reformat=True)
            return True
        if kind == "tie_op_ts":
            if not self.live:
                return False
            cid = self.live.choice(rng)
            op_ts = self.tick()
            img1 = self.changed_image(self.state[cid].image, "time")
            img2 = self.changed_image(img1, rng.choice(("time", "amount")))
            self.emit("tie_op_ts", "+U", cid, img1, op_ts)
            self.emit("tie_op_ts", "+U", cid, img2, op_ts)  # same op_ts, later line: wins
            return True
        if kind == "delete":
            if not self.live:
                return False
            cid = self.live.choice(rng)
            self.emit("delete", "-D", cid, self.state[cid].image, self.tick(),
                      minimal=rng.random() < 0.3)
            return True
        if kind == "reinsert":
            if not self.dead:
                return False
            cid = self.dead.choice(rng)
            img = (rng.choice(self.projects), self.rand_sign_time(), self.rand_amount())
            self.emit("reinsert", "+I", cid, img, self.tick())
            return True
        if kind == "delete_unseen":
            img = (rng.choice(self.projects), self.rand_sign_time(), self.rand_amount())
            self.emit("delete_unseen", "-D", self.new_cid(), img, self.tick(),
                      minimal=rng.random() < 0.5)
            return True
        raise ValueError(f"unknown case {kind!r}")

    def changed_image(self, old: tuple, how: str) -> tuple:
        p, t, a = old
        if how in ("time", "both"):
            for _ in range(10):
                nt = self.rand_sign_time()
                if nt != t:
                    break
            t = nt if nt != t else t + _dt.timedelta(seconds=1)
        if how in ("project", "both"):
            q = self.other_project(p)
            p = q if q is not None else p
        if how == "amount":
            na = self.rand_amount()
            a = na if na != a else (a or Decimal("0.00")) + Decimal("1.00")
        return (p, t, a)

    def bad_line(self) -> GeneratedLine:
        kind = BAD_KINDS[(self.bad_offset + self.bad_done) % len(BAD_KINDS)]
        self.bad_done += 1
        rng = self.rng
        cid = self.live.choice(rng) if self.live and rng.random() < 0.5 \
            else self.next_cid + 10_000
        img = (rng.choice(self.projects), self.rand_sign_time(), self.rand_amount())
        op_ts = self.clock + _dt.timedelta(milliseconds=1)  # does not advance the clock
        obj: dict = {"op": rng.choice(UPSERT_OPS), "project_id": img[0], "contract_id": cid,
                     "sign_time": format_sign_time(img[1]),
                     "amount": format(img[2], "f") if img[2] is not None else None,
                     "op_ts": format_op_ts(op_ts)}
        if kind == "invalid_json":
            text = _dumps(obj)
            cut = rng.randint(1, len(text) - 2)
            line = text[:cut] if rng.random() < 0.7 else "not json at all"
        else:
            if kind == "unknown_op":
                obj["op"] = "X"
            elif kind == "missing_op":
                del obj["op"]
            elif kind == "null_contract_id":
                obj["contract_id"] = None
            elif kind == "bad_sign_time":
                obj["sign_time"] = "2024-13-45 25:00:00"
            elif kind == "bad_op_ts":
                obj["op_ts"] = rng.choice(("2024-03-01 25:61:00.000", "not-a-timestamp"))
            elif kind == "bad_project_id":
                obj["project_id"] = rng.choice((None, "p1"))
            elif kind == "bad_amount":
                obj["amount"] = "abc"
            line = _dumps(obj)
        g = GeneratedLine("bad_" + kind, line, "quarantined", None)
        self.lines.append(g)
        return g

    # -- driver ---------------------------------------------------------------------------------
    def run(self) -> list[list[GeneratedLine]]:
        out = []
        kinds = sorted(self.weights)
        wts = [self.weights[k] for k in kinds]
        for b in range(self.n_batches):
            self.b = b
            self.lines: list[GeneratedLine] = []
            self.touched: set[int] = set()
            if b > 0:
                self.clock += _dt.timedelta(seconds=self.rng.randint(60, 3600))
            # error diffusion: floor(total * rate) bad lines over the whole run
            n_bad = (int((self.total_lines + self.epb) * self.bad_rate)
                     - int(self.total_lines * self.bad_rate))
            while len(self.lines) < self.epb:
                room = self.epb - len(self.lines)
                if n_bad > 0 and self.rng.random() < n_bad / room:
                    self.bad_line()
                    n_bad -= 1
                    continue
                room -= n_bad
                done = False
                if self.require and b > 0 and (
                        self.rng.random() < 0.3 or room <= 3 * len(self.require)):
                    for i, k in enumerate(self.require):
                        if self.do_case(k, room):
                            self.require.pop(i)
                            done = True
                            break
                for _ in range(20):
                    if done:
                        break
                    done = self.do_case(self.rng.choices(kinds, wts)[0], room)
                if not done:
                    self.do_case("insert", room)
            self.total_lines += len(self.lines)
            out.append(self.lines)
        return out


def generate_labeled_batches(seed: int, n_batches: int, events_per_batch: int,
                             n_projects: int = 5, bad_rate: float = 0.03,
                             base_date: str = "2024-03-01", n_days: int = 4,
                             weights: Optional[dict] = None,
                             require_all_cases: bool = True,
                             max_late_days: int = 30) -> list[list[GeneratedLine]]:
    """Like ``generate_batches`` but each line comes with its case label and expected outcome."""
    g = _Generator(seed, n_batches, events_per_batch, n_projects, bad_rate, base_date,
                   n_days, weights, require_all_cases, max_late_days)
    return g.run()


def generate_batches(seed: int, n_batches: int, events_per_batch: int, n_projects: int = 5,
                     bad_rate: float = 0.03, base_date: str = "2024-03-01", n_days: int = 4,
                     weights: Optional[dict] = None,
                     require_all_cases: bool = True,
                     max_late_days: int = 30) -> list[list[str]]:
    """Deterministic CDC stream: per batch, exactly ``events_per_batch`` raw JSON lines.

    Cases (labels of ``generate_labeled_batches``): see REQUIRED_CASES and BAD_KINDS; with
    ``require_all_cases`` each required case appears at least once from batch 1 on (if room)."""
    return [[gl.line for gl in batch] for batch in generate_labeled_batches(
        seed, n_batches, events_per_batch, n_projects, bad_rate, base_date, n_days, weights,
        require_all_cases, max_late_days)]
