"""Paimon's own test vectors, run through real ``dbt run``s of lakerank's ``pk_table``.

Every table-level vector (and sub-case, and value of a parameterised option) that
``paimon_vectors.py`` maps is one test: a throwaway dbt project (session-scoped, lakerank
installed as a local package) holds one model per plan; the model file is rewritten before each
commit and run with ``dbt run -s <model>``; batch queries read ``lakerank.<model>`` through the
embedded SparkSession; changelog windows and time travel go through ``lakerank.changes`` /
``lakerank.as_of``, compiled with one ``dbt compile --inline`` per plan. Each test gets its own
``LAKERANK_HOME``.

The fast tests at the bottom (no Spark) check the parser/classifier and that
``docs/paimon_vectors.md`` lists every vector with its current classification.
"""

from __future__ import annotations

import json
import os
import pathlib
import re
import time
from typing import Any, Dict, List, Optional, Tuple

import pytest

import paimon_vectors as pv

ROOT = pv.ROOT
PROFILES = ROOT / "profiles"

CAPS = pv.Capabilities.detect()
DATA = pv.load_vectors()  # ../shared/paimon_vectors_public.json must exist: no vectors is a failure
assert DATA["vectors"], "no Paimon vectors loaded"
CLASSES = [pv.classify_vector(v, CAPS) for v in DATA["vectors"]]


def _params():
    out = []
    for c in CLASSES:
        if c.status == pv.KERNEL:
            continue
        if not c.plans:
            out.append(pytest.param(c, None, id=c.vector_id))
            continue
        for p in c.plans:
            out.append(pytest.param(c, p, id=p.title))
    return out


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
  lakerank:
    +enabled: false
  vectors:
    +materialized: pk_table
data_tests:
  lakerank:
    +enabled: false
