"""Paimon's own test vectors, run through real ``dbt run``s of lakerank's ``pk_table``.

Every table-level vector (and sub-case, and value of a parameterised option) that
``paimon_vectors.py`` maps is one test, run in one of two places:

* ``test_vector``: through Spark (below). These are every plan of a vector the kernel's table
  simulator does not replay (DELETE/UPDATE statements, ALTER TABLE, time travel, system tables,
  expected errors of a run, deletion vectors, ...), and from the vectors it does replay the
  plans in ``SPARK_ALSO``: at least one for every Spark-side feature (``spark_features``: engine
  and changelog producer, column types, option keys, aggregate functions, kinds of rows,
  commits and reads) of the plans left to the kernel, which
  ``test_spark_plans_cover_the_kernel_only_plans`` checks.
* ``test_vector_in_kernel``: the other plans of the vectors ``tests/unit/test_paimon_kernel.py``
  replays through ``commit_key`` (the merge every pk_table commit runs in its Python workers):
  the replay must check every assertion the plan maps, or the test fails. What these plans
  add over the Spark ones is merge arithmetic (more option variants of one vector, more
  commits of the same shape: cl-08a/b's ten), which is the kernel's; through Spark they were
  143 of the 243 commits, at ~2.8 worker-seconds a commit (the CI at 87e041c, 2026-11-27).

A throwaway dbt project (session-scoped, lakerank
installed as a local package) holds one model per plan, and all plans share one
``LAKERANK_HOME``. The plans run in lockstep: in round k every plan whose next step is a commit
runs its plain checks before that commit, gets its model file rewritten, and then ONE
``dbt run -s m1 m2 ...`` commits all of them (the profile's 4 dbt threads); each model's
success, failure and error message are read back by node name from that run's results, so an
expected error is matched against its own model's message and a plan whose commit fails
unexpectedly stops alone. Batch queries read ``lakerank.<model>`` through the embedded
SparkSession; changelog windows and time travel go through ``lakerank_lib.changes`` /
``lakerank_lib.as_of``, compiled for all plans in one ``dbt compile --inline`` at the end (per plan
if that fails, so a compile error stays with its plan; checks that expect an error compile per
plan). A module-scoped fixture runs every selected plan once; each ``test_vector`` asserts its
own plan's record. A Python exception in one plan is recorded as that plan's failure.

Switches: ``PAIMON_VECTORS_BATCH=0`` runs each plan alone (one ``dbt run -s <model>`` per
commit, one compile per plan), to compare a batched outcome with an isolated one;
``PAIMON_VECTORS_SHARED_HOME=0`` runs each plan alone in a fresh home.

The fast tests at the bottom (no Spark) check the parser/classifier and that
``docs/paimon_vectors.md`` lists every vector with its current classification.
"""

from __future__ import annotations

import collections
import copy
import json
import os
import pathlib
import re
import sys
import time
import traceback
from typing import Any, Callable, Dict, List, Optional, Tuple

import pytest

import paimon_vectors as pv

ROOT = pv.ROOT
sys.path.insert(0, str(ROOT / "tests" / "unit"))
import test_paimon_kernel as kernel  # noqa: E402  (its table simulator: replay_table_vector)

PROFILES = ROOT / "profiles"

CAPS = pv.Capabilities.detect()
DATA = pv.load_vectors()  # tests/data/paimon_vectors_public.json: no vectors is a failure
assert DATA["vectors"], "no Paimon vectors loaded"
CLASSES = [pv.classify_vector(v, CAPS) for v in DATA["vectors"]]


# The plans that run through Spark although the kernel replays their vector: one or more for
# every feature of the kernel-only plans (test_spark_plans_cover_the_kernel_only_plans), the
# negative control's twin (dedup-07), and pu-37, whose stream from a full start (as_of rows,
# then the changes) the kernel's simulation does not read.
SPARK_ALSO = {
    "agg-04", "agg-07", "agg-08", "agg-10", "agg-25", "agg-23[changelog-producer=lookup,merge-engine=aggregation]",
    "cl-03", "cl-07b[changelog-producer=full-compaction]", "cl-11", "dedup-06", "dedup-07", "dedup-16",
    "fr-03", "fr-04", "pu-10", "pu-16", "pu-17", "pu-30", "pu-37",
}


def kernel_only(plan: pv.Plan) -> bool:
    """Whether ``plan`` runs only through the kernel's replay (test_vector_in_kernel)."""
    return plan.vector_id in kernel.TABLE_VECTOR_IDS and plan.title not in SPARK_ALSO


def _params():
    out = []
    for c in CLASSES:
        if c.status == pv.KERNEL:
            continue
        if not c.plans:
            out.append(pytest.param(c, None, id=c.vector_id))
            continue
        for p in c.plans:
            if not kernel_only(p):
                out.append(pytest.param(c, p, id=p.title))
    return out


def _negative_control_plan() -> Optional[pv.Plan]:
    """dedup-07 (deduplicate, descending sequence.field: keeps (1, 10)) with a wrong expectation."""
    vector = next((v for v in DATA["vectors"] if v["id"] == "dedup-07"), None)
    if vector is None:
        return None
    vector = copy.deepcopy(vector)
    vector["id"] = "neg-control"
    for step in vector["steps"]:
        if "query" in step:
            step["expected"] = [[1, 20]]
    (plan,) = pv.classify_vector(vector, CAPS).plans
    return plan


NEGATIVE_CONTROL = _negative_control_plan()


# --------------------------------------------------------------------------------------------
# The throwaway project
# --------------------------------------------------------------------------------------------

DBT_PROJECT = """\
name: vectors
version: "1.0.0"
config-version: 2
profile: lakerank
model-paths: ["models"]
macro-paths: ["macros"]
target-path: "target"
clean-targets: ["target", "dbt_packages"]
models:
  vectors:
    +materialized: pk_table
"""

