"""Paimon test vectors as executable lakerank plans: option sets expanded and mapped to
pk_table's, the materialization's capabilities read from its source, and the planner that
turns a vector's steps into commits and checks (paimon_vectors.py has the mapping rules)."""

from __future__ import annotations

import itertools
import json
import pathlib
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Tuple

from paimon_types import Schema, SchemaError, _split_top, parse_type, spark_type
from paimon_values import UnsupportedValue, literal, quote

ROOT = pathlib.Path(__file__).resolve().parents[2]
REL = "{{REL}}"  # placeholder for the relation (lakerank.<model>) in SQL templates


# =====================================================================================
# Options
# =====================================================================================

#: Paimon options that describe storage, writer resources or engine-side jobs rather than what
#: a pk_table stores or emits; they are dropped (with a note) before the options reach pk_table.
PHYSICAL_OPTIONS: Dict[str, str] = {
    "file.format": "storage file format (pk_table stores parquet)",
    "changelog-producer.compaction-interval": "Flink compaction timer (every pk_table commit is a full compaction)",
    "local-merge-buffer-size": "Flink local-merge buffer (a memory setting; merging is the same)",
    "write-buffer-spillable": "writer memory setting",
    "write-buffer-size": "writer memory setting",
    "write-only": "disables writer compaction (pk_table compacts every commit)",
    "sink.key-only-deletes.enabled": "Flink sink option; the key-only -D rows are committed as given (NULL values)",
    "commit.force-compact": "forces a compaction per commit (every pk_table commit is one)",
    "deletion-vectors.enabled": (
        "merge-on-write file layout; logical results are identical (snapshot ids are mapped, see rules)"
    ),
    "deletion-vectors.bitmap64": "deletion-vector bitmap format",
    "deletion-vectors.merge-on-read": "read-side visibility of level-0 files",
    "delete.force-produce-changelog": "a DELETE is always a -D commit in pk_table, so its changelog is always produced",
    "changelog-producer.lookup-wait": "Flink commit/compaction scheduling",
    "num-sorted-run.compaction-trigger": "compaction scheduling",
    "num-sorted-run.stop-trigger": "compaction scheduling",
    "target-file-size": "file sizing",
    "snapshot.num-retained.min": "snapshot expiration",
    "snapshot.num-retained.max": "snapshot expiration",
    "dynamic-bucket.target-row-num": "dynamic bucket sizing",
    "table-read.sequence-number.enabled": "read option of $audit_log (_SEQUENCE_NUMBER column)",
    "force-lookup": "lookup compaction (results identical; snapshot ids mapped)",
}


def _engine(options: Dict[str, str]) -> str:
    return options.get("merge-engine", "deduplicate")


def expand_options(table_options: Dict[str, str]) -> Tuple[List[Tuple[str, Dict[str, str]]], List[str]]:
    """``'a | b'`` parameterised options -> [(label, options)], notes.

    ``'x (<v> only)'`` keeps ``x`` only in variants where another option has value ``v``;
    other parenthesised remarks are dropped into the notes."""
    notes: List[str] = []
    axes: List[Tuple[str, List[Tuple[str, Optional[str]]]]] = []
    for key, raw in table_options.items():
        raw = str(raw)
        remark = None
        m = re.match(r"^(.*?)\s*\((.*)\)\s*$", raw, re.S)
        value = raw
        if m:
            value, remark = m.group(1).strip(), m.group(2).strip()
        cond = None
        if remark and re.search(r"\bsic\b|not a recognised key", remark):
            notes.append(f"option '{key}' not passed: {remark} -- Paimon ignores unknown keys, lakerank "
                         "rejects them")
            continue
        if remark:
            mm = re.fullmatch(r"([\w.\-]+) only", remark)
            if mm:
                cond = mm.group(1)
            elif not re.fullmatch(r"same expectations", remark):
                notes.append(f"option {key}: remark ({remark})")
        alts = [a.strip() for a in value.split("|")] if "|" in value else [value.strip()]
        axes.append((key, [(a, cond) for a in alts]))
    variants: List[Tuple[str, Dict[str, str]]] = []
    multi = [k for k, alts in axes if len(alts) > 1]
    for combo in itertools.product(*[alts for _, alts in axes]):
        opts = {k: v for (k, _), (v, _c) in zip(axes, combo)}
        for (k, _), (_v, c) in zip(axes, combo):
            if c is not None and c not in opts.values():
                del opts[k]
        label = ",".join(f"{k}={opts[k]}" for k in multi if k in opts)
        variants.append((label, opts))
    # variants that differ only in physical options collapse
    seen, out = set(), []
    for label, opts in variants:
        key = tuple(sorted((k, v) for k, v in opts.items() if k not in PHYSICAL_OPTIONS))
        if key in seen:
            continue
        seen.add(key)
        out.append((label, opts))
    if len(out) < len(variants):
        notes.append("variants differing only in physical options run once")
    if len(out) == 1:
        out = [("", out[0][1])]
    else:
        # recompute labels from the axes that still differ
        diff = [k for k in multi if len({o.get(k) for _, o in out}) > 1]
        out = [(",".join(f"{k}={o[k]}" for k in diff if k in o) or label, o) for label, o in out]
    return out, notes


