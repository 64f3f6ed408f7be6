"""Paimon test vectors -> executable lakerank plans (no Spark needed to import this module).

The vectors (``tests/data/paimon_vectors_public.json``, where they come from: tests/data/README.md) are inputs
and expected outputs copied from Apache Paimon's own tests. This module

* parses their Flink/Spark schema strings into Spark column types;
* turns every table-level (and docs_example) vector -- and every ``case`` sub-case and every
  value of a parameterised option (``'a | b'``) -- into a :class:`Plan`: a list of executable
  steps (``pk_table`` commits, each one ``dbt run`` of a model) and assertions (batch queries,
  changelog windows read through ``lakerank_lib.changes``, time travel through ``lakerank_lib.as_of``,
  expected errors), plus the steps/assertions it cannot map, each with a precise reason;
* classifies each vector ``pass-full`` / ``partial`` / ``unmappable`` (or ``kernel`` for the
  merge-function / field-aggregator unit vectors, which tests/unit/test_paimon_kernel.py covers);
* normalises values for comparison (DECIMAL strings with scale, ISO dates/timestamps, MAP as an
  order-insensitive entry set, ROW as lists, FLOAT as float32 bits, DOUBLE as float64 bits);
* writes ``docs/paimon_vectors.md``:  ``python3 tests/support/paimon_vectors.py --write-doc``.

Mapping rules that are choices (documented again in the generated doc):

* Arrival order inside a commit is the row order of the model's ``VALUES`` list. By default the
  plan uses no ``order_by`` column (pk_table's documented default: scan order), because an
  ``order_by`` column is stored as a table column and changes merge results (it is aggregated,
  and it makes ``changelog-producer.row-deduplicate`` see every row as changed). Set
  ``PAIMON_VECTORS_ORDER_COLUMN=_ord`` to pass an explicit ``order_by`` column instead.
* Paimon snapshot ids -> lakerank commit ids: a table with lookup compaction
  (``changelog-producer=lookup``, ``deletion-vectors.enabled``, ``merge-engine=first-row``,
  ``force-lookup``) or a compaction in every commit (Flink ``full-compaction`` producer,
  ``commit.force-compact``) writes two snapshots per commit: APPEND ``2c-1`` then COMPACT ``2c``.
  Snapshot ``2c`` is the state after commit ``c``; snapshot ``2c-1`` is the state after commit
  ``c`` too, except with deletion vectors, where an APPEND snapshot only exposes compacted data
  (= the state after commit ``c-1``). Otherwise snapshot ``n`` = commit ``n``.
* Flink writers with ``changelog-producer=full-compaction`` compact fully after every commit
  (``full-compaction.delta-commits`` defaults to 1 in Flink streaming writes); the plan states that
  explicitly with ``'full-compaction.delta-commits'='1'``. Vectors from paimon-core / Spark with
  that producer get changelog only from explicit compactions (``compact: full`` steps,
  ``CALL sys.compact``) -> the dbt var ``lakerank_full_compaction: true`` on that run.
* ``DELETE FROM t WHERE c`` is a commit whose input is ``select <columns>, '-D' as rowkind from t
  where c`` (Spark and Flink write a -D carrying the current full row); ``UPDATE t SET ...`` on a
  deduplicate table is the same with ``+U``.
* ``commit_each_row`` over pairwise distinct keys, in a plan that never refers to snapshot ids,
  is one commit (keys merge independently, so every later state is identical); set
  ``PAIMON_VECTORS_EXACT_COMMITS=1`` to run one commit per row anyway.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import pathlib
import re
import sys
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

# The plans' parts, re-exported: the tests use them as paimon_vectors.<name>.
from paimon_plans import (  # noqa: F401
    REL,
    ROOT,
    Capabilities,
    Check,
    Plan,
    Planner,
    RunCommit,
    _model_name,
    commit_of_snapshot,
    expand_options,
    platform,
)
from paimon_types import Column, Schema, SchemaError, parse_schema, parse_type, type_from_spark_json  # noqa: F401
from paimon_values import (  # noqa: F401
    UnsupportedValue,
    canon,
    compare_rows,
    error_matches,
    literal,
    quote,
    values_sql,
)

HERE = pathlib.Path(__file__).resolve().parent
DOC_PATH = ROOT / "docs" / "paimon_vectors.md"
VECTORS = ROOT / "tests" / "data" / "paimon_vectors_public.json"

TABLE_LEVELS = ("table", "docs_example")
KERNEL_LEVELS = ("merge_function", "field_aggregator")

PASS_FULL, PARTIAL, UNMAPPABLE, KERNEL = "pass-full", "partial", "unmappable", "kernel"


def load_vectors() -> Dict[str, Any]:
    """The repository's vectors (a missing file is an error, never an empty set)."""
    with open(VECTORS, encoding="utf-8") as fh:
        return json.load(fh)