DBT_CALLS: collections.Counter = collections.Counter()  # dbt invocations of this module, by command


def _invoke(runner, project: pathlib.Path, home: pathlib.Path, *args: str, vars: Optional[Dict[str, Any]] = None):
    os.environ["LAKERANK_HOME"] = str(home)
    cli = [*args, "--project-dir", str(project), "--profiles-dir", str(PROFILES)]
    if vars:
        cli += ["--vars", json.dumps(vars)]
    DBT_CALLS[args[0]] += 1
    return runner.invoke(cli)


def _messages(res) -> str:
    msgs = []
    for r in getattr(res.result, "results", None) or []:
        if str(getattr(r, "status", "")).lower() in ("error", "fail", "runstatus.error"):
            msgs.append(str(r.message))
    if res.exception is not None:
        msgs.append(f"{type(res.exception).__name__}: {res.exception}")
    return "\n".join(msgs)


def _per_model(res, models: List[str]) -> Dict[str, Tuple[bool, str]]:
    """(success, error message) of each model of one ``dbt run``, by node name."""
    by_name = {}
    for r in getattr(res.result, "results", None) or []:
        node = getattr(r, "node", None)
        if node is not None:
            by_name[node.name] = r
    whole = f"{type(res.exception).__name__}: {res.exception}" if res.exception is not None else ""
    out = {}
    for m in models:
        r = by_name.get(m)
        if r is None:
            out[m] = (False, "\n".join(x for x in (f"no result for model {m} in this dbt run", whole) if x))
            continue
        status = str(getattr(r.status, "value", r.status)).lower()
        ok = status == "success" and res.exception is None
        msgs = [] if status == "success" else [f"{status}: {r.message}"]
        if whole:
            msgs.append(whole)
        out[m] = (ok, "\n".join(msgs))
    return out


@pytest.fixture(scope="session")
def vectors_project(runner, tmp_path_factory) -> pathlib.Path:
    proj = tmp_path_factory.mktemp("vectors_project")
    (proj / "models").mkdir()
    (proj / "macros").mkdir()
    (proj / "dbt_project.yml").write_text(DBT_PROJECT)
    (proj / "packages.yml").write_text(f"packages:\n  - local: {ROOT / 'lakerank_lib'}\n")
    res = _invoke(runner, proj, proj / "deps_home", "deps")
    assert res.success, f"dbt deps failed: {res.exception}"
    return proj