_KERNEL_PROBE: Dict[Tuple[str, str], bool] = {}


def kernel_accepts(key: str, value: str) -> Optional[bool]:
    """Whether lakerank's option parser (python_udfs/paimon/validation.py) accepts ``key=value`` on
    its own (None when the parser cannot be imported)."""
    if (key, value) in _KERNEL_PROBE:
        return _KERNEL_PROBE[(key, value)]
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    try:
        from python_udfs.paimon.errors import PaimonOptionError
        from python_udfs.paimon.validation import parse_options
    except Exception:  # noqa: BLE001 - kernel not written yet / broken
        return None
    try:
        parse_options({key: value}, [("k", "int"), ("v", "int")], ["k"], [])
        ok = True
    except PaimonOptionError:
        ok = False
    except Exception:  # noqa: BLE001
        ok = False
    _KERNEL_PROBE[(key, value)] = ok
    return ok


def lakerank_options(options: Dict[str, str]) -> Tuple[Dict[str, str], List[str]]:
    """The options handed to pk_table (verbatim Paimon keys) and notes on the dropped ones.

    Physical options (PHYSICAL_OPTIONS) are passed verbatim when lakerank's option parser accepts
    them, else dropped with a note; keys Paimon itself ignores (misspelt, marked 'sic' in the
    vector) are dropped; ``primary-key`` becomes pk_table's ``primary_key`` config."""
    out, notes = {}, []
    for k, v in options.items():
        v = str(v)
        if k == "primary-key":
            continue  # pk_table's primary_key config
        if re.search(r"\(sic\b", v):
            notes.append(f"option '{k}' not passed: not a Paimon option key, Paimon ignores it "
                         "(lakerank rejects unknown keys)")
            continue
        if k in PHYSICAL_OPTIONS:
            if kernel_accepts(k, v):
                out[k] = v
                notes.append(f"option '{k}'='{v}' passed (no logical effect: {PHYSICAL_OPTIONS[k]})")
            else:
                notes.append(f"option '{k}'='{v}' not passed (not accepted by lakerank's option parser): "
                             f"{PHYSICAL_OPTIONS[k]}")
            continue
        out[k] = v
    return out, notes


# =====================================================================================
# Capabilities of the materialization (read from its source, so the plan follows it)
# =====================================================================================


def _grep(pattern: str, dirs: Iterable[pathlib.Path], exts=(".sql", ".py")) -> bool:
    rx = re.compile(pattern)
    for d in dirs:
        if not d.exists():
            continue
        for p in d.rglob("*"):
            if p.suffix in exts and p.is_file():
                try:
                    if rx.search(p.read_text(encoding="utf-8", errors="replace")):
                        return True
                except OSError:
                    continue
    return False


@dataclass(frozen=True)
class Capabilities:
    full_compaction_var: bool
    immutable_option_check: bool

    @staticmethod
    def code_dirs(root: pathlib.Path) -> List[pathlib.Path]:
        """Where the materialization's code lives; each must exist (a moved folder would
        silently turn features off and skip vectors)."""
        dirs = [root / "lakerank_lib" / "macros", root / "adapter", root / "python_udfs"]
        missing = [str(d) for d in dirs if not d.is_dir()]
        if missing:
            raise FileNotFoundError(f"paimon_vectors: code folders not found: {missing}")
        return dirs

    @staticmethod
    def detect(root: pathlib.Path = ROOT) -> "Capabilities":
        return Capabilities(
            full_compaction_var=_grep(r"lakerank_full_compaction", Capabilities.code_dirs(root)),
            immutable_option_check=_grep(r"Cannot change", Capabilities.code_dirs(root)),
        )


# =====================================================================================
# Plans
# =====================================================================================


@dataclass
class RunCommit:
    """One ``dbt run`` of the model (one commit). ``rows`` = [[kind, v...]], or ``input_sql``
    (a SELECT over ``{{ this }}``) for DELETE/UPDATE."""

    index: str
    rows: List[List[Any]]
    options: Dict[str, str]
    schema: Schema
    full_compaction: bool = False
    input_sql: Optional[str] = None
    expect_error: Optional[str] = None
    label: str = ""
    marker: Optional[int] = None  # commit ordinal after this run (None for runs expected to fail)

    @property
    def is_assertion(self) -> bool:
        return self.expect_error is not None


@dataclass
class Check:
    """A comparison. ``sql`` may contain ``{{REL}}``, ``{{CHANGES:a:b}}``, ``{{AS_OF:m}}``
    (``a``, ``b``, ``m`` are commit markers resolved to snapshot ids at run time)."""

    index: str
    what: str
    sql: str
    expected: List[List[Any]]
    ordered: bool = False
    any_order: bool = False
    key_positions: Optional[List[int]] = None
    expect_error: Optional[str] = None
    drop_columns: int = 0  # trailing actual columns to ignore
    prefix_rows: Optional[str] = None  # a second SQL whose rows are prepended (stream full start)


