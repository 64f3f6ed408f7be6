"""CDC test support, the event model: parsing and validating a landed line as the ingest does,
formatting, segment starts, and landing batch files.

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
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import decimal
import json
import os
import re
from decimal import Decimal
from typing import Any, Iterable, Optional, Sequence, Union

import pandas as pd

__all__ = [
    "OPS", "UPSERT_OPS", "OUTCOMES", "QUARANTINE_REASONS", "RANK_FUNCTIONS",
    "Event", "Quarantined", "parse_line", "split_lines", "quantize_amount",
    "parse_sign_time", "parse_op_ts", "format_sign_time", "format_op_ts",
    "SEGMENT_SECONDS", "segment_start", "batch_file_name", "write_batch", "write_batches",
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