class VectorRun:
    """The state and the checks of one :class:`paimon_vectors.Plan`; its dbt runs are made by a
    :class:`Lockstep`, together with other plans'."""

    def __init__(self, project: pathlib.Path, plan: pv.Plan):
        self.project = project
        self.plan = plan
        self.model = plan.model
        self.rel = f"lakerank.{plan.model}"
        self.sids: Dict[int, int] = {0: 0}  # commit marker -> lakerank snapshot id
        self.failures: List[str] = []
        self.checked = 0
        self.dbt_calls = 0  # dbt invocations this plan took part in (shared with the other plans)
        self.pos = 0  # next step of plan.steps
        self.deferred: List[pv.Check] = []
        self.calls: Dict[str, Optional[str]] = {}  # deferred placeholder -> macro call (None: empty relation)
        self.stopped = False  # a failed commit or a Python exception: the rest of the plan is not run

    @property
    def model_path(self) -> pathlib.Path:
        return self.project / "models" / f"{self.model}.sql"

    def crash(self, where: str, exc: BaseException) -> None:
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-4:])
        self.failures.append(f"{where}: Python exception {type(exc).__name__}: {_clip(str(exc))}\n{tb}")
        self.stopped = True

    def write_model(self, commit: pv.RunCommit) -> None:
        schema = commit.schema
        cfg = {
            "materialized": "pk_table",
            "primary_key": self.plan.primary_key,
            "partition_by": self.plan.partition_by,
            "options": commit.options,
        }
        if self.plan.order_column:
            cfg["order_by"] = [self.plan.order_column]
        args = ", ".join(f"{k}={json.dumps(v)}" for k, v in cfg.items())
        if commit.input_sql is not None:
            body = commit.input_sql
        else:
            body = "{% raw %}\n" + pv.values_sql(schema.columns, commit.rows, self.plan.order_column) + "\n{% endraw %}"
        text = f"-- {self.plan.title} step {commit.index}: {commit.label}\n{{{{ config({args}) }}}}\n{body}\n"
        self.model_path.write_text(text)

    # ------------------------------------------------------------------ spark
    def spark(self):
        from dbt.adapters.lakerank.session import current_thread_session

        return current_thread_session()

    def snapshot_id(self) -> int:
        spark = self.spark()
        if not spark.catalog.tableExists(self.rel):
            return 0
        for row in spark.sql(f"show tblproperties {self.rel}").collect():
            if row[0] == "lakerank.snapshot_id":
                return int(row[1])
        return 0

    def fetch(self, sql: str) -> Tuple[List[List[Any]], List[Tuple]]:
        from pyspark.sql import functions as F

        spark = self.spark()
        if spark.catalog.tableExists(self.rel):
            spark.catalog.refreshTable(self.rel)
        df = spark.sql(sql)
        fields = df.schema.fields
        names = [f"c{i}" for i in range(len(fields))]
        df = df.toDF(*names)
        exprs = []
        for n, f in zip(names, fields):
            if f.dataType.typeName() in ("timestamp", "timestamp_ntz"):
                exprs.append(F.date_format(F.col(n), "yyyy-MM-dd'T'HH:mm:ss").alias(n))
            else:
                exprs.append(F.col(n))
        rows = [[_py(v) for v in r] for r in df.select(*exprs).collect()]
        types = [pv.type_from_spark_json(f.dataType.jsonValue()) for f in fields]
        return rows, types

    # ------------------------------------------------------------------ steps
    # deferred checks: lakerank_lib.changes / lakerank_lib.as_of, compiled once at the end
    _PH = re.compile(r"\{\{(CHANGES|AS_OF|AS_OF_RAW):(-?\d+)(?::(-?\d+))?\}\}")

    def next_commit(self) -> Optional[pv.RunCommit]:
        """Runs the plain checks before the plan's next commit, in order (the lakerank macro
        checks and the expected-error checks are deferred), and returns that commit, or None
        when the plan has no commit left."""
        while self.pos < len(self.plan.steps):
            step = self.plan.steps[self.pos]
            self.pos += 1
            if isinstance(step, pv.RunCommit):
                return step
            if isinstance(step, pv.Check):
                if self._PH.search(step.sql) or (step.prefix_rows and self._PH.search(step.prefix_rows)):
                    self.deferred.append(step)
                elif step.expect_error is not None:
                    self.deferred.append(step)
                else:
                    self.run_plain_check(step)
        return None

    def finish_commit(self, c: pv.RunCommit, ok: bool, msg: str) -> bool:
        """Records the outcome of the commit's dbt run; False when the plan cannot go on."""
        where = f"step {c.index} ({c.label})"
        if c.expect_error is not None:
            self.checked += 1
            if ok:
                self.failures.append(f"{where}: expected the run to fail with {c.expect_error!r}, but it succeeded")
            else:
                matched, _how = pv.error_matches(c.expect_error, msg)
                if not matched:
                    self.failures.append(f"{where}: expected error {c.expect_error!r}; got: {_clip(msg)}")
            return True
        if not ok:
            self.failures.append(f"{where}: dbt run failed: {_clip(msg)}")
            return False
        self.sids[c.marker] = self.snapshot_id()
        return True

    def resolve_plain(self, sql: str) -> str:
        return sql.replace(pv.REL, self.rel)

    def check_rows(self, chk: pv.Check, rows: List[List[Any]], types: List[Tuple]) -> None:
        self.checked += 1
        exp = chk.expected
        width = {len(r) for r in exp}
        if exp and width != {len(types)}:
            self.failures.append(
                f"step {chk.index} {chk.what}: expected rows of width {width}, query has {len(types)} columns")
            return
        diff = pv.compare_rows(rows, exp, types, ordered=chk.ordered, any_order=chk.any_order,
                               key_positions=chk.key_positions)
        if diff:
            self.failures.append(f"step {chk.index} {chk.what}: {diff}")

    def run_plain_check(self, chk: pv.Check) -> None:
        try:
            rows, types = self.fetch(self.resolve_plain(chk.sql))
        except Exception as exc:  # noqa: BLE001
            self.checked += 1
            self.failures.append(f"step {chk.index} {chk.what}: query failed: {_clip(str(exc))}")
            return
        self.check_rows(chk, rows, types)

    def macro_call(self, m: re.Match) -> Optional[str]:
        kind, a, b = m.group(1), int(m.group(2)), m.group(3)
        ref = f"ref('{self.model}')"
        if kind == "CHANGES":
            return f"{{{{ lakerank_lib.changes({ref}, {self.sids[a]}, {self.sids[int(b)]}) }}}}"
        if kind == "AS_OF_RAW":
            return f"{{{{ lakerank_lib.as_of({ref}, {a}) }}}}"
        sid = self.sids[a]
        if sid == 0:
            return None
        return f"{{{{ lakerank_lib.as_of({ref}, {sid}) }}}}"

    def empty_relation(self) -> str:
        cols = ", ".join(pv.quote(c.name) for c in self.plan.schema.columns)
        return f"(select {cols} from {self.rel} where false)"

    def deferred_calls(self) -> List[str]:
        """The placeholders of the deferred (non-error) checks that need a compiled macro call."""
        normal = [c for c in self.deferred if c.expect_error is None]
        texts = [c.sql for c in normal] + [c.prefix_rows for c in normal if c.prefix_rows]
        self.calls = {}
        for t in texts:
            for m in self._PH.finditer(t):
                if m.group(0) not in self.calls:
                    self.calls[m.group(0)] = self.macro_call(m)
        return [k for k, v in self.calls.items() if v is not None]

    def run_deferred(self, compiled: Dict[str, str], compile_error: Optional[str],
                     compile_macros: Callable[[List[str]], Tuple[bool, str, List[str]]]) -> None:
        """The deferred checks, given the compiled calls of :meth:`deferred_calls` (or the
        error of their compile). Checks that expect an error compile their own call."""
        normal = [c for c in self.deferred if c.expect_error is None]
        errors = [c for c in self.deferred if c.expect_error is not None]
        if compile_error is not None:
            for c in normal:
                self.checked += 1
                self.failures.append(
                    f"step {c.index} {c.what}: dbt compile of lakerank macros failed: {_clip(compile_error)}")
            normal = []

        def render(sql: str) -> str:
            def sub(m):
                if self.calls.get(m.group(0)) is None:
                    return self.empty_relation()
                return compiled[m.group(0)]

            return self._PH.sub(sub, sql).replace(pv.REL, self.rel)

        for c in normal:
            try:
                rows, types = self.fetch(render(c.sql))
                if c.prefix_rows:
                    prows, _ = self.fetch(render(c.prefix_rows))
                    rows = prows + rows
            except Exception as exc:  # noqa: BLE001
                self.checked += 1
                self.failures.append(f"step {c.index} {c.what}: query failed: {_clip(str(exc))}")
                continue
            self.check_rows(c, rows, types)
        for c in errors:
            self.checked += 1
            m = self._PH.search(c.sql)
            call = self.macro_call(m) if m else None
            err = None
            if call is not None:
                ok, msg, out = compile_macros([call])
                if not ok:
                    err = msg
                else:
                    try:
                        self.fetch(self._PH.sub(lambda _m, out=out: out[0], c.sql))
                    except Exception as exc:  # noqa: BLE001
                        err = str(exc)
            if err is None:
                self.failures.append(f"step {c.index} {c.what}: expected error {c.expect_error!r}, got none")
            elif not pv.error_matches(c.expect_error, err)[0]:
                self.failures.append(f"step {c.index} {c.what}: expected error {c.expect_error!r}; got {_clip(err)}")