@dataclass
class Skipped:
    index: str
    what: str
    reason: str
    assertion: bool


@dataclass
class Plan:
    vector_id: str
    label: str  # sub-case / variant label ("" for the whole vector)
    model: str
    schema: Schema
    options: Dict[str, str]
    primary_key: List[str]
    partition_by: List[str]
    order_column: Optional[str]
    steps: List[Any] = field(default_factory=list)  # RunCommit | Check
    skipped: List[Skipped] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)
    unmappable: Optional[str] = None

    @property
    def mapped_assertions(self) -> int:
        return sum(1 for s in self.steps if isinstance(s, Check) or (isinstance(s, RunCommit) and s.is_assertion))

    @property
    def skipped_assertions(self) -> List[Skipped]:
        return [s for s in self.skipped if s.assertion]

    @property
    def title(self) -> str:
        return self.vector_id + (f"[{self.label}]" if self.label else "")


def platform(vector: Dict[str, Any]) -> str:
    src = vector.get("source", "")
    if "paimon-flink" in src:
        return "flink"
    if "paimon-spark" in src:
        return "spark"
    if "paimon-core" in src:
        return "core"
    if src.startswith("docs/"):
        return "docs"
    return "other"


def _model_name(vector_id: str, label_idx: int) -> str:
    base = "v_" + re.sub(r"[^a-z0-9]+", "_", vector_id.lower()).strip("_")
    return base + (f"_{label_idx}" if label_idx else "")


def two_snapshots_per_commit(options: Dict[str, str], plat: str) -> bool:
    producer = options.get("changelog-producer", "none")
    return (
        producer == "lookup"
        or options.get("deletion-vectors.enabled") == "true"
        or _engine(options) == "first-row"
        or options.get("force-lookup") == "true"
        or options.get("commit.force-compact") == "true"
        or (producer == "full-compaction" and plat in ("flink", "docs"))
    )


def commit_of_snapshot(snapshot: int, options: Dict[str, str], plat: str) -> int:
    """Paimon snapshot id -> lakerank commit ordinal (see the module docstring)."""
    if not two_snapshots_per_commit(options, plat):
        return snapshot
    if snapshot % 2 == 0:
        return snapshot // 2
    c = (snapshot + 1) // 2
    return c - 1 if options.get("deletion-vectors.enabled") == "true" else c


_DELETE = re.compile(r"^\s*DELETE\s+FROM\s+(\S+)\s+WHERE\s+(.+?)\s*;?\s*$", re.I | re.S)
_UPDATE = re.compile(r"^\s*UPDATE\s+(\S+)\s+SET\s+(.+?)\s+WHERE\s+(.+?)\s*;?\s*$", re.I | re.S)
_ALTER_SET = re.compile(r"^\s*ALTER\s+TABLE\s+(\S+)\s+SET\s+(?:TBLPROPERTIES\s*)?\((.*)\)\s*;?\s*$", re.I | re.S)
_ALTER_MODIFY = re.compile(r"^\s*ALTER\s+TABLE\s+(\S+)\s+MODIFY\s+(\S+)\s+(.+?)\s*;?\s*$", re.I | re.S)
_KV = re.compile(r"'([^']*)'\s*=\s*'([^']*)'")
_HINT = re.compile(r"/\*\+\s*OPTIONS\s*\((.*?)\)\s*\*/", re.I | re.S)


