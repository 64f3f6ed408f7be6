"""CDC test support for lakerank: event generator and an independent oracle.

Pure Python + pandas + DuckDB; no Spark.  Import as ``cdc`` with ``tests/support`` on sys.path.

Event model (one JSON object per line of a ``.jsonl`` landing file)
------------------------------------------------------------------
``op`` (``+I``, ``+U``, ``-U``, ``-D``), ``project_id`` (int), ``contract_id`` (int),
``sign_time`` (``yyyy-MM-dd HH:mm:ss``), ``amount`` (decimal string or JSON number, optional),
``op_ts`` (``yyyy-MM-dd HH:mm:ss.SSS``).

Validation (first failing check gives the quarantine reason, see ``parse_line``):
  blank line (only whitespace)                 -> ignored entirely (not even "landed")
  not JSON                                     -> ``invalid_json``
  JSON but not an object                       -> ``not_object``
  ``op`` missing / null                        -> ``missing_op``
  ``op`` not one of +I +U -U -D (exact)        -> ``unknown_op``
  ``contract_id`` missing/null/non-integer     -> ``bad_contract_id``
  ``op_ts`` missing/null/unparsable            -> ``bad_op_ts``
  (+I/+U/-U only) ``project_id`` bad           -> ``bad_project_id``
  (+I/+U/-U only) ``sign_time`` bad            -> ``bad_sign_time``
  ``amount`` present (not null) but not a number fitting decimal(18,2) -> ``bad_amount``
      (checked for every op, ``-D`` included; ``Oracle(check_amount_on_delete=False)`` turns
      that off for ``-D``)

"integer" means a JSON integer literal (not a bool, not ``1.0``, not a string) in the signed
64-bit range.  ``sign_time`` must be exactly ``dddd-dd-dd dd:dd:dd`` and a real date-time;
``op_ts`` must be exactly ``dddd-dd-dd dd:dd:dd.f`` with 1-3 fraction digits (Spark's ``SSS``
accepts 1-3 when parsing) and a real date-time (the generator always writes 3 digits).
``amount`` is a JSON number or a string holding a finite decimal (surrounding whitespace
allowed); it is rounded HALF_UP to 2 places (Spark's cast to decimal(18,2)) and must then have
at most 16 integer digits.

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

import bisect
import dataclasses
import datetime as _dt
import decimal
import glob
import json
import os
import random
import re
from collections import Counter
from decimal import Decimal
from typing import Any, Iterable, Optional, Sequence, Union

import pandas as pd

__all__ = [
    "OPS", "OUTCOMES", "QUARANTINE_REASONS", "RANK_FUNCTIONS",
    "Event", "Quarantined", "parse_line", "split_lines", "quantize_amount",
    "parse_sign_time", "parse_op_ts", "format_sign_time", "format_op_ts",
    "SEGMENT_SECONDS", "segment_start", "batch_file_name", "write_batch", "write_batches",
    "GeneratedLine", "generate_labeled_batches", "generate_batches", "REQUIRED_CASES",
    "Oracle",
]

OPS = ("+I", "+U", "-U", "-D")
UPSERT_OPS = ("+I", "+U")
OUTCOMES = ("applied", "noop", "stale", "before_image", "quarantined")
QUARANTINE_REASONS = (
    "invalid_json", "not_object", "missing_op", "unknown_op", "bad_contract_id",
    "bad_op_ts", "bad_project_id", "bad_sign_time", "bad_amount",
)
RANK_FUNCTIONS = ("dense_rank", "rank", "row_number")

INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1
_CENT = Decimal("0.01")
_AMOUNT_LIMIT = Decimal(10) ** 16  # decimal(18,2): at most 16 integer digits
_SIGN_TIME_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$")
_OP_TS_RE = re.compile(r"^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{1,3})$")
_EPOCH = _dt.datetime(1970, 1, 1)


# --------------------------------------------------------------------------------------------
# Parsing
# --------------------------------------------------------------------------------------------

def _is_int64(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and INT64_MIN <= v <= INT64_MAX


def parse_sign_time(s: Any) -> Optional[_dt.datetime]:
    """``yyyy-MM-dd HH:mm:ss`` -> naive datetime, or None if unparsable."""
    if not isinstance(s, str):
        return None
    m = _SIGN_TIME_RE.match(s)
    if not m:
        return None
    try:
        return _dt.datetime(*(int(g) for g in m.groups()))
    except ValueError:
        return None


def parse_op_ts(s: Any) -> Optional[_dt.datetime]:
    """``yyyy-MM-dd HH:mm:ss.SSS`` (1-3 fraction digits) -> naive datetime, or None."""
    if not isinstance(s, str):
        return None
    m = _OP_TS_RE.match(s)
    if not m:
        return None
    y, mo, d, h, mi, se, frac = m.groups()
    try:
        return _dt.datetime(int(y), int(mo), int(d), int(h), int(mi), int(se),
                            int(frac.ljust(3, "0")) * 1000)
    except ValueError:
        return None


def format_sign_time(t: _dt.datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S")


def format_op_ts(t: _dt.datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S") + ".%03d" % (t.microsecond // 1000)


def quantize_amount(v: Any) -> Optional[Decimal]:
    """Amount as stored in decimal(18,2): None stays None; raises ValueError if not a number."""
    if v is None:
        return None
    if isinstance(v, bool):
        raise ValueError("bool is not a number")
    if isinstance(v, (int, Decimal)):
        d = Decimal(v)
    elif isinstance(v, float):
        d = Decimal(repr(v))
    elif isinstance(v, str):
        try:
            d = Decimal(v.strip())
        except decimal.InvalidOperation:
            raise ValueError(f"not a number: {v!r}") from None
    else:
        raise ValueError(f"not a number: {v!r}")
    if not d.is_finite():
        raise ValueError(f"not finite: {v!r}")
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        q = d.quantize(_CENT, rounding=decimal.ROUND_HALF_UP)
    if abs(q) >= _AMOUNT_LIMIT:
        raise ValueError(f"does not fit decimal(18,2): {v!r}")
    return q


def _json_constant(name: str):
    # NaN / Infinity / -Infinity literals are not JSON.
    raise ValueError(f"non-standard JSON constant {name}")


@dataclasses.dataclass(frozen=True)
class Event:
    """A valid (non-quarantined) event."""
    file_name: str
    line_no: int
    op: str
    contract_id: int
    op_ts: _dt.datetime
    project_id: Optional[int]          # None possible only for -D (its image is not used)
    sign_time: Optional[_dt.datetime]  # None possible only for -D
    amount: Optional[Decimal]
    raw: str

    @property
    def key(self) -> tuple:
        return (self.op_ts, self.file_name, self.line_no)

    @property
    def image(self) -> tuple:
        return (self.project_id, self.sign_time, self.amount)


@dataclasses.dataclass(frozen=True)
class Quarantined:
    file_name: str
    line_no: int
    reason: str
    raw: str


def parse_line(line: str, file_name: str = "", line_no: int = 0,
               check_amount_on_delete: bool = True) -> Union[Event, Quarantined, None]:
    """Parse one raw line. Returns None for a blank line, else an Event or a Quarantined."""
    raw = line.rstrip("\r\n")
    if raw.strip() == "":
        return None

    def bad(reason: str) -> Quarantined:
        return Quarantined(file_name, line_no, reason, raw)

    try:
        obj = json.loads(raw, parse_float=Decimal, parse_constant=_json_constant)
    except ValueError:
        return bad("invalid_json")
    if not isinstance(obj, dict):
        return bad("not_object")
    op = obj.get("op")
    if op is None:
        return bad("missing_op")
    if op not in OPS:
        return bad("unknown_op")
    cid = obj.get("contract_id")
    if not _is_int64(cid):
        return bad("bad_contract_id")
    op_ts = parse_op_ts(obj.get("op_ts"))
    if op_ts is None:
        return bad("bad_op_ts")
    pid = obj.get("project_id")
    sign_time = parse_sign_time(obj.get("sign_time"))
    if op != "-D":
        if not _is_int64(pid):
            return bad("bad_project_id")
        if sign_time is None:
            return bad("bad_sign_time")
    else:
        # -D carries an optional before-image; it is not validated and not used.
        pid = pid if _is_int64(pid) else None
    amount = None
    if op != "-D" or check_amount_on_delete:
        try:
            amount = quantize_amount(obj.get("amount"))
        except ValueError:
            return bad("bad_amount")
    return Event(file_name, line_no, op, cid, op_ts, pid, sign_time, amount, raw)


def split_lines(content: Union[str, Sequence[str]]) -> list[str]:
    """File content (str) or list of lines -> list of physical lines (no terminators).

    A str is split on ``\\n``, ``\\r\\n`` and ``\\r`` only (like Spark's line reader)."""
    if isinstance(content, str):
        parts = re.split(r"\r\n|\r|\n", content)
        if parts and parts[-1] == "":
            parts.pop()  # the terminator of the last line does not open a new line
        return parts
    return [ln.rstrip("\r\n") for ln in content]


# --------------------------------------------------------------------------------------------
# Segments, files
# --------------------------------------------------------------------------------------------

#: The pipeline's segment length (a business day): segment_start's default.
SEGMENT_SECONDS = 86400


def segment_start(ts: Any, segment_seconds: int = SEGMENT_SECONDS) -> pd.Timestamp:
    """Floor a naive wall-clock timestamp to its segment start (epoch-second arithmetic)."""
    t = pd.Timestamp(ts)
    if t.tzinfo is not None:
        raise ValueError("segment_start expects a naive timestamp")
    us = (t.to_pydatetime() - _EPOCH) // _dt.timedelta(microseconds=1)
    seg_us = int(segment_seconds) * 1_000_000
    return pd.Timestamp(_EPOCH + _dt.timedelta(microseconds=(us // seg_us) * seg_us))


def batch_file_name(batch_index: int) -> str:
    return f"batch_{batch_index:05d}.jsonl"


def write_batch(landing_dir: Union[str, os.PathLike], batch_index: int,
                lines: Iterable[str]) -> str:
    """Write ``batch_{index:05d}.jsonl`` (one line each, '\\n'-terminated); returns its path.

    Written to a temporary name and renamed, so a concurrent reader never sees half a file."""
    os.makedirs(landing_dir, exist_ok=True)
    path = os.path.join(os.fspath(landing_dir), batch_file_name(batch_index))
    tmp = os.path.join(os.fspath(landing_dir), "." + batch_file_name(batch_index) + ".tmp")
    with open(tmp, "w", encoding="utf-8", newline="\n") as f:
        for ln in lines:
            f.write(ln.rstrip("\r\n") + "\n")
    os.replace(tmp, path)
    return path


def write_batches(landing_dir: Union[str, os.PathLike], batches: Sequence[Sequence[str]],
                  start_index: int = 0) -> list[str]:
    return [write_batch(landing_dir, start_index + i, b) for i, b in enumerate(batches)]


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