class Lockstep:
    """Runs several plans side by side in one home: each round, one ``dbt run`` commits every
    plan whose next step is a commit; at the end, one ``dbt compile --inline`` compiles every
    plan's lakerank macro calls."""

    def __init__(self, runner, project: pathlib.Path, home: pathlib.Path, runs: List[VectorRun]):
        self.runner = runner
        self.project = project
        self.home = home
        self.runs = runs
        self.rounds = 0

    def dbt(self, *args: str, vars: Optional[Dict[str, Any]] = None):
        return _invoke(self.runner, self.project, self.home, *args, vars=vars)

    def run(self) -> None:
        try:
            active = list(self.runs)
            while active:
                batch: List[Tuple[VectorRun, pv.RunCommit]] = []
                for r in active:
                    try:
                        c = r.next_commit()
                        if c is not None:
                            r.write_model(c)
                            batch.append((r, c))
                    except Exception as exc:  # noqa: BLE001
                        r.crash("before its next commit", exc)
                        r.model_path.unlink(missing_ok=True)
                if not batch:
                    break
                outcomes = self.commit_round(batch)
                for r, c in batch:
                    r.dbt_calls += 1
                    try:
                        ok, msg = outcomes[r.model]
                        if not r.finish_commit(c, ok, msg):
                            # a failed commit leaves the rest of the plan meaningless
                            r.failures.append("(remaining steps not run after the failed commit)")
                            r.stopped = True
                    except Exception as exc:  # noqa: BLE001
                        r.crash(f"step {c.index} ({c.label})", exc)
                    if r.stopped:  # its model leaves the project: nothing of it can break later parses
                        r.model_path.unlink(missing_ok=True)
                active = [r for r, _ in batch if not r.stopped]
            self.deferred()
        finally:
            for r in self.runs:
                r.model_path.unlink(missing_ok=True)

    def commit_round(self, batch: List[Tuple[VectorRun, pv.RunCommit]]) -> Dict[str, Tuple[bool, str]]:
        models = [r.model for r, _ in batch]
        compaction = [r.model for r, c in batch if c.full_compaction]
        # pk_compaction: a list of model names asks for a full compaction of those models only
        vars = {"lakerank_full_compaction": compaction} if compaction else None
        self.rounds += 1
        try:
            res = self.dbt("run", "-s", *models, vars=vars)
            return _per_model(res, models)
        except Exception as exc:  # noqa: BLE001  (dbtRunner itself blew up: no model has a result)
            msg = f"dbt run raised {type(exc).__name__}: {exc}"
            return {m: (False, msg) for m in models}

    def compile_macros(self, calls: List[str], runs: List[VectorRun]) -> Tuple[bool, str, List[str]]:
        for r in runs:
            r.dbt_calls += 1
        parts = ["select 1 as lakerank_vectors"]
        for i, call in enumerate(calls):
            parts.append(f"/*@@{i}@@*/ {call}")
        parts.append("/*@@END@@*/")
        try:
            res = self.dbt("compile", "--inline", "\n".join(parts))
            if not res.success:
                return False, _messages(res), []
            text = res.result.results[0].node.compiled_code
            out = []
            for i in range(len(calls)):
                seg = text.split(f"/*@@{i}@@*/", 1)[1]
                seg = re.split(r"/\*@@(?:\d+|END)@@\*/", seg, maxsplit=1)[0]
                out.append(seg.strip())
            return True, "", out
        except Exception as exc:  # noqa: BLE001
            return False, f"dbt compile raised {type(exc).__name__}: {exc}", []

    def deferred(self) -> None:
        runs = [r for r in self.runs if not r.stopped and r.deferred]
        needed: Dict[str, List[str]] = {}
        for r in runs:
            try:
                needed[r.model] = r.deferred_calls()
            except Exception as exc:  # noqa: BLE001
                r.crash("deferred checks", exc)
        runs = [r for r in runs if not r.stopped]
        compiled: Dict[str, Dict[str, str]] = {r.model: {} for r in runs}
        errors: Dict[str, str] = {}
        todo = [r for r in runs if needed[r.model]]
        if todo:
            # every plan's calls in one compile; if that fails, per plan (so that one plan's
            # error is attributed to it alone)
            calls = [r.calls[k] for r in todo for k in needed[r.model]]
            ok, msg, out = self.compile_macros(calls, todo)
            if ok:
                it = iter(out)
                for r in todo:
                    compiled[r.model] = {k: next(it) for k in needed[r.model]}
            elif len(todo) == 1:
                errors[todo[0].model] = msg
            else:
                for r in todo:
                    ok, msg, out = self.compile_macros([r.calls[k] for k in needed[r.model]], [r])
                    if ok:
                        compiled[r.model] = dict(zip(needed[r.model], out))
                    else:
                        errors[r.model] = msg
        for r in runs:
            try:
                r.run_deferred(compiled[r.model], errors.get(r.model),
                               lambda calls, r=r: self.compile_macros(calls, [r]))
            except Exception as exc:  # noqa: BLE001
                r.crash("deferred checks", exc)