class Planner:
    def __init__(self, vector: Dict[str, Any], schema: Schema, options: Dict[str, str], label: str,
                 model: str, caps: Capabilities, order_column: Optional[str], exact_commits: bool):
        self.v = vector
        self.plat = platform(vector)
        self.caps = caps
        self.schema = schema
        self.paimon_options = dict(options)  # as Paimon sees them (for rules)
        self.options, notes = lakerank_options(options)
        self.plan = Plan(vector["id"], label, model, schema, dict(self.options), list(schema.primary_key),
                         list(schema.partition_by), order_column)
        self.plan.notes.extend(notes)
        self.order_column = order_column
        self.exact_commits = exact_commits
        producer = self.options.get("changelog-producer", "none")
        self.explicit_fc = producer == "full-compaction" and "full-compaction.delta-commits" not in self.options
        if self.explicit_fc and self.plat in ("flink", "docs"):
            self.options["full-compaction.delta-commits"] = "1"
            self.plan.options = dict(self.options)
            self.plan.notes.append(
                "Flink compacts fully after every commit with changelog-producer=full-compaction: "
                "'full-compaction.delta-commits'='1' passed")
            self.explicit_fc = False
        self.pending: List[List[Any]] = []
        self.pending_compact = False
        self.commits = 0  # commit marker
        self.commit_info: Dict[int, Dict[str, Any]] = {}  # marker -> {compacted, fc_unfaithful, partition_drop}
        self.last_compaction = 0
        self.stream: Optional[Dict[str, Any]] = None
        self.last_check = 0
        self.diverged: Optional[str] = None
        self.tags: set = set()
        self.any_commit = False
        self.refers_to_snapshots = self._refers_to_snapshots(vector)

    # ---------------------------------------------------------------- helpers
    @staticmethod
    def _refers_to_snapshots(vector) -> bool:
        text = json.dumps(vector)
        return bool(re.search(r"snapshot-id|VERSION AS OF|incremental|paimon_incremental", text, re.I))

    def skip(self, index: str, what: str, reason: str, assertion: bool, diverge: bool = False) -> None:
        self.plan.skipped.append(Skipped(index, what, reason, assertion))
        if diverge and not self.diverged:
            self.diverged = f"step {index} ({what}) was not executed: {reason}"

    def cols_sql(self, schema: Optional[Schema] = None) -> str:
        return ", ".join(quote(c.name) for c in (schema or self.schema).columns)

    def add_commit(self, index: str, rows: List[List[Any]], *, input_sql: Optional[str] = None,
                   expect_error: Optional[str] = None, label: str = "", options: Optional[Dict[str, str]] = None,
                   partition_drop: bool = False) -> Optional[RunCommit]:
        full = self.pending_compact
        self.pending_compact = False
        rc = RunCommit(index, rows, dict(options if options is not None else self.options), self.schema,
                       full_compaction=full and self.explicit_fc and self.caps.full_compaction_var,
                       input_sql=input_sql, expect_error=expect_error, label=label)
        if expect_error is None:
            self.commits += 1
            rc.marker = self.commits
            compacted = (not self.explicit_fc) or full
            self.commit_info[self.commits] = {
                "compacted": compacted,
                "fc_unfaithful": self.explicit_fc and not self.caps.full_compaction_var and not full,
                "fc_var_missing": self.explicit_fc and full and not self.caps.full_compaction_var,
                "partition_drop": partition_drop,
            }
            if compacted:
                self.last_compaction = self.commits
            self.any_commit = True
        self.plan.steps.append(rc)
        return rc

    def flush(self, index: str, each_row: bool = False) -> None:
        rows, self.pending = self.pending, []
        if not rows:
            return
        if each_row:
            keys = [self.key_of(r) for r in rows]
            if len(set(keys)) == len(keys) and not self.refers_to_snapshots and not self.exact_commits:
                self.plan.notes.append(
                    f"step {index}: commit_each_row over {len(rows)} distinct keys run as one commit "
                    "(keys merge independently; PAIMON_VECTORS_EXACT_COMMITS=1 runs one commit per row)")
                self.add_commit(index, rows, label="insert (commit_each_row, coalesced)")
            else:
                for i, r in enumerate(rows):
                    self.add_commit(f"{index}.{i}", [r], label="insert (commit_each_row)")
            return
        self.add_commit(index, rows, label="insert")

    def key_of(self, row: List[Any]) -> Tuple:
        pos = [i for i, c in enumerate(self.schema.columns) if c.name in self.schema.primary_key]
        return tuple(json.dumps(row[1 + i]) for i in pos)

    # ---------------------------------------------------------------- queries
    def _rewrite_table(self, sql: str) -> Optional[str]:
        m = re.search(r"\bFROM\s+(`[^`]+`|[A-Za-z_][\w$.]*)", sql, re.I)
        if not m:
            return None
        return sql[: m.start(1)] + REL + sql[m.end(1):]

    def _expand_star(self, sql: str) -> str:
        return re.sub(r"^\s*SELECT\s+\*\s+FROM\b", lambda m: f"SELECT {self.cols_sql()} FROM", sql, flags=re.I)

    def _unnest(self, sql: str) -> str:
        # Flink: FROM t, UNNEST(arr) AS so(a, b) -> Spark: FROM t LATERAL VIEW inline(arr) so AS a, b
        m = re.search(r"FROM\s+(\S+)\s*,\s*UNNEST\((\w+)\)\s+AS\s+(\w+)\s*\(([^)]*)\)", sql, re.I)
        if not m:
            return sql
        repl = f"FROM {m.group(1)} LATERAL VIEW inline({m.group(2)}) {m.group(3)} AS {m.group(4)}"
        return sql[: m.start()] + repl + sql[m.end():]

    def plain_query_sql(self, q: str) -> Optional[str]:
        sql = self._unnest(q)
        sql = self._rewrite_table(sql)
        if sql is None:
            return None
        return self._expand_star(sql)

    def query(self, index: str, step: Dict[str, Any]) -> None:
        q = step["query"].strip()
        what = f"query {q}"
        expected = step.get("expected", step.get("expected_any_order"))
        if self.diverged:
            return self.skip(index, what, self.diverged, True)
        if not re.match(r"^\s*SELECT\b", q, re.I):
            return self.skip(index, what, "not a SQL query (reader API call with pushed-down predicate)", True)
        if not isinstance(expected, list):
            return self.skip(index, what, f"expected result is a prose description ({expected!r})", True)
        if re.search(r"\$audit_log", q, re.I) and "paimon_incremental" not in q:
            return self.skip(index, what,
                             "batch $audit_log is Paimon's merged rows with their stored kinds and uncompacted -D "
                             "tombstones, not a changelog; lakerank_lib.audit_log is the changelog and every commit "
                             "drops tombstones", True)
        system_tables = r"\$(binlog|snapshots|files|manifests|schemas|options|tags|branches|partitions|buckets)\b"
        if re.search(system_tables, q, re.I):
            return self.skip(index, what, "Paimon system table without a lakerank equivalent", True)
        any_order = step.get("array_order") == "any" or "expected_any_order" in step \
            or "any order" in (step.get("note") or "")
        ordered = bool(step.get("ordered"))
        m = re.search(r"paimon_incremental_query\(\s*'([^']*)'\s*,\s*'([^']*)'\s*,\s*'([^']*)'\s*\)", q, re.I)
        if m:
            return self.incremental(index, what, m, expected, ordered, any_order)
        if re.search(r"paimon_incremental|TIMESTAMP\s+AS\s+OF|FOR\s+SYSTEM_TIME", q, re.I):
            return self.skip(index, what, "timestamp / tag based read (no timestamps or tags in lakerank)", True)
        hints = {}
        hm = _HINT.search(q)
        if hm:
            hints = dict(_KV.findall(hm.group(1)))
            q = (q[: hm.start()] + q[hm.end():]).strip()
        vm = re.search(r"\s+VERSION\s+AS\s+OF\s+('?)([^'\s]+)\1", q, re.I)
        as_of: Optional[int] = None
        if vm:
            if vm.group(1):
                return self.skip(index, what, f"VERSION AS OF '{vm.group(2)}' reads a tag (no tags in lakerank)", True)
            as_of = int(vm.group(2))
            q = q[: vm.start()] + q[vm.end():]
        if hints:
            extra = set(hints) - {"scan.snapshot-id", "scan.mode"}
            mode = hints.get("scan.mode", "from-snapshot-full")
            if extra or mode not in ("from-snapshot-full", "from-snapshot", "default"):
                return self.skip(index, what,
                                 f"read options {hints} (only scan.snapshot-id is mapped, to lakerank_lib.as_of)", True)
            if "scan.snapshot-id" in hints:
                as_of = int(hints["scan.snapshot-id"])
        sql = self.plain_query_sql(q)
        if sql is None:
            return self.skip(index, what, "no FROM <table> to rewrite", True)
        if as_of is not None:
            commit = commit_of_snapshot(as_of, self.paimon_options, self.plat)
            if commit < 0 or commit > self.commits:
                return self.skip(index, what,
                                 f"snapshot {as_of} maps to commit {commit}, outside 0..{self.commits}", True)
            sql = sql.replace(REL, "{{AS_OF:%d}}" % commit)
            what += f"  [snapshot {as_of} -> after commit #{commit}]"
        self.plan.steps.append(Check(index, what, sql, expected, ordered=ordered, any_order=any_order))

    def incremental(self, index, what, m, expected, ordered, any_order) -> None:
        table, start, end = m.group(1), m.group(2), m.group(3)
        if not (start.isdigit() and end.isdigit()):
            return self.skip(index, what, "incremental read between tags (tags are not mapped; between tags Paimon "
                                          "diffs the two snapshots)", True)
        a = commit_of_snapshot(int(start), self.paimon_options, self.plat) if int(start) else 0
        b = commit_of_snapshot(int(end), self.paimon_options, self.plat)
        audit = "$audit_log" in table
        cols = self.cols_sql()
        if audit:
            sql = f"SELECT rowkind, {cols} FROM {{{{CHANGES:{a}:{b}}}}} AS ch"
        else:
            sql = f"SELECT {cols} FROM {{{{CHANGES:{a}:{b}}}}} AS ch WHERE rowkind IN ('+I', '+U')"
        self.plan.steps.append(Check(index, what + f"  [lakerank_lib.changes(commits {a}..{b}]]", sql, expected,
                                     ordered=ordered, any_order=any_order))

    # ---------------------------------------------------------------- streams / changelog
    def stream_query(self, index: str, step: Dict[str, Any]) -> None:
        q = step["stream_query"]
        started = step.get("started", "")
        audit = bool(re.search(r"\$audit_log", q))
        start = self.commits
        full_at = None
        hm = _HINT.search(q)
        if hm:
            hints = dict(_KV.findall(hm.group(1)))
            if hints.get("scan.mode") == "from-snapshot-full" and "scan.snapshot-id" in hints:
                full_at = commit_of_snapshot(int(hints["scan.snapshot-id"]), self.paimon_options, self.plat)
                start = full_at
            else:
                self.stream = {"skip": f"streaming read options {hints} are not mapped"}
                return
        elif not re.search(r"before the first write", started, re.I) and self.commits > 0:
            full_at = self.commits  # default latest-full: current snapshot as +I, then changes
        self.stream = {"audit": audit, "start": start, "full_at": full_at, "query": q,
                       "closed_after_first": "closed after the first" in started, "checks": 0}
        self.last_check = start

    def expected_changelog(self, index: str, step: Dict[str, Any]) -> None:
        expected = step["expected_changelog"]
        what = "expected_changelog " + json.dumps(expected)[:120]
        if self.diverged:
            return self.skip(index, what, self.diverged, True)
        scope = step.get("scope", "")
        if self.stream is None and not scope:
            return self.skip(index, what, "changelog check without a stream or scope", True)
        if self.stream is not None and "skip" in self.stream:
            return self.skip(index, what, self.stream["skip"], True)
        if self.stream is not None and self.stream["closed_after_first"] and self.stream["checks"] >= 1:
            return self.skip(index, what, "the stream was closed", True)
        if self.stream is None or "latest snapshot" in scope:
            a, b = max(self.commits - 1, 0), self.commits
            if "latest snapshot" not in scope:
                a = self.last_check
        else:
            a, b = self.last_check, self.commits
        full_at = self.stream.get("full_at") if self.stream else None
        producer = self.options.get("changelog-producer", "none")
        rows = [list(r) for r in expected]
        fmt = step.get("row_format", "")
        if fmt.startswith("[flink_row_kind"):
            if any(r[0] != "+I" for r in rows):
                return self.skip(index, what, "Flink row kind other than +I on an $audit_log stream", True)
            rows = [r[1:] for r in rows]
        # Flink's ChangelogNormalize: -U/+U on a changelog-producer=none table
        if producer == "none" and self.plat == "flink" and not (self.stream or {}).get("audit") \
                and any(r[0] == "-U" for r in rows):
            return self.skip(index, what, "Flink's ChangelogNormalize operator turns the raw upsert stream of a "
                                          "changelog-producer=none table into -U/+U (Flink-only; lakerank_lib.changes "
                                          "gives Paimon's per-commit delta, Spark semantics)", True)
        # full-compaction with explicit compactions: the changelog of a window is only Paimon's
        # when every commit in it (and since the last compaction before it) is mapped faithfully
        lo = a
        while lo > 0 and not self.commit_info.get(lo, {}).get("compacted", True):
            lo -= 1
        for c in range(max(lo, 1), b + 1):
            info = self.commit_info.get(c, {})
            if info.get("fc_unfaithful") or info.get("fc_var_missing"):
                return self.skip(index, what, "changelog-producer=full-compaction with explicit full compactions "
                                              "needs the dbt var lakerank_full_compaction (not implemented in "
                                              "lakerank_lib/macros/materializations/pk_table/): "
                                              "without it every commit "
                                              "produces the lookup changelog", True)
        for c in range(a + 1, b + 1):
            if self.commit_info.get(c, {}).get("partition_drop"):
                return self.skip(index, what, "a DELETE on partition columns only is a partition drop in Paimon "
                                              "(no -D changelog without delete.force-produce-changelog)", True)
        n = len(rows[0]) - 1 if rows else len(self.schema.columns)
        if n > len(self.schema.columns) or any(len(r) - 1 != n for r in rows):
            return self.skip(index, what, "changelog rows do not match the schema", True)
        cols = ", ".join(quote(c.name) for c in self.schema.columns[:n])
        sql = f"SELECT rowkind, {cols} FROM {{{{CHANGES:{a}:{b}}}}} AS ch"
        prefix = None
        if full_at is not None and self.stream and self.stream["checks"] == 0:
            prefix = f"SELECT '+I' AS rowkind, {cols} FROM {{{{AS_OF:{full_at}}}}} AS snap"
        key_pos = [1 + i for i, c in enumerate(self.schema.columns[:n]) if c.name in self.schema.primary_key]
        any_order = step.get("array_order") == "any" or bool(
            re.search(r"any order|InAnyOrder", (step.get("note") or "") + " " + (self.v.get("notes") or "")))
        ordered = bool(step.get("ordered"))
        note = (f"  [lakerank_lib.changes(commits {a}..{b}]"
                + (f", after as_of({full_at}) as +I" if prefix else "") + "]")
        if n < len(self.schema.columns):
            note += f" (first {n} columns compared)"
        self.plan.steps.append(Check(index, what + note, sql, rows, ordered=ordered, any_order=any_order,
                                     key_positions=key_pos if ordered else None, prefix_rows=prefix))
        if self.stream is not None:
            self.stream["checks"] += 1
        self.last_check = b

    # ---------------------------------------------------------------- statements
    def statement(self, index: str, step: Dict[str, Any]) -> None:
        st = step["statement"].strip()
        err = step.get("expected_error")
        what = f"statement {st}"
        if self.diverged:
            return self.skip(index, what, self.diverged, bool(err))
        body = re.sub(r"\s+--.*$", "", st, flags=re.M).strip()
        if re.search(r"createTag|create_tag", body):
            m = re.search(r"(?:createTag\(|create_tag\(\s*'[^']*'\s*,\s*)'([^']*)'", body)
            self.tags.add(m.group(1) if m else body)
            return self.skip(index, what, "tags are not part of lakerank (no data change)", bool(err))
        if re.match(r"^CALL\s+sys\.compact\b", body, re.I):
            if self.explicit_fc:
                if self.caps.full_compaction_var:
                    self.pending_compact = True
                    self.add_commit(index, [], label="CALL sys.compact -> run with var lakerank_full_compaction")
                    return None
                self.skip(index, what, "full compaction with changelog needs the dbt var lakerank_full_compaction "
                                       "(not implemented in lakerank_lib/macros/materializations/pk_table/)", False)
                return None
            self.plan.notes.append(f"step {index}: CALL sys.compact is a no-op (every pk_table commit is a full "
                                   "compaction that drops tombstones)")
            return None
        if body.lower() == "preparecommit":
            if err is None:
                return self.flush(index)
            rows, self.pending = self.pending, []
            self.add_commit(index, rows, expect_error=err, label="commit expected to fail")
            return None
        m = _DELETE.match(body)
        if m:
            return self.delete(index, what, m.group(2), err)
        m = _UPDATE.match(body)
        if m:
            return self.update(index, what, m.group(2), m.group(3), err)
        m = _ALTER_SET.match(body)
        if m:
            return self.alter_set(index, what, dict(_KV.findall(m.group(2))), err)
        m = _ALTER_MODIFY.match(body)
        if m:
            if self.any_commit or err:
                return self.skip(index, what, "schema evolution after data was written is not supported by pk_table "
                                              "(its layout is fixed; --full-refresh rebuilds)", bool(err), diverge=True)
            try:
                col = self.schema.column(m.group(2).strip("`"))
                col.type = parse_type(m.group(3))
            except SchemaError as exc:
                return self.skip(index, what, f"cannot map type change: {exc}", False, diverge=True)
            self.plan.notes.append(f"step {index}: {body} before any write -> column type {spark_type(col.type)}")
            return None
        if re.match(r"^CREATE\s+TABLE\b", body, re.I) and err:
            kv = dict(_KV.findall(body))
            if not kv:
                return self.skip(index, what, "cannot read the options of the CREATE TABLE", True)
            opts = dict(self.options)
            opts.update(kv)
            self.add_commit(index, [], expect_error=err, options=opts, label="run with invalid options")
            return None
        if re.match(r"^INSERT\s+OVERWRITE\b", body, re.I):
            return self.skip(index, what, "INSERT OVERWRITE (partition/table overwrite) is not a pk_table commit",
                             bool(err), diverge=True)
        if re.match(r"^INSERT\s+INTO\b", body, re.I) and err and re.search(r"not null", err, re.I):
            self.pending = []
            return self.skip(index, what, "NOT NULL enforcement: pk_table columns come from the model's SELECT "
                                          "and are nullable; no NOT NULL constraint exists", True)
        if re.match(r"^SELECT\b", body, re.I) and err:
            return self.select_error(index, what, body, err)
        verb = " ".join(body.split()[:2]).upper()
        return self.skip(index, what, f"statement not mapped ({verb} ...)", bool(err), diverge=not err)

    def select_error(self, index, what, body, err) -> None:
        hm = _HINT.search(body)
        hints = dict(_KV.findall(hm.group(1))) if hm else {}
        if set(hints) == {"scan.snapshot-id"}:
            snap = int(hints["scan.snapshot-id"])
            commit = commit_of_snapshot(snap, self.paimon_options, self.plat) if snap > 0 else snap
            sql = f"SELECT {self.cols_sql()} FROM {{{{AS_OF:{commit}}}}} AS t"
            self.plan.steps.append(Check(index, what, sql, [], expect_error=err))
            return None
        return self.skip(index, what, f"read options {hints} have no lakerank equivalent", True)

    def delete(self, index, what, cond, err) -> None:
        engine = _engine(self.paimon_options)
        o = self.paimon_options
        if engine == "first-row" or (
            engine == "partial-update" and o.get("partial-update.remove-record-on-delete") != "true"
            and not o.get("partial-update.remove-record-on-sequence-group")
        ) or (engine == "aggregation" and o.get("aggregation.remove-record-on-delete") != "true"):
            return self.skip(index, what, f"DELETE on a {engine} table without remove-record-on-delete rewrites data "
                                          "files (row-level delete, no -D record); pk_table has no such operation",
                             bool(err), diverge=True)
        if self.pending:
            self.flush(index + ".pre")
        cols = self.cols_sql() + (f", {quote(self.order_column)}" if self.order_column else "")
        sql = f"select {cols}, '-D' as rowkind from {{{{ this }}}} where {cond}"
        refs = {w.lower() for w in re.findall(r"[A-Za-z_]\w*", cond)}
        names = {c.name.lower() for c in self.schema.columns}
        partition_cols = {p.lower() for p in self.schema.partition_by}
        partition_drop = bool(self.schema.partition_by) and (refs & names) <= partition_cols \
            and self.paimon_options.get("delete.force-produce-changelog") != "true"
        self.add_commit(index, [], input_sql=sql, expect_error=err, label=f"DELETE WHERE {cond} -> -D commit",
                        partition_drop=partition_drop)

    def update(self, index, what, sets, cond, err) -> None:
        if _engine(self.paimon_options) != "deduplicate":
            return self.skip(index, what, "UPDATE on a non-deduplicate table is not mapped", bool(err), diverge=True)
        assigns = {}
        for part in _split_top(sets, ","):
            k, _, v = part.partition("=")
            assigns[k.strip().strip("`").lower()] = v.strip()
        exprs = [f"cast({assigns[c.name.lower()]} as {c.spark}) as {quote(c.name)}" if c.name.lower() in assigns
                 else quote(c.name) for c in self.schema.columns]
        if self.order_column:
            exprs.append(quote(self.order_column))
        sql = f"select {', '.join(exprs)}, '+U' as rowkind from {{{{ this }}}} where {cond}"
        self.add_commit(index, [], input_sql=sql, expect_error=err, label="UPDATE -> +U commit")

    def alter_set(self, index, what, kv: Dict[str, str], err) -> None:
        if err:
            if all(k in ("ignore-delete", "ignore-update-before") for k in kv) and not self.caps.immutable_option_check:
                return self.skip(index, what, "pk_table does not check that ignore-delete / ignore-update-before "
                                              "cannot go from true to false (no 'Cannot change' check in the "
                                              "materialization or python_udfs/paimon/validation.py)", True)
            opts = dict(self.options)
            opts.update(kv)
            self.add_commit(index, [], expect_error=err, options=opts, label=f"run with altered options {kv}")
            return None
        for k, v in kv.items():
            if k == "bucket" or k == "primary-key":
                return self.skip(index, what, f"changing '{k}' changes the table layout (pk_table refuses without "
                                              "--full-refresh)", False, diverge=True)
            if k in PHYSICAL_OPTIONS:
                self.plan.notes.append(f"step {index}: ALTER SET '{k}'='{v}' is a no-op ({PHYSICAL_OPTIONS[k]})")
                self.paimon_options[k] = v
                continue
            self.options[k] = v
            self.paimon_options[k] = v
            self.plan.notes.append(f"step {index}: ALTER SET '{k}'='{v}' -> option of the following commits")

    # ---------------------------------------------------------------- driver
    def build(self, steps: List[Dict[str, Any]]) -> Plan:
        ncols = len(self.schema.columns)
        for i, step in enumerate(steps):
            idx = str(i)
            try:
                self.step(idx, step)
            except UnsupportedValue as exc:
                self.pending = []
                self.skip(idx, _describe(step), f"value not mappable: {exc}", False, diverge=True)
        if self.pending:
            self.plan.notes.append("rows inserted but never committed are ignored")
        assert ncols == len(self.schema.columns)
        return self.plan

    def step(self, idx: str, step: Dict[str, Any]) -> None:
        if "insert" in step:
            if self.diverged:
                return None
            rows = [list(r) for r in step["insert"]]
            for r in rows:
                if len(r) - 1 != len(self.schema.columns):
                    raise UnsupportedValue(f"row {r} has {len(r) - 1} values for {len(self.schema.columns)} columns")
                for v, c in zip(r[1:], self.schema.columns):
                    literal(v, c.type)  # validate now
            if step.get("derived"):
                self.plan.notes.append(f"step {idx}: insert rows derived by the researcher (see vector notes)")
            self.pending.extend(rows)
            if step.get("commit_each_row"):
                self.flush(idx, each_row=True)
            return None
        if "commit" in step:
            if not self.diverged:
                self.flush(idx)
            return None
        if "compact" in step:
            if str(step["compact"]).lower() == "full":
                if self.explicit_fc:
                    self.pending_compact = True
                else:
                    self.plan.notes.append(f"step {idx}: full compaction is what every pk_table commit does")
            return None
        if "statement" in step:
            return self.statement(idx, step)
        if "query" in step:
            return self.query(idx, step)
        if "stream_query" in step:
            return self.stream_query(idx, step)
        if "expected_changelog" in step:
            return self.expected_changelog(idx, step)
        if set(step) <= META_STEP_KEYS:
            return None
        assertion = any(k.startswith("expected") for k in step)
        self.skip(idx, _describe(step), f"unknown step kind {sorted(step)}", assertion, diverge=not assertion)
        return None


#: Step keys that carry no action or assertion.
META_STEP_KEYS = frozenset({"comment", "note", "notes", "description", "label", "title", "explanation", "source"})


def _describe(step: Dict[str, Any]) -> str:
    for k in ("query", "statement", "stream_query", "insert", "expected_changelog"):
        if k in step:
            return f"{k} {json.dumps(step[k])[:100]}"
    return json.dumps(step)[:100]