# =====================================================================================
# Vector -> plans -> classification
# =====================================================================================


@dataclass
class Classification:
    vector_id: str
    engine: str
    level: str
    platform: str
    status: str
    reason: str
    plans: List[Plan]
    notes: List[str]

    @property
    def mapped(self) -> int:
        return sum(p.mapped_assertions for p in self.plans)

    @property
    def skipped(self) -> int:
        return sum(len(p.skipped_assertions) for p in self.plans)


def _sub_cases(steps: List[Dict[str, Any]]) -> List[Tuple[str, List[Dict[str, Any]]]]:
    cases = [s for s in steps if "case" in s and isinstance(s.get("steps"), list)]
    if cases and len(cases) == len(steps):
        return [(str(s["case"]), s["steps"]) for s in cases]
    return [("", steps)]


def _truncate_for_rows(schema: Schema, steps: List[Dict[str, Any]]) -> Tuple[Schema, Optional[str]]:
    """Rows with fewer values than the schema (constant columns omitted by the researcher):
    keep the first N columns."""
    lens = set()

    def walk(ss):
        for s in ss:
            if "insert" in s:
                for r in s["insert"]:
                    lens.add(len(r) - 1)
            if isinstance(s.get("steps"), list):
                walk(s["steps"])

    walk(steps)
    if not lens:
        return schema, None
    if len(lens) > 1:
        raise SchemaError(f"insert rows of different widths {sorted(lens)}")
    n = lens.pop()
    if n == len(schema.columns):
        return schema, None
    if n > len(schema.columns):
        raise SchemaError(f"rows have {n} values, schema {len(schema.columns)} columns")
    kept = {c.name for c in schema.columns[:n]}
    if not set(schema.primary_key + schema.partition_by) <= kept:
        raise SchemaError("omitted columns include key or partition columns")
    dropped = [c.name for c in schema.columns[n:]]
    return schema.truncated(n), (f"rows list only the first {n} columns; "
                                 f"omitted constant columns {dropped} are not created")