def _batched() -> bool:
    return os.environ.get("PAIMON_VECTORS_BATCH", "1") != "0"


def _shared_home() -> bool:
    return os.environ.get("PAIMON_VECTORS_SHARED_HOME", "1") != "0"


def check_unique_models(plans: List[pv.Plan]) -> None:
    """Plans that share a dbt project and a home must not share a model (= table) name."""
    seen: Dict[str, List[str]] = collections.defaultdict(list)
    for p in plans:
        seen[p.model].append(p.title)
    dup = {m: titles for m, titles in seen.items() if len(titles) > 1}
    if dup:
        raise RuntimeError(f"Paimon vector plans share model names (they would overwrite each other's tables): {dup}")


def run_plans(runner, project: pathlib.Path, plans: List[pv.Plan],
              fresh_home: Callable[[], pathlib.Path]) -> Tuple[Dict[str, VectorRun], List[Lockstep]]:
    """Runs ``plans``: all in one lockstep batch in the shared home (default), or each alone."""
    check_unique_models(plans)
    runs = [VectorRun(project, p) for p in plans]
    if _shared_home():
        home = project / "shared_home"  # one metastore for all plans (faster, less isolated)
        groups = [(home, runs)] if _batched() else [(home, [r]) for r in runs]
    else:
        groups = [(fresh_home(), [r]) for r in runs]
    steps = []
    for home, group in groups:
        step = Lockstep(runner, project, home, group)
        step.run()
        steps.append(step)
    return {r.model: r for r in runs}, steps