"""


@pytest.fixture(scope="session")
def vectors_project(runner, tmp_path_factory) -> pathlib.Path:
    proj = tmp_path_factory.mktemp("vectors_project")
    (proj / "models").mkdir()
    (proj / "macros").mkdir()
    (proj / "dbt_project.yml").write_text(DBT_PROJECT)
    (proj / "packages.yml").write_text(f"packages:\n  - local: {ROOT}\n")
    os.environ["LAKERANK_HOME"] = str(proj / "deps_home")
    res = runner.invoke(["deps", "--project-dir", str(proj), "--profiles-dir", str(PROFILES)])
    assert res.success, f"dbt deps failed: {res.exception}"
    return proj


class VectorRun:
    """Executes one :class:`paimon_vectors.Plan`."""

    def __init__(self, runner, project: pathlib.Path, home: pathlib.Path, plan: pv.Plan):
        self.runner = runner
        self.project = project
        self.home = home
        self.plan = plan
        self.model = plan.model
        self.rel = f"lakerank.{plan.model}"
        self.sids: Dict[int, int] = {0: 0}  # commit marker -> lakerank snapshot id
        self.failures: List[str] = []
        self.checked = 0
        self.dbt_calls = 0
        self.started = False

    # ------------------------------------------------------------------ dbt
    def dbt(self, *args: str, vars: Optional[Dict[str, Any]] = None) -> Tuple[bool, str, Any]:
        os.environ["LAKERANK_HOME"] = str(self.home)
        cli = [*args, "--project-dir", str(self.project), "--profiles-dir", str(PROFILES)]
        if vars:
            cli += ["--vars", json.dumps(vars)]
        res = self.runner.invoke(cli)
        self.dbt_calls += 1
        self.started = True
        msgs = []
        for r in getattr(res.result, "results", None) or []:
            if str(getattr(r, "status", "")).lower() in ("error", "fail", "runstatus.error"):
                msgs.append(str(r.message))
        if res.exception is not None:
            msgs.append(f"{type(res.exception).__name__}: {res.exception}")
        return bool(res.success), "\n".join(msgs), res

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
        (self.project / "models" / f"{self.model}.sql").write_text(text)

    # ------------------------------------------------------------------ spark
    def spark(self):
        from dbt.adapters.lakerank.connections import current_thread_session

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
    def commit(self, c: pv.RunCommit) -> bool:
        self.write_model(c)
        vars = {"lakerank_full_compaction": True} if c.full_compaction else None
        ok, msg, _ = self.dbt("run", "-s", self.model, vars=vars)
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
            self.failures.append(f"step {chk.index} {chk.what}: expected rows of width {width}, query has {len(types)} columns")
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

    # deferred checks: lakerank.changes / lakerank.as_of, compiled once at the end
    _PH = re.compile(r"\{\{(CHANGES|AS_OF|AS_OF_RAW):(-?\d+)(?::(-?\d+))?\}\}")

    def macro_call(self, m: re.Match) -> Optional[str]:
        kind, a, b = m.group(1), int(m.group(2)), m.group(3)
        ref = f"ref('{self.model}')"
        if kind == "CHANGES":
            return f"{{{{ lakerank.changes({ref}, {self.sids[a]}, {self.sids[int(b)]}) }}}}"
        if kind == "AS_OF_RAW":
            return f"{{{{ lakerank.as_of({ref}, {a}) }}}}"
        sid = self.sids[a]
        if sid == 0:
            return None
        return f"{{{{ lakerank.as_of({ref}, {sid}) }}}}"

    def empty_relation(self) -> str:
        cols = ", ".join(pv.quote(c.name) for c in self.plan.schema.columns)
        return f"(select {cols} from {self.rel} where false)"

    def compile_macros(self, calls: List[str]) -> Tuple[bool, str, List[str]]:
        parts = ["select 1 as lakerank_vectors"]
        for i, call in enumerate(calls):
            parts.append(f"/*@@{i}@@*/ {call}")
        parts.append("/*@@END@@*/")
        ok, msg, res = self.dbt("compile", "--inline", "\n".join(parts))
        if not ok:
            return False, msg, []
        node = res.result.results[0].node
        text = node.compiled_code
        out = []
        for i in range(len(calls)):
            seg = text.split(f"/*@@{i}@@*/", 1)[1]
            seg = re.split(r"/\*@@(?:\d+|END)@@\*/", seg, maxsplit=1)[0]
            out.append(seg.strip())
        return True, "", out

    def run_deferred(self, checks: List[pv.Check]) -> None:
        normal = [c for c in checks if c.expect_error is None]
        errors = [c for c in checks if c.expect_error is not None]
        texts = [c.sql for c in normal] + [c.prefix_rows for c in normal if c.prefix_rows]
        calls: Dict[str, Optional[str]] = {}
        for t in texts:
            for m in self._PH.finditer(t):
                if m.group(0) not in calls:
                    calls[m.group(0)] = self.macro_call(m)
        needed = [k for k, v in calls.items() if v is not None]
        compiled: Dict[str, str] = {}
        if needed:
            ok, msg, out = self.compile_macros([calls[k] for k in needed])
            if not ok:
                for c in normal:
                    self.checked += 1
                    self.failures.append(f"step {c.index} {c.what}: dbt compile of lakerank macros failed: {_clip(msg)}")
                normal = []
            else:
                compiled = dict(zip(needed, out))

        def render(sql: str) -> str:
            def sub(m):
                if calls.get(m.group(0)) is None:
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
                ok, msg, out = self.compile_macros([call])
                if not ok:
                    err = msg
                else:
                    try:
                        self.fetch(self._PH.sub(lambda _m: out[0], c.sql))
                    except Exception as exc:  # noqa: BLE001
                        err = str(exc)
            if err is None:
                self.failures.append(f"step {c.index} {c.what}: expected error {c.expect_error!r}, got none")
            elif not pv.error_matches(c.expect_error, err)[0]:
                self.failures.append(f"step {c.index} {c.what}: expected error {c.expect_error!r}; got {_clip(err)}")

    def run(self) -> None:
        deferred: List[pv.Check] = []
        for step in self.plan.steps:
            if isinstance(step, pv.RunCommit):
                if not self.commit(step):
                    # a failed commit leaves the rest of the plan meaningless
                    self.failures.append("(remaining steps not run after the failed commit)")
                    return
            elif isinstance(step, pv.Check):
                if self._PH.search(step.sql) or (step.prefix_rows and self._PH.search(step.prefix_rows)):
                    deferred.append(step)
                elif step.expect_error is not None:
                    deferred.append(step)
                else:
                    self.run_plain_check(step)
        if deferred:
            self.run_deferred(deferred)


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


@pytest.mark.parametrize("classification,plan", _params())
def test_vector(classification: pv.Classification, plan: Optional[pv.Plan], runner, vectors_project, tmp_path):
    if plan is None:
        pytest.skip(f"{classification.vector_id} unmappable: {classification.reason}")
    if plan.mapped_assertions == 0:
        pytest.skip(f"{plan.title}: no assertion maps: {plan.unmappable or classification.reason}")
    if os.environ.get("PAIMON_VECTORS_SHARED_HOME", "1") != "0":
        home = vectors_project / "shared_home"  # one metastore for all plans (faster, less isolated)
    else:
        home = tmp_path / "home"
    run = VectorRun(runner, vectors_project, home, plan)
    t0 = time.time()
    try:
        run.run()
    finally:
        (vectors_project / "models" / f"{plan.model}.sql").unlink(missing_ok=True)
    elapsed = time.time() - t0
    skipped = [f"#{s.index} {s.what[:60]}: {s.reason[:120]}" for s in plan.skipped_assertions]
    print(f"{plan.title}: {run.checked} assertions, {run.dbt_calls} dbt calls, {elapsed:.1f}s; skipped {skipped}")
    assert run.failures == [], f"{plan.title} ({classification.status}):\n  - " + "\n  - ".join(run.failures)
    # a plan that maps assertions must have executed every one of them
    assert run.checked == plan.mapped_assertions > 0, (run.checked, plan.mapped_assertions)


# --------------------------------------------------------------------------------------------
# Fast tests (no Spark)
# --------------------------------------------------------------------------------------------


def test_doc_lists_every_vector_with_its_classification():
    text = pv.DOC_PATH.read_text(encoding="utf-8")
    table = pv.doc_status_table(text)
    stale = {c.vector_id: (table.get(c.vector_id), c.status) for c in CLASSES if table.get(c.vector_id) != c.status}
    assert not stale, (
        f"docs/paimon_vectors.md is stale (doc, now): {stale}; regenerate with "
        "`python3 tests/python/paimon_vectors.py --write-doc`"
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
    variants, _ = pv.expand_options({"changelog-producer": "lookup | full-compaction", "merge-engine":
                                     "aggregation | partial-update", "fields.f1.sequence-group": "f0 (partial-update only)"})
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
    pytest.skip(f"vector {vid} not in {pv.vectors_path()}")


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


def test_runner_detects_a_wrong_expectation(runner, vectors_project, tmp_path):
    """Negative control: the dbt-backed runner must fail a plan whose expectation is wrong
    (a runner that compared nothing would let every vector pass)."""
    import copy

    vector = copy.deepcopy(_vector("dedup-07"))  # deduplicate, descending sequence.field: keeps (1, 10)
    vector["id"] = "neg-control"
    for step in vector["steps"]:
        if "query" in step:
            step["expected"] = [[1, 20]]
    (plan,) = pv.classify_vector(vector, CAPS).plans
    home = vectors_project / "shared_home" if os.environ.get("PAIMON_VECTORS_SHARED_HOME", "1") != "0" else tmp_path / "home"
    run = VectorRun(runner, vectors_project, home, plan)
    try:
        run.run()
    finally:
        (vectors_project / "models" / f"{plan.model}.sql").unlink(missing_ok=True)
    assert run.checked == 1
    assert len(run.failures) == 1 and "missing [[1, 20]]" in run.failures[0], run.failures