def classify_vector(vector: Dict[str, Any], caps: Optional[Capabilities] = None,
                    order_column: Optional[str] = None, exact_commits: Optional[bool] = None) -> Classification:
    caps = caps or Capabilities.detect()
    if order_column is None:
        order_column = os.environ.get("PAIMON_VECTORS_ORDER_COLUMN") or None
    if exact_commits is None:
        exact_commits = os.environ.get("PAIMON_VECTORS_EXACT_COMMITS", "") not in ("", "0")
    vid, level = vector["id"], vector.get("level", "")
    base = dict(vector_id=vid, engine=vector.get("engine", ""), level=level, platform=platform(vector))
    if level in KERNEL_LEVELS:
        return Classification(**base, status=KERNEL,
                              reason="covered by the kernel tests (tests/unit/test_paimon_kernel.py)",
                              plans=[], notes=[])
    if level not in TABLE_LEVELS:
        return Classification(**base, status=UNMAPPABLE, reason=f"level {level!r} is not a table-level vector",
                              plans=[], notes=[])
    try:
        schema = parse_schema(vector["schema"], {k: str(v) for k, v in vector.get("table_options", {}).items()})
        schema, trunc_note = _truncate_for_rows(schema, vector["steps"])
    except SchemaError as exc:
        return Classification(**base, status=UNMAPPABLE, reason=f"schema: {exc}", plans=[], notes=[])
    if schema.append_table:
        return Classification(**base, status=UNMAPPABLE,
                              reason="append table (no primary key): pk_table is a primary-key table",
                              plans=[], notes=[])
    if "rowkind" in [c.lower() for c in schema.names] or "_bucket" in [c.lower() for c in schema.names]:
        return Classification(**base, status=UNMAPPABLE,
                              reason="a column named rowkind/_bucket is reserved by pk_table",
                              plans=[], notes=[])
    variants, vnotes = expand_options({k: str(v) for k, v in vector.get("table_options", {}).items()})
    cases = _sub_cases(vector["steps"])
    plans: List[Plan] = []
    n = 0
    for vlabel, opts in variants:
        for clabel, steps in cases:
            label = "; ".join(x for x in (clabel, vlabel) if x)
            sch = Schema([Column(c.name, c.type, c.not_null) for c in schema.columns], list(schema.primary_key),
                         list(schema.partition_by), list(schema.notes))
            planner = Planner(vector, sch, opts, label, _model_name(vid, n), caps, order_column, exact_commits)
            n += 1
            if trunc_note:
                planner.plan.notes.append(trunc_note)
            plan = planner.build(steps)
            plan.notes[:0] = [x for x in sch.notes]
            plans.append(plan)
    mapped = sum(p.mapped_assertions for p in plans)
    skipped = [s for p in plans for s in p.skipped_assertions]
    if mapped == 0:
        reasons = sorted({s.reason for p in plans for s in p.skipped if not s.reason.startswith("step ")}) \
            or sorted({s.reason for p in plans for s in p.skipped}) or ["no assertions"]
        for p in plans:
            p.unmappable = "; ".join(reasons)
        return Classification(**base, status=UNMAPPABLE, reason="; ".join(reasons), plans=plans, notes=vnotes)
    if skipped:
        roots = sorted({s.reason for s in skipped if not s.reason.startswith("step ")}
                       | {s.reason.split(": ", 1)[-1] for s in skipped if s.reason.startswith("step ")})
        return Classification(**base, status=PARTIAL,
                              reason=f"{len(skipped)} assertion(s) skipped: " + "; ".join(roots),
                              plans=plans, notes=vnotes)
    return Classification(**base, status=PASS_FULL, reason="", plans=plans, notes=vnotes)


def classify_all(data: Optional[Dict[str, Any]] = None, caps: Optional[Capabilities] = None) -> List[Classification]:
    data = data or load_vectors()
    caps = caps or Capabilities.detect()
    return [classify_vector(v, caps) for v in data["vectors"]]


# =====================================================================================
# The document
# =====================================================================================