def _py(v: Any) -> Any:
    from pyspark.sql import Row

    if isinstance(v, Row):
        return [_py(x) for x in v]
    if isinstance(v, dict):
        return {_py(k): _py(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_py(x) for x in v]
    if isinstance(v, bytearray):
        return bytes(v)
    return v


def _clip(text: str, n: int = 1500) -> str:
    text = re.sub(r"\s+", " ", text or "")
    return text if len(text) <= n else text[:n] + " ..."


# --------------------------------------------------------------------------------------------
# The dbt-backed tests
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def vector_runs(request, runner, vectors_project, tmp_path_factory) -> Dict[str, VectorRun]:
    """Runs every plan of the selected ``test_vector`` items (and the negative control, if its
    test is selected) once, batched; each test then asserts its own plan's record."""
    check_unique_models([p for c in CLASSES for p in c.plans] + ([NEGATIVE_CONTROL] if NEGATIVE_CONTROL else []))
    plans: List[pv.Plan] = []
    for item in request.session.items:
        if getattr(item, "module", None) is not request.module:
            continue
        name = getattr(item, "originalname", item.name)
        if name == "test_vector":
            plan = item.callspec.params.get("plan")
            if plan is not None and plan.mapped_assertions > 0 and all(plan is not q for q in plans):
                plans.append(plan)
        elif name == "test_runner_detects_a_wrong_expectation" and NEGATIVE_CONTROL is not None:
            plans.append(NEGATIVE_CONTROL)
    before = sum(DBT_CALLS.values())
    t0 = time.time()
    runs, steps = run_plans(runner, vectors_project, plans, lambda: tmp_path_factory.mktemp("home"))
    made = sum(DBT_CALLS.values()) - before
    line = (f"paimon vectors: {len(plans)} plans in {len(steps)} lockstep group(s), "
            f"{sum(s.rounds for s in steps)} commit rounds, {made} dbt invocations "
            f"({sum(DBT_CALLS.values())} in this module: {dict(DBT_CALLS)}), {time.time() - t0:.0f}s")
    print(line)
    if not request.config.pluginmanager.has_plugin(_Summary.name):  # the line again, in pytest's summary
        request.config.pluginmanager.register(_Summary(line), _Summary.name)
    return runs


class _Summary:
    name = "paimon-vectors-summary"

    def __init__(self, line: str):
        self.line = line

    def pytest_terminal_summary(self, terminalreporter):
        terminalreporter.write_line(self.line)


@pytest.mark.parametrize("classification,plan", _params())
def test_vector(classification: pv.Classification, plan: Optional[pv.Plan], vector_runs):
    if plan is None:
        pytest.skip(f"{classification.vector_id} unmappable: {classification.reason}")
    if plan.mapped_assertions == 0:
        pytest.skip(f"{plan.title}: no assertion maps: {plan.unmappable or classification.reason}")
    run = vector_runs[plan.model]
    skipped = [f"#{s.index} {s.what[:60]}: {s.reason[:120]}" for s in plan.skipped_assertions]
    print(f"{plan.title}: {run.checked} assertions, {run.dbt_calls} dbt calls (shared); skipped {skipped}")
    assert run.failures == [], f"{plan.title} ({classification.status}):\n  - " + "\n  - ".join(run.failures)
    # a plan that maps assertions must have executed every one of them
    assert run.checked == plan.mapped_assertions > 0, (run.checked, plan.mapped_assertions)


# --------------------------------------------------------------------------------------------
# The plans run only through the kernel, and what the Spark plans must cover for them
# --------------------------------------------------------------------------------------------


def _kernel_only_plans() -> List[pv.Plan]:
    return [p for c in CLASSES if c.status != pv.KERNEL for p in c.plans if p.mapped_assertions > 0 and kernel_only(p)]


def _assertion_steps(plan: pv.Plan) -> set:
    """The vector steps (their indices) whose assertions ``plan`` maps."""
    return {s.index for s in plan.steps if isinstance(s, pv.Check) or (isinstance(s, pv.RunCommit) and s.is_assertion)}


@pytest.mark.parametrize("plan", [pytest.param(p, id=p.title) for p in _kernel_only_plans()])
def test_vector_in_kernel(plan: pv.Plan):
    """A plan not run through Spark: its vector's option variant replays through the kernel's
    table simulator (tests/unit/test_paimon_kernel.py, ``commit_key``, the merge each pk_table
    commit runs in its Python workers), which checks every assertion the plan maps."""
    label = dict(part.split("=", 1) for part in plan.label.split(",")) if plan.label else {}
    variants = [o for o in kernel._option_variants(kernel.VECTORS[plan.vector_id])
                if all(o.get(k) == v for k, v in label.items())]
    assert len(variants) == 1, (plan.title, variants)
    checked = {str(i) for i in kernel.replay_table_vector(plan.vector_id, variants[0])}
    missing = _assertion_steps(plan) - checked
    assert not missing, (f"{plan.title}: the kernel's replay does not check step(s) {sorted(missing)}; "
                         "run the plan through Spark (SPARK_ALSO)")


def spark_features(plan: pv.Plan) -> set:
    """What a plan exercises on the Spark side of a pk_table commit, beyond the merge arithmetic:
    the engine and changelog producer (SQL or Python merge, which changelog is written), each
    column type (Arrow to Python and back), each option key (validation, storage) and
    aggregate function, partitioning, the kinds of input rows and of commits, and how the
    checks read (plain, lakerank_lib.changes, lakerank_lib.as_of, ordered, any order)."""
    o = plan.options
    engine, producer = o.get("merge-engine", "deduplicate"), o.get("changelog-producer", "none")
    out = {("engine", engine), ("producer", producer), ("engine+producer", engine, producer),
           ("partitioned", bool(plan.partition_by))}
    out |= {("type", c.spark) for c in plan.schema.columns}
    for key, value in o.items():
        key = re.sub(r"^fields\.[^.]+\.", "fields.*.", key)
        out.add(("option", key))
        if key in ("fields.*.aggregate-function", "fields.default-aggregate-function"):
            out.add(("aggregate", value))
    for s in plan.steps:
        if isinstance(s, pv.Check):
            out.add(("check", tuple(sorted(set(re.findall(r"\{\{(CHANGES|AS_OF)", s.sql))))))
            out |= {("check", k) for k in ("ordered", "any_order", "prefix_rows") if getattr(s, k)}
        else:
            out |= {("commit", k) for k in ("full_compaction", "input_sql", "expect_error") if getattr(s, k)}
            out |= {("rowkind", r[0]) for r in s.rows}
    return out


def test_spark_plans_cover_the_kernel_only_plans():
    """Every feature (spark_features) of a plan run only through the kernel is exercised by a
    plan that runs through Spark, so what the kernel does not run (types through Arrow, options
    through validation and storage, the changelog and time-travel reads) is still run for it."""
    spark = [p for c in CLASSES if c.status != pv.KERNEL for p in c.plans if p.mapped_assertions > 0
             and not kernel_only(p)]
    covered = set().union(*map(spark_features, spark))
    missing = {f: [p.title for p in _kernel_only_plans() if f in spark_features(p)]
               for f in set().union(*map(spark_features, _kernel_only_plans())) - covered}
    assert not missing, f"features no Spark plan runs (add a plan to SPARK_ALSO): {missing}"
    assert not SPARK_ALSO - {p.title for p in spark}, "SPARK_ALSO names a plan that does not exist"
    assert len(_kernel_only_plans()) > 0 and len(spark) > len(SPARK_ALSO)


# --------------------------------------------------------------------------------------------
# Fast tests (no Spark)
# --------------------------------------------------------------------------------------------


def test_doc_lists_every_vector_with_its_classification():
    text = pv.DOC_PATH.read_text(encoding="utf-8")
    table = pv.doc_status_table(text)
    stale = {c.vector_id: (table.get(c.vector_id), c.status) for c in CLASSES if table.get(c.vector_id) != c.status}
    assert not stale, (
        f"docs/paimon_vectors.md is stale (doc, now): {stale}; regenerate with "
        "`python3 tests/support/paimon_vectors.py --write-doc`"
    )
    assert len(CLASSES) > 0
    for status in (pv.PASS_FULL, pv.PARTIAL, pv.UNMAPPABLE, pv.KERNEL):
        n = sum(1 for c in CLASSES if c.status == status)
        assert re.search(rf"\| {re.escape(status)}[^|]*\| {n} \|", text), f"summary count of {status} != {n}"


def test_every_vector_is_classified_with_reasons():
    assert len(CLASSES) == len(DATA["vectors"])
    for c in CLASSES:
        assert c.status in (pv.PASS_FULL, pv.PARTIAL, pv.UNMAPPABLE, pv.KERNEL)
        if c.status in (pv.PARTIAL, pv.UNMAPPABLE):
            assert c.reason
            for p in c.plans:
                for s in p.skipped:
                    assert s.reason, (c.vector_id, s)
        if c.status == pv.PASS_FULL:
            assert c.mapped > 0 and c.skipped == 0
        if c.status == pv.KERNEL:
            assert c.level in pv.KERNEL_LEVELS


@pytest.mark.parametrize(
    "text,names,types,pk,parts",
    [
        (
            "pt INT, a INT, b BIGINT, c BINARY(1), d VARBINARY(1), e MAP<VARCHAR(8),VARCHAR(8)>, "
            "f MULTISET<VARCHAR(8)>; PARTITIONED BY (pt); PRIMARY KEY (pt, a)",
            ["pt", "a", "b", "c", "d", "e", "f"],
            ["int", "int", "bigint", "binary", "binary", "map<string,string>", "map<string,int>"],
            ["pt", "a"],
            ["pt"],
        ),
        ("a STRING PRIMARY KEY, b STRING, c BIGINT", ["a", "b", "c"], ["string", "string", "bigint"], ["a"], []),
        ("pt INT, pk INT, v STRING, PRIMARY KEY (pt, pk); PARTITIONED BY (pt)", ["pt", "pk", "v"],
         ["int", "int", "string"], ["pt", "pk"], ["pt"]),
        ("id INT, name STRING, dt STRING (Spark TBLPROPERTIES primary-key=id)", ["id", "name", "dt"],
         ["int", "string", "string"], ["id"], []),
        ("a INT, b INT (Spark, primary-key=a)", ["a", "b"], ["int", "int"], ["a"], []),
        ("ID INT PRIMARY KEY, NAMES ARRAY<ROW<NAME STRING, MARK STRING>>", ["ID", "NAMES"],
         ["int", "array<struct<`NAME`:string,`MARK`:string>>"], ["ID"], []),
        ("k INT PRIMARY KEY, b DECIMAL(12, 2)", ["k", "b"], ["int", "decimal(12,2)"], ["k"], []),
        ("pk INT PRIMARY KEY, a STRING NOT NULL", ["pk", "a"], ["int", "string"], ["pk"], []),
        ("j INT, k INT, m CHAR, n VARCHAR, l TIMESTAMP, i DATE, PRIMARY KEY (j, k)", ["j", "k", "m", "n", "l", "i"],
         ["int", "int", "string", "string", "timestamp", "date"], ["j", "k"], []),
        ("pt INT, a INT, b BIGINT (+ constant columns c..f, see dedup-01); PARTITIONED BY (pt); PRIMARY KEY (pt, a)",
         ["pt", "a", "b"], ["int", "int", "bigint"], ["pt", "a"], ["pt"]),
    ],
)
def test_parse_schema(text, names, types, pk, parts):
    s = pv.parse_schema(text)
    assert s.names == names
    assert [c.spark for c in s.columns] == types
    assert s.primary_key == pk and s.partition_by == parts
    assert not s.append_table


def test_parse_schema_primary_key_option_and_append_tables():
    s = pv.parse_schema("a INT, b INT, c STRING; PARTITIONED BY (a) (Spark)", {"primary-key": "a,b"})
    assert s.primary_key == ["a", "b"] and s.partition_by == ["a"]
    assert pv.parse_schema("a INT, b INT, c INT (append table)").append_table
    assert pv.parse_schema("k INT, v STRING (Spark)").append_table
    assert pv.parse_schema("pk INT PRIMARY KEY, a STRING NOT NULL").columns[1].not_null
    with pytest.raises(pv.SchemaError):
        pv.parse_schema("f ARRAY<...> (per case)")


def test_literals_round_trip_types():
    t = pv.parse_type("ARRAY<ROW<NAME STRING, MARK STRING>>")
    assert pv.literal([["a", "m'1"]], t) == (
        "cast(array(cast(named_struct('NAME', 'a', 'MARK', 'm\\'1') as struct<`NAME`:string,`MARK`:string>))"
        " as array<struct<`NAME`:string,`MARK`:string>>)")
    assert pv.literal("1.01", pv.parse_type("DECIMAL(4,2)")) == "cast('1.01' as decimal(4,2))"
    assert pv.literal(-0.0, pv.parse_type("FLOAT")) == "cast('-0.0' as float)"
    assert pv.literal({"map": [[1, "A"]]}, pv.parse_type("MAP<INT, STRING>")) == \
        "cast(map(cast(1 as int), 'A') as map<int,string>)"
    assert pv.literal(None, pv.parse_type("DATE")) == "cast(null as date)"
    with pytest.raises(pv.UnsupportedValue):
        pv.literal({"theta_sketch_of": [1]}, pv.parse_type("VARBINARY"))
    sql = pv.values_sql(pv.parse_schema("k INT PRIMARY KEY, v STRING").columns, [["+I", 1, "a"], ["-D", 1, None]], None)
    assert "from values" in sql and "'-D'" in sql


def test_canonical_values():
    f = ("float",)
    assert pv.canon(-1.2321, f) == pv.canon(float(__import__("numpy").float32(-1.2321)), f)
    assert pv.canon(-0.0, f) != pv.canon(0.0, f)
    m = pv.parse_type("MAP<INT, STRING>")
    assert pv.canon({"map": [[2, "B"], [1, "A"]]}, m) == pv.canon({1: "A", 2: "B"}, m)
    import decimal

    assert pv.canon(decimal.Decimal("11.110"), ("decimal", 5, 3)) == pv.canon("11.110", ("decimal", 5, 3))
    assert pv.canon("2022-01-01 02:00:00", ("timestamp",)) == "2022-01-01T02:00:00"
    a = pv.parse_type("ARRAY<STRING>")
    assert pv.canon(["B", "A"], a, any_order=True) == pv.canon(["A", "B"], a, any_order=True)
    assert pv.canon(["B", "A"], a) != pv.canon(["A", "B"], a)
    types = [("string",), ("int",), ("int",)]
    assert pv.compare_rows([["-U", 1, 1], ["+U", 1, 2], ["+I", 2, 1]], [["+I", 2, 1], ["-U", 1, 1], ["+U", 1, 2]],
                           types, ordered=True, key_positions=[1]) is None
    assert pv.compare_rows([["+U", 1, 2], ["-U", 1, 1]], [["-U", 1, 1], ["+U", 1, 2]], types,
                           ordered=True, key_positions=[1]) is not None


def test_option_variants_and_snapshot_mapping():
    variants, _ = pv.expand_options({"changelog-producer": "lookup | full-compaction",
                                     "merge-engine": "aggregation | partial-update",
                                     "fields.f1.sequence-group": "f0 (partial-update only)"})
    assert len(variants) == 4
    assert all(("fields.f1.sequence-group" in o) == (o["merge-engine"] == "partial-update") for _, o in variants)
    variants, notes = pv.expand_options({"fields.x.aggregation-function": "sum (sic: not a recognised key)"})
    assert variants == [("", {})] and notes
    dv = {"deletion-vectors.enabled": "true"}
    assert [pv.commit_of_snapshot(s, dv, "flink") for s in (1, 2, 3, 4)] == [0, 1, 1, 2]
    lookup = {"changelog-producer": "lookup"}
    assert [pv.commit_of_snapshot(s, lookup, "flink") for s in (1, 2, 3, 4)] == [1, 1, 2, 2]
    assert pv.commit_of_snapshot(3, {}, "spark") == 3


def test_error_matching():
    assert pv.error_matches("Cannot change ignore-delete from true to false.",
                            "pk_table x: option 'ignore-delete': Cannot change ignore-delete from true to false.")[0]
    assert pv.error_matches("Aggregate function 'max' does not support retraction, If you allow ...",
                            "PythonException: ... Aggregate function 'max' does not support retraction, if ...")[0]
    assert not pv.error_matches("Tag 'unknown' doesn't exist.", "something else")[0]


def _vector(vid: str) -> Dict[str, Any]:
    for v in DATA["vectors"]:
        if v["id"] == vid:
            return v
    pytest.skip(f"vector {vid} not in {pv.VECTORS.name}")


def _commits(plan: pv.Plan) -> List[pv.RunCommit]:
    return [s for s in plan.steps if isinstance(s, pv.RunCommit)]


def _checks(plan: pv.Plan) -> List[pv.Check]:
    return [s for s in plan.steps if isinstance(s, pv.Check)]


def test_plan_delete_alter_and_immutable_options():
    caps = pv.Capabilities(full_compaction_var=True, immutable_option_check=True)
    c = pv.classify_vector(_vector("dedup-12"), caps)
    (plan,) = c.plans
    commits = _commits(plan)
    assert "'-D' as rowkind" in commits[1].input_sql and "where pk = 2" in commits[1].input_sql
    assert commits[2].options.get("ignore-delete") == "true"
    assert commits[-1].expect_error == "Cannot change ignore-delete from true to false."
    assert c.status == pv.PASS_FULL
    c = pv.classify_vector(_vector("dedup-12"), pv.Capabilities(True, False))
    assert c.status == pv.PARTIAL and "Cannot change" in c.plans[0].skipped[0].reason


def test_plan_full_compaction_windows():
    caps = pv.Capabilities(full_compaction_var=True, immutable_option_check=True)
    (plan,) = pv.classify_vector(_vector("cl-04"), caps).plans
    assert [c.full_compaction for c in _commits(plan)] == [True, False, True, False, True]
    assert [c.sql.split("{{")[1].split("}}")[0] for c in _checks(plan)] == ["CHANGES:0:1", "CHANGES:2:3", "CHANGES:4:5"]
    without = pv.classify_vector(_vector("cl-04"), pv.Capabilities(False, True))
    assert without.status == pv.UNMAPPABLE and without.mapped == 0 and without.skipped == 3
    (flink,) = pv.classify_vector(_vector("cl-02"), caps).plans
    assert flink.options["full-compaction.delta-commits"] == "1"
    assert not any(c.full_compaction for c in _commits(flink))


def test_plan_time_travel_and_streams():
    caps = pv.Capabilities(True, True)
    (pu37,) = pv.classify_vector(_vector("pu-37"), caps).plans
    stream = _checks(pu37)[-1]
    assert "{{CHANGES:2:3}}" in stream.sql and "{{AS_OF:2}}" in stream.prefix_rows
    dv = pv.classify_vector(_vector("dv-01"), caps)
    assert len(dv.plans) == 2  # none | lookup (bitmap64 is physical)
    for p in dv.plans:
        assert [c.sql.split("{{")[1].split("}}")[0] for c in _checks(p)][1:] == ["AS_OF:1", "AS_OF:2"]
    (sys08a, sys08b) = pv.classify_vector(_vector("sys-08"), caps).plans
    assert "{{CHANGES:1:3}}" in _checks(sys08a)[-1].sql and "rowkind IN ('+I', '+U')" in _checks(sys08a)[-1].sql


def test_plan_schema_changes_and_coalesced_commits():
    caps = pv.Capabilities(True, True)
    (agg04,) = pv.classify_vector(_vector("agg-04"), caps).plans
    assert agg04.schema.column("b").spark == "decimal(5,3)"
    (pu30,) = pv.classify_vector(_vector("pu-30"), caps, exact_commits=False).plans
    assert len(_commits(pu30)) == 1 and "fields.payable_amount.aggregation-function" not in pu30.options
    (pu30x,) = pv.classify_vector(_vector("pu-30"), caps, exact_commits=True).plans
    assert len(_commits(pu30x)) == 100
    (pu21,) = pv.classify_vector(_vector("pu-21"), caps).plans
    first = _commits(pu21)[0]
    assert first.expect_error and first.options["partial-update.remove-record-on-sequence-group"] == "b"


def test_runner_detects_a_wrong_expectation(vector_runs):
    """Negative control: the dbt-backed runner must fail a plan whose expectation is wrong
    (a runner that compared nothing would let every vector pass). It runs in the same batch as
    the other plans (and as dedup-07 itself, whose right expectation must still pass there)."""
    if NEGATIVE_CONTROL is None:
        pytest.skip(f"vector dedup-07 not in {pv.VECTORS.name}")
    run = vector_runs[NEGATIVE_CONTROL.model]
    assert run.checked == 1
    assert len(run.failures) == 1 and "missing [[1, 20]]" in run.failures[0], run.failures
    twin = next((vector_runs.get(p.model) for c in CLASSES if c.vector_id == "dedup-07" for p in c.plans), None)
    if twin is not None:
        assert twin.failures == [] and twin.checked == 1, twin.failures