def render_doc(classes: List[Classification], caps: Capabilities, data: Dict[str, Any]) -> str:
    counts = collections.Counter(c.status for c in classes)
    lines = [
        "# Paimon test vectors against lakerank's `pk_table`",
        "",
        "Generated by `python3 tests/support/paimon_vectors.py --write-doc` from",
        f"`{VECTORS.relative_to(ROOT)}` (Paimon `{data.get('paimon_commit', '?')}`, tests/data/README.md); "
        "do not edit by hand.",
        "Tests: `tests/functional/test_paimon_vectors.py` runs mapped plans through real `dbt run`s",
        "(one run = one commit) and compares with the vector's expectations: every plan of a vector the kernel",
        "tests do not replay, and a set covering every Spark-side feature of the others; the rest replay through",
        "the kernel's table simulator (`tests/unit/test_paimon_kernel.py`), which must check each of their assertions",
        "(the test module's docstring).",
        "",
        "## Summary",
        "",
        "| classification | vectors |",
        "|---|---|",
        f"| pass-full (every assertion mapped) | {counts[PASS_FULL]} |",
        f"| partial (some assertions skipped, reasons below) | {counts[PARTIAL]} |",
        f"| unmappable (no assertion mapped) | {counts[UNMAPPABLE]} |",
        "| kernel (merge-function / field-aggregator unit vectors: covered by the kernel tests, "
        f"tests/unit/test_paimon_kernel.py) | {counts[KERNEL]} |",
        f"| **total** | {len(classes)} |",
        "",
        f"Mapped assertions: {sum(c.mapped for c in classes)}; skipped assertions: {sum(c.skipped for c in classes)}.",
        "",
        "Materialization capabilities detected when this was generated:",
        "- dbt var `lakerank_full_compaction` (explicit full compaction with changelog): "
        + ("implemented" if caps.full_compaction_var
           else "**not implemented** in lakerank_lib/macros/materializations/pk_table/"),
        f"- immutable `ignore-delete` / `ignore-update-before` check (\"Cannot change ... from true to false.\"): "
        f"{'implemented' if caps.immutable_option_check else '**not implemented**'}",
        "",
        "## Mapping rules",
        "",
        "- Each commit is a `dbt run -s <model>` whose SELECT is a `VALUES` list cast to the schema types plus a",
        "  `rowkind` column; arrival order = the VALUES order (pk_table's default scan order, no stored `order_by`",
        "  column; `PAIMON_VECTORS_ORDER_COLUMN=_ord` passes an explicit `order_by` column instead).",
        "- Schemas: Flink/Spark types -> Spark (`VARCHAR(n)`/`CHAR` -> string, `MULTISET<X>` -> `map<x,int>`,",
        "  `ROW<..>` -> struct, `NOT NULL` not enforced); rows listing fewer values than the schema keep the first N "
        "columns.",
        "- `DELETE FROM t WHERE c` -> a commit of `select <cols>, '-D' as rowkind from t where c`; `UPDATE` on",
        "  deduplicate -> the same with `+U`; `ALTER TABLE .. SET` -> options of later commits (physical options are",
        "  no-ops); `ALTER TABLE .. MODIFY` before any write -> column type; `CALL sys.compact` / `compact: full` ->",
        "  the dbt var `lakerank_full_compaction` when the producer is full-compaction, otherwise a no-op (every",
        "  commit is a full compaction).",
        "- Batch queries: the table name -> `lakerank.<model>`, `*` -> the schema columns (no `_bucket`);",
        "  `scan.snapshot-id` / `VERSION AS OF n` -> `lakerank_lib.as_of`; `paimon_incremental_query(t, a, b)` ->",
        "  `lakerank_lib.changes` (plain table: +I/+U rows only).",
        "- Snapshot ids: with lookup compaction (lookup producer, deletion vectors, first-row, force-lookup) or a",
        "  compaction in every commit (Flink full-compaction, commit.force-compact) commit c writes snapshots 2c-1",
        "  (APPEND) and 2c (COMPACT); 2c = state after commit c; 2c-1 = after commit c, or after c-1 with deletion",
        "  vectors (an APPEND snapshot exposes only compacted data). Otherwise snapshot n = commit n.",
        "- Streams: `expected_changelog` after a `stream_query` = `lakerank_lib.changes(rel, <last checked commit>,",
        "  <current commit>)` (rowkind + columns), order-insensitive; `ordered` checks the order within each key.",
        "  A stream started after writes (or `from-snapshot-full`) first emits `lakerank_lib.as_of` rows as +I.",
        "- Flink with `changelog-producer=full-compaction` compacts after every commit ->",
        "  `'full-compaction.delta-commits'='1'` is passed.",
        "- Values: DECIMAL as strings with scale, DATE `yyyy-MM-dd`, TIMESTAMP `yyyy-MM-ddTHH:mm:ss`, MAP as an",
        "  entry set, ROW as a list, FLOAT compared as float32 bits, DOUBLE as float64 bits.",
        "- Expected errors: the dbt run must fail and its message contain the text (or its key part, up to the",
        "  first `, ` / `. ` / `: `, when a traceback re-words the tail).",
        "",
        "## Running",
        "",
        "`python3 -m pytest -q tests/functional/test_paimon_vectors.py -p no:cacheprovider -x` (one JVM; one",
        "`LAKERANK_HOME` shared by all plans, each with its own model). Switches:",
        "`PAIMON_VECTORS_SHARED_HOME=0` (a fresh home per plan: ~13 s more per plan),",
        "`PAIMON_VECTORS_EXACT_COMMITS=1` (never coalesce `commit_each_row`),",
        "`PAIMON_VECTORS_ORDER_COLUMN=_ord` (explicit `order_by` column; it is stored and takes part in merges,",
        "e.g. pu-16 then fails option validation: a partial-update default aggregate needs a sequence group for "
        "`_ord`).",
        "",
        "## Vectors",
        "",
        "| id | engine | platform | level | classification | mapped / skipped assertions |",
        "|---|---|---|---|---|---|",
    ]
    for c in classes:
        lines.append(f"| {c.vector_id} | {_md(c.engine)} | {c.platform} | {c.level} | {c.status} "
                     f"| {c.mapped} / {c.skipped} |")
    lines += ["", "## Details", ""]
    for c in classes:
        lines.append(f"### {c.vector_id} — {c.status}")
        lines.append("")
        lines.append(f"engine `{c.engine}`, {c.platform}, level `{c.level}`")
        if c.status in (UNMAPPABLE, KERNEL, PARTIAL):
            lines.append(f"- {c.status}: {_md(c.reason)}")
        for note in c.notes:
            lines.append(f"- note: {note}")
        if c.status != KERNEL:
            for p in c.plans:
                head = f"- plan `{p.model}`" + (f" ({p.label})" if p.label else "") + \
                    f": {p.mapped_assertions} mapped, {len(p.skipped_assertions)} skipped assertion(s); " \
                    f"options {json.dumps(p.options, sort_keys=True)}"
                lines.append(head)
                for s in p.skipped:
                    kind = "assertion" if s.assertion else "step"
                    lines.append(f"  - skipped {kind} #{s.index} `{_md(s.what)}`: {_md(s.reason)}")
                for n in p.notes:
                    lines.append(f"  - {_md(n)}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _md(s: str) -> str:
    s = s.replace("|", "\\|").replace("\n", " ")
    return s if len(s) < 300 else s[:297] + "..."


def doc_status_table(text: str) -> Dict[str, str]:
    """vector id -> classification, read back from the doc's table."""
    out = {}
    for m in re.finditer(r"^\| ([^|\s]+) \| .* \| (pass-full|partial|unmappable|kernel) \| \d+ / \d+ \|$", text, re.M):
        out[m.group(1).strip()] = m.group(2)
    return out


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--write-doc", action="store_true", help=f"write {DOC_PATH.relative_to(ROOT)}")
    ap.add_argument("--show", metavar="ID", help="print the plans of one vector")
    args = ap.parse_args(argv)
    data = load_vectors()
    caps = Capabilities.detect()
    classes = [classify_vector(v, caps) for v in data["vectors"]]
    if args.show:
        for c in classes:
            if c.vector_id == args.show:
                print(c.status, c.reason)
                for p in c.plans:
                    print(f"== {p.title} model={p.model} options={p.options} pk={p.primary_key} parts={p.partition_by}")
                    print("   columns:", [(col.name, col.spark) for col in p.schema.columns])
                    for s in p.steps:
                        print("  ", s)
                    for s in p.skipped:
                        print("   SKIP", s)
                    for n in p.notes:
                        print("   NOTE", n)
        return 0
    if args.write_doc:
        DOC_PATH.write_text(render_doc(classes, caps, data), encoding="utf-8")
        print(f"wrote {DOC_PATH}")
    counts = collections.Counter(c.status for c in classes)
    print(", ".join(f"{k}: {counts[k]}" for k in (PASS_FULL, PARTIAL, UNMAPPABLE, KERNEL)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
