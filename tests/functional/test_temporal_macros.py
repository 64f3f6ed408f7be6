"""lakerank_lib.zipper and lakerank_lib.as_of_join, used from an analyst's dbt project.

The analyst project (tests/fixtures/analyst) installs lakerank as a local package and builds
zippers and temporal / lookup joins over two source tables this module writes directly into
Spark (schema `lakerank`): a project dimension's audit log and an order fact table. Every
model is compared with an independent oracle in plain Python that replays the raw change
rows (no zipper, no SQL): late corrections between versions, re-corrections of a version
time, deletes and re-inserts, ties in the change order, NULL row kinds / values / keys /
times, facts exactly on a version boundary, before the first version and for keys without a
dimension. One LAKERANK_HOME (one embedded SparkSession) serves the whole module.
"""

from __future__ import annotations

import datetime as dt
import os
import random
import shutil
from collections import defaultdict
from typing import Dict, List, Optional, Sequence

import pytest
from hypothesis import HealthCheck, Phase, given, note, settings
from hypothesis import strategies as st

from lakerank_project import ROOT, SCHEMA, Lakerank

ANALYST = ROOT / "tests" / "fixtures" / "analyst"
OPEN_END = "9999-12-31 23:59:59"
TS = "%Y-%m-%d %H:%M:%S"
DIM_COLS = ["city", "designer", "status"]
CDC_SCHEMA = (
    "rowkind string, project_id long, update_time string, city string, designer string, "
    "status string, _commit_id long, _commit_time string"
)
FACT_SCHEMA = "order_id long, project_id long, order_time string, amount string"
MODELS = [
    "dim_project_version",
    "dim_project_version_collapsed",
    "dim_project_version_proctime",
    "fct_order_project",
    "fct_order_project_range",
    "fct_order_project_before",
    "fct_order_project_latest",
]


# ----------------------------------------------------------------------------- dbt + Spark


class Analyst:
    """The analyst project run in-process against one LAKERANK_HOME.

    The project runs from a copy beside the home, its package installed there: nothing the
    module does writes into the source tree, and nothing another worker does there reaches
    this project's parse."""

    def __init__(self, lr: Lakerank):
        self.lr = lr
        self.project = lr.home.parent / "analyst"
        shutil.copytree(ANALYST, self.project, ignore=shutil.ignore_patterns("dbt_packages", "target", "logs"))
        (self.project / "packages.yml").write_text(f"packages:\n  - local: {ROOT / 'lakerank_lib'}\n")
        (self.project / "package-lock.yml").unlink(missing_ok=True)
        self.started = False

    def _cli(self, args: Sequence[str], with_target: bool = True) -> List[str]:
        cli = [*args, "--project-dir", str(self.project), "--profiles-dir", str(ROOT / "profiles")]
        cli += ["--log-path", str(self.lr.home / "analyst_logs")]
        if with_target:
            cli += ["--target-path", str(self.lr.home / "analyst_target")]
        return cli

    def dbt(self, *args: str, expect_success: bool = True):
        os.environ["LAKERANK_HOME"] = str(self.lr.home)
        result = self.lr.runner.invoke(self._cli(args, with_target=args[0] != "deps"))
        if expect_success and not result.success:
            failed = [
                f"{r.node.name}: {r.message}" for r in (result.result or []) if r.status in ("error", "fail")
            ]
            raise AssertionError(f"dbt {args[0]} (analyst) failed: {failed or result.exception}\n{self._parse_log()}")
        return result

    def _parse_log(self) -> str:
        """What the failed invocation's parse saw: the installed packages and dbt's parse lines."""
        packages = sorted(p.name for p in (self.project / "dbt_packages").glob("*"))
        log = self.lr.home / "analyst_logs" / "dbt.log"
        lines = log.read_text(errors="replace").splitlines() if log.exists() else []
        start = max((i for i, line in enumerate(lines) if "Running with dbt=" in line), default=0)
        parse = [line for line in lines[start:]
                 if any(w in line.lower() for w in ("partial parsing", "full parse", "reparse"))]
        return f"installed packages: {packages}; parse lines: {parse}"

    def start(self):
        """deps, then one query through dbt so that the adapter opens this home's session."""
        if not self.started:
            self.dbt("deps")
            self.dbt("show", "--inline", "select 1 as one")
            self.spark().sql(f"create database if not exists {SCHEMA}")
            self.started = True
        return self

    def spark(self):
        """The session of this home (a dbt query first if another home's session is active)."""
        from pyspark.sql import SparkSession

        active = SparkSession._instantiatedSession
        if self.started and (active is None or active.conf.get("spark.lakerank.home", None) != str(self.lr.home)):
            self.dbt("show", "--inline", "select 1 as one")
        return self.lr.spark()

    def compile(self, sql: str) -> str:
        result = self.dbt("compile", "--inline", sql, "--quiet")
        return result.result.results[0].node.compiled_code

    def write(self, name: str, rows: List[tuple], schema: str, casts: Dict[str, str]) -> None:
        spark = self.spark()
        df = spark.createDataFrame(rows, schema=schema)
        df = df.selectExpr(*[f"cast({c} as {casts[c]}) as {c}" if c in casts else c for c in df.columns])
        df.write.mode("overwrite").format("parquet").saveAsTable(f"{SCHEMA}.{name}")

    def load(self, cdc: List[dict], facts: List[dict]) -> None:
        self.write(
            "dim_project_cdc",
            [tuple(r[c] for c in ("rowkind", "project_id", "update_time", *DIM_COLS, "_commit_id", "_commit_time"))
             for r in cdc],
            CDC_SCHEMA,
            {"update_time": "timestamp", "_commit_time": "timestamp"},
        )
        self.write(
            "fct_order",
            [tuple(r[c] for c in ("order_id", "project_id", "order_time", "amount")) for r in facts],
            FACT_SCHEMA,
            {"order_time": "timestamp", "amount": "decimal(12,2)"},
        )

    def rows(self, sql_or_table: str) -> List[tuple]:
        """Rows of a table (or a query), timestamps as strings, sorted."""
        spark = self.spark()
        df = spark.table(sql_or_table) if " " not in sql_or_table.strip() else spark.sql(sql_or_table)
        cols = []
        for f in df.schema.fields:
            if f.dataType.typeName() in ("timestamp", "timestamp_ntz"):
                cols.append(f"date_format(`{f.name}`, 'yyyy-MM-dd HH:mm:ss') as `{f.name}`")
            elif f.dataType.typeName() == "decimal":
                cols.append(f"cast(`{f.name}` as string) as `{f.name}`")
            else:
                cols.append(f"`{f.name}`")
        return sorted((tuple(r) for r in df.selectExpr(*cols).collect()), key=repr)

    def columns(self, table: str) -> List[str]:
        return self.spark().table(table).columns


@pytest.fixture(scope="module")
def analyst(runner, tmp_path_factory) -> Analyst:
    return Analyst(Lakerank(runner, tmp_path_factory.mktemp("temporal") / "home")).start()


# ----------------------------------------------------------------------------- the oracle


def _nulls_first(v):
    return (0, "") if v is None else (1, v)


def change_points(cdc: List[dict], key: Sequence[str], time_col: str, columns: Sequence[str],
                  order: Sequence[str] = ("_commit_id",), rowkind: Optional[str] = "rowkind"):
    """{key: [(t, state)]} sorted by t: the winning change of each (key, t); state None = absent.

    Replays the documented rules on raw rows: `-U` ignored, rows without a time ignored, last
    change by `order` (NULL oldest), then an add beats a `-D`, then the greatest values win."""
    groups = defaultdict(list)
    for r in cdc:
        kind = r[rowkind] if rowkind else "+I"
        if kind == "-U" or r[time_col] is None:
            continue
        groups[(tuple(r[k] for k in key), r[time_col])].append((kind, r))
    points = defaultdict(list)
    for (k, t), rs in groups.items():
        kind, win = max(rs, key=lambda kr: (tuple(_nulls_first(kr[1][c]) for c in order), kr[0] != "-D",
                                             tuple(_nulls_first(kr[1][c]) for c in columns)))
        points[k].append((t, None if kind == "-D" else tuple(win[c] for c in columns)))
    for pts in points.values():
        pts.sort(key=lambda p: p[0])
    return points


def oracle_zipper(points, collapse: bool = False, open_end: Optional[str] = OPEN_END) -> List[tuple]:
    out = []
    for k, pts in points.items():
        if collapse:
            kept = []
            for p in pts:
                if not kept or kept[-1][1] != p[1]:
                    kept.append(p)
            pts = kept
        for i, (t, state) in enumerate(pts):
            if state is not None:
                end = pts[i + 1][0] if i + 1 < len(pts) else open_end
                out.append((*k, t, end, *state))
    return sorted(out, key=repr)


def state_at(points, k: tuple, t: Optional[str], bounds: str = "[)"):
    """The dimension state of key k at time t, straight from the change points."""
    if t is None or any(v is None for v in k):
        return None
    state = None
    for pt, st_ in points.get(k, []):
        if pt < t or (bounds == "[)" and pt == t):
            state = st_
        else:
            break
    return state


def latest_state(points, k: tuple):
    if any(v is None for v in k) or not points.get(k):
        return None
    return points[k][-1][1]


def oracle_join(facts: List[dict], points, columns_idx: Sequence[int], n_cols: int,
                bounds: Optional[str] = "[)") -> List[tuple]:
    """Facts (order_id, project_id, order_time, amount) + the chosen state columns;
    bounds None = latest (lookup join)."""
    out = []
    for f in facts:
        k = (f["project_id"],)
        state = latest_state(points, k) if bounds is None else state_at(points, k, f["order_time"], bounds)
        vals = [None] * n_cols if state is None else list(state)
        out.append((f["order_id"], f["project_id"], f["order_time"], f["amount"], *[vals[i] for i in columns_idx]))
    return sorted(out, key=repr)


def expected_models(cdc: List[dict], facts: List[dict]) -> Dict[str, List[tuple]]:
    pts = change_points(cdc, ["project_id"], "update_time", DIM_COLS)
    proc = change_points(cdc, ["project_id"], "_commit_time", ["status"])
    return {
        "dim_project_version": oracle_zipper(pts),
        "dim_project_version_collapsed": oracle_zipper(pts, collapse=True, open_end=None),
        "dim_project_version_proctime": oracle_zipper(proc),
        "fct_order_project": oracle_join(facts, pts, [0, 1, 2], 3),
        "fct_order_project_range": oracle_join(facts, pts, [0, 1, 2], 3),
        "fct_order_project_before": oracle_join(facts, pts, [0, 2], 3, bounds="(]"),
        "fct_order_project_latest": oracle_join(facts, pts, [0, 1, 2], 3, bounds=None),
    }


def assert_models_match(analyst: Analyst, cdc: List[dict], facts: List[dict]) -> Dict[str, List[tuple]]:
    expected = expected_models(cdc, facts)
    got = {}
    for model in MODELS:
        got[model] = analyst.rows(f"{SCHEMA}.{model}")
        if got[model] != expected[model]:
            g, w = set(got[model]), set(expected[model])
            raise AssertionError(
                f"{model} != oracle: unexpected {sorted(g - w, key=repr)[:8]}, missing {sorted(w - g, key=repr)[:8]}"
                f" ({len(got[model])} rows, {len(expected[model])} expected)"
            )
    for model in MODELS:
        if model.startswith("fct_"):  # never dropped, never duplicated
            assert sorted(r[0] for r in got[model]) == sorted(f["order_id"] for f in facts), model
    return got


# ----------------------------------------------------------------------------- data


def T(day: int, hour: int = 0, minute: int = 0) -> str:
    return (dt.datetime(2024, 1, 1) + dt.timedelta(days=day - 1, hours=hour, minutes=minute)).strftime(TS)


def change(commit, kind, project, time, city=None, designer=None, status=None, commit_time=None):
    return {
        "rowkind": kind, "project_id": project, "update_time": time, "city": city, "designer": designer,
        "status": status, "_commit_id": commit,
        "_commit_time": commit_time or T(20, 0, commit if commit is not None else 0),
    }


def order(order_id, project, time, amount="1.00"):
    return {"order_id": order_id, "project_id": project, "order_time": time, "amount": amount}


EDGE_CDC = [
    # project 1: versions, a late correction between them, a re-correction, delete, re-insert
    change(1, "+I", 1, T(1), "bj", "amy", "open"),
    change(2, "+U", 1, T(5), "sh", "amy", "open"),
    change(3, "-U", 1, T(5), "sh", "amy", "open"),   # before-image: ignored
    change(3, "+U", 1, T(3), "gz", "bob", "open"),   # late: lands between T1 and T5
    change(4, "+U", 1, T(3), "gz", "bob", "done"),   # re-correction of the T3 version
    change(5, "-D", 1, T(8), "sh", "amy", "open"),   # tombstone: ends the T5 version
    change(6, "-D", 1, T(10), "sz", "amy", "done"),  # same commit and time as the +I below:
    change(6, "+I", 1, T(10), "sz", "amy", "done"),  # ... the add wins (delete, re-insert)
    change(7, "+U", 1, T(12), "sz", "amy", "done"),  # identical values: a version of its own
    # project 2: -D before any add, tie of two adds, NULL kind and values, NULL commit id
    change(1, "-D", 2, T(1)),
    change(2, "+I", 2, T(2), "bj", "cat", None),
    change(2, "+I", 2, T(2), "bj", "cat", "open"),   # same (key, time, commit): greatest values win
    change(3, None, 2, T(4), None, "cat", "done"),   # NULL row kind = an add ...
    change(4, "-D", 2, T(4), "bj", "cat", "open"),   # ... replaced by a later delete at T4
    change(5, "-U", 2, T(5), "before", "cat", "open"),  # a before-image never starts a version
    change(None, "+I", 2, T(6), "xx", None, None),   # NULL change order sorts oldest
    change(None, "+I", 2, T(7), "old", None, None),
    change(8, "+U", 2, T(7), "new", "dan", "open"),
    change(9, "+U", 2, None, "lost", None, None),   # no version time: ignored
    # project 3: only deleted; NULL key: its own entity, never joined
    change(2, "-D", 3, T(2)),
    change(1, "+I", None, T(1), "nullcity", None, None),
]

EDGE_FACTS = [
    order(1, 1, T(0)),              # before the first version
    order(2, 1, T(3)),              # exactly on a boundary
    order(3, 1, T(4)),
    order(4, 1, T(8)),              # exactly on the tombstone
    order(5, 1, T(9)),              # in the gap after the delete
    order(6, 1, T(12, 6), "2.50"),
    order(7, 2, T(2)),              # exactly on the first version start
    order(8, 3, T(5)),              # key whose only change is a delete
    order(9, 4, T(5)),              # key without dimension rows
    order(10, None, T(2)),          # NULL key (a NULL-key dimension entity exists)
    order(11, 1, None),             # NULL time
    order(12, 2, T(5)),             # after the T4 delete
]


def random_dataset(rng: random.Random, n_keys: int, n_commits: int, n_facts: int):
    cdc = []
    for c in range(1, n_commits + 1):
        commit_time = T(30, 0, c // 2)  # two commits share a processing time now and then
        for _ in range(rng.randint(1, 4)):
            row = change(
                c, rng.choice(["+I", "+U", "+U", "-U", "-D", None]), rng.randint(1, n_keys),
                T(1, rng.randint(0, 11)), rng.choice(["bj", "sh", None]), rng.choice(["amy", "bob"]),
                rng.choice(["open", "done", None]), commit_time,
            )
            cdc.append(row)
            if rng.random() < 0.15:  # a tie: same key, time and commit, other values
                cdc.append({**row, "city": rng.choice(["bj", "sh", "gz"]), "rowkind": rng.choice(["+U", "-D"])})
    facts = []
    for i in range(1, n_facts + 1):
        half_hours = rng.randint(-2, 24)
        facts.append(order(
            i, rng.choice(list(range(1, n_keys + 2)) + [None]),
            None if rng.random() < 0.03 else T(1, 0, 30 * half_hours), f"{rng.randint(0, 999)}.{i % 100:02d}",
        ))
    return cdc, facts


# ----------------------------------------------------------------------------- tests


def test_edge_cases_then_late_changes(analyst):
    analyst.load(EDGE_CDC, EDGE_FACTS)
    analyst.dbt("run")
    got = assert_models_match(analyst, EDGE_CDC, EDGE_FACTS)

    # The oracle itself, checked by hand on the cases the data was written for.
    assert [r for r in got["dim_project_version"] if r[0] == 1] == [
        (1, T(1), T(3), "bj", "amy", "open"),
        (1, T(3), T(5), "gz", "bob", "done"),
        (1, T(5), T(8), "sh", "amy", "open"),
        (1, T(10), T(12), "sz", "amy", "done"),
        (1, T(12), OPEN_END, "sz", "amy", "done"),
    ]
    assert [r for r in got["dim_project_version"] if r[0] == 2] == [
        (2, T(2), T(4), "bj", "cat", "open"),
        (2, T(6), T(7), "xx", None, None),
        (2, T(7), OPEN_END, "new", "dan", "open"),
    ]
    assert [r for r in got["dim_project_version"] if r[0] in (3, None)] == [
        (None, T(1), OPEN_END, "nullcity", None, None)]
    assert [r for r in got["dim_project_version_collapsed"] if r[0] == 1][-1] == (1, T(10), None, "sz", "amy", "done")
    assert analyst.columns(f"{SCHEMA}.dim_project_version") == ["project_id", "ver_start", "ver_end", *DIM_COLS]
    by_id = {r[0]: r[4:] for r in got["fct_order_project"]}
    assert by_id[1] == (None,) * 3 and by_id[4] == (None,) * 3 and by_id[5] == (None,) * 3
    assert by_id[2] == ("gz", "bob", "done") and by_id[7] == ("bj", "cat", "open")
    assert by_id[8] == by_id[9] == by_id[10] == by_id[11] == by_id[12] == (None,) * 3
    before = {r[0]: r[4:] for r in got["fct_order_project_before"]}
    assert before[2] == ("bj", "open") and before[4] == ("sh", "open") and before[7] == (None, None)
    assert analyst.columns(f"{SCHEMA}.fct_order_project_before") == [
        "order_id", "proj_id", "order_time", "amount", "project_city", "project_status"]
    latest = {r[0]: r[4:] for r in got["fct_order_project_latest"]}
    assert latest[1] == latest[11] == ("sz", "amy", "done") and latest[7] == ("new", "dan", "open")
    assert latest[8] == latest[9] == latest[10] == (None,) * 3

    # Late changes in a later commit: one lands between two versions (T3 .. T5), one
    # re-inserts the key in the gap after its delete. The rebuild corrects the previous
    # versions' ver_end and the facts that fall into the new intervals.
    late = EDGE_CDC + [
        change(10, "+U", 1, T(4), "mid", "amy", "open"),
        change(10, "+I", 1, T(9), "back", "amy", "open"),
    ]
    analyst.load(late, EDGE_FACTS)
    analyst.dbt("run")
    got = assert_models_match(analyst, late, EDGE_FACTS)
    assert (1, T(3), T(4), "gz", "bob", "done") in got["dim_project_version"]
    assert (1, T(4), T(5), "mid", "amy", "open") in got["dim_project_version"]
    assert (1, T(9), T(10), "back", "amy", "open") in got["dim_project_version"]
    by_id = {r[0]: r[4:] for r in got["fct_order_project"]}
    assert by_id[3] == ("mid", "amy", "open") and by_id[5] == ("back", "amy", "open")


@pytest.mark.parametrize("seed", [7, 8])
def test_generated_streams_against_oracle(analyst, seed):
    cdc, facts = random_dataset(random.Random(seed), n_keys=6, n_commits=80, n_facts=300)
    kinds = {r["rowkind"] for r in cdc}
    assert {"+I", "+U", "-U", "-D", None} <= kinds
    analyst.load(cdc, facts)
    analyst.dbt("run")
    assert_models_match(analyst, cdc, facts)


@st.composite
def datasets(draw):
    n_keys = draw(st.integers(1, 3))
    keys = list(range(1, n_keys + 1))
    row = st.tuples(
        st.sampled_from(keys), st.sampled_from(["+I", "+U", "-U", "-D", None]), st.integers(0, 6),
        st.sampled_from(["bj", "sh", None]), st.sampled_from(["amy", "bob"]), st.sampled_from(["open", None]),
    )
    commits = draw(st.lists(st.lists(row, min_size=1, max_size=3), min_size=1, max_size=8))
    cdc = [
        change(c, kind, k, T(1, hour), city, designer, status, T(30, 0, c // 2))
        for c, rows in enumerate(commits, start=1)
        for (k, kind, hour, city, designer, status) in rows
    ]
    fact_rows = draw(st.lists(st.tuples(st.sampled_from(keys + [n_keys + 1, None]),
                                        st.one_of(st.none(), st.integers(-1, 14))), max_size=12))
    facts = [order(i, k, None if h is None else T(1, 0, 30 * h)) for i, (k, h) in enumerate(fact_rows, start=1)]
    return cdc, facts


@settings(max_examples=4, deadline=None, database=None, phases=[Phase.explicit, Phase.generate],
          suppress_health_check=list(HealthCheck))
@given(data=datasets())
def test_hypothesis_datasets_against_oracle(analyst, data):
    cdc, facts = data
    note(f"cdc={cdc!r}\nfacts={facts!r}")
    analyst.load(cdc, facts)
    analyst.dbt("run")
    assert_models_match(analyst, cdc, facts)


def test_macro_options_inline(analyst):
    """rowkind=none, change_order=[] / several columns, composite keys, both bounds, both
    strategies: compiled with `dbt compile --inline` and run through the session."""
    cdc, facts = random_dataset(random.Random(3), n_keys=4, n_commits=40, n_facts=120)
    analyst.load(cdc, facts)
    spark = analyst.spark()
    src = f"{SCHEMA}.dim_project_cdc"

    def zipper_rows(args: str) -> List[tuple]:
        return analyst.rows(analyst.compile("{{ lakerank_lib.zipper(%s) }}" % args))

    # every row an add (-U, -D and NULL kinds included)
    pts = change_points(cdc, ["project_id"], "update_time", DIM_COLS, rowkind=None)
    assert zipper_rows(f"'{src}', 'project_id', 'update_time', {DIM_COLS}, rowkind=none") == oracle_zipper(pts)
    # no change order: ties by kind, then values
    pts = change_points(cdc, ["project_id"], "update_time", DIM_COLS, order=())
    assert zipper_rows(f"'{src}', ['project_id'], 'update_time', {DIM_COLS}, change_order=[]") == oracle_zipper(pts)
    # two change-order columns
    pts = change_points(cdc, ["project_id"], "update_time", DIM_COLS, order=("_commit_id", "status"))
    assert zipper_rows(
        f"'{src}', ['project_id'], 'update_time', {DIM_COLS}, change_order=['_commit_id', 'status']"
    ) == oracle_zipper(pts)
    # a composite key and a one-column value
    ck = change_points(cdc, ["project_id", "designer"], "update_time", ["status"])
    assert zipper_rows(
        f"'{src}', ['project_id', 'designer'], 'update_time', 'status', open_end='null'"
    ) == oracle_zipper(ck, open_end=None)

    # as_of_join over that composite-key zipper, facts from a subquery with another key name
    spark.sql(f"drop table if exists {SCHEMA}.dim_ck_version")
    spark.sql(f"create table {SCHEMA}.dim_ck_version using parquet as "
              + analyst.compile("{{ lakerank_lib.zipper('%s', ['project_id', 'designer'], 'update_time', 'status') }}"
                                % src))
    fsub = (f"(select order_id, project_id as pid, case when order_id % 2 = 0 then 'amy' else 'bob' end as des, "
            f"order_time from {SCHEMA}.fct_order)")
    for bounds in ["[)", "(]"]:
        for strategy in ["window", "range_join"]:
            sql = analyst.compile(
                "{{ lakerank_lib.as_of_join(\"%s\", 'order_time', '%s.dim_ck_version', ['project_id', 'designer'],"
                " ['status as st'], bounds='%s', fact_key=['pid', 'des'], strategy='%s') }}"
                % (fsub, SCHEMA, bounds, strategy))
            want = []
            for f in facts:
                des = "amy" if f["order_id"] % 2 == 0 else "bob"
                s = state_at(ck, (f["project_id"], des), f["order_time"], bounds)
                want.append((f["order_id"], f["project_id"], des, f["order_time"], None if s is None else s[0]))
            assert analyst.rows(sql) == sorted(want, key=repr), (bounds, strategy)


def test_argument_errors(analyst, capsys):
    for call, message in [
        ("lakerank_lib.as_of_join('f', 't', 'd', ['k'], ['c'], bounds='[]')", "bounds"),
        ("lakerank_lib.as_of_join('f', 't', 'd', ['k'], ['c'], mode='now')", "mode"),
        ("lakerank_lib.as_of_join('f', 't', 'd', ['k'], ['c'], strategy='hash')", "strategy"),
        ("lakerank_lib.as_of_join('f', 't', 'd', ['k', 'j'], ['c'], fact_key=['k'])", "fact_key"),
        ("lakerank_lib.zipper('s', [], 't', ['c'])", "key"),
    ]:
        capsys.readouterr()
        result = analyst.dbt("compile", "--inline", "{{ %s }}" % call, expect_success=False)
        assert not result.success, call
        out = capsys.readouterr().out
        assert f"lakerank_lib.{call.split('(')[0].split('.')[1]}: " in out and message in out, (call, out)


def _plan(spark, sql: str) -> str:
    return spark.sql("explain " + sql).collect()[0][0]


def test_no_broadcast_of_a_large_dimension(analyst):
    """With Spark's normal broadcast threshold (10 MB), neither strategy nor the lookup mode
    broadcasts a large dimension (the window strategy has no join at all); Spark still
    broadcasts a small one by itself (the check sees broadcasts)."""
    spark = analyst.spark()
    spark.conf.set("spark.sql.autoBroadcastJoinThreshold", str(10 * 1024 * 1024))
    spark.sql(f"drop table if exists {SCHEMA}.big_dim_version")
    spark.sql(f"""
        create table {SCHEMA}.big_dim_version using parquet as
        select
            id % 25000 as project_id,
            timestamp'2024-01-01 00:00:00' + make_interval(0, 0, 0, cast(id div 25000 as int)) as ver_start,
            case when id div 25000 = 9 then timestamp'9999-12-31 23:59:59'
                else timestamp'2024-01-01 00:00:00' + make_interval(0, 0, 0, cast(id div 25000 + 1 as int)) end
                as ver_end,
            sha2(cast(id as string), 256) as city,
            sha2(cast(-id as string), 256) as status
        from range(250000)""")  # ~16 MB of parquet: sha2 hex barely compresses
    size = spark.table(f"{SCHEMA}.big_dim_version")._jdf.queryExecution().optimizedPlan().stats().sizeInBytes()
    assert int(str(size)) > 10 * 1024 * 1024
    spark.sql(f"drop table if exists {SCHEMA}.small_dim_version")
    spark.sql(f"create table {SCHEMA}.small_dim_version using parquet as "
              f"select * from {SCHEMA}.big_dim_version where project_id < 10")
    analyst.load([], [order(1, 1, T(3))])

    def call(dim, **kw):
        extra = "".join(f", {k}='{v}'" for k, v in kw.items())
        return analyst.compile(
            "{{ lakerank_lib.as_of_join('%s.fct_order', 'order_time', '%s.%s', ['project_id'], ['city', 'status']%s) }}"
            % (SCHEMA, SCHEMA, dim, extra))

    window = _plan(spark, call("big_dim_version"))
    assert "Window" in window and "Join" not in window and "Broadcast" not in window, window
    for kw in [{"strategy": "range_join"}, {"mode": "latest"}, {"bounds": "(]", "strategy": "range_join"}]:
        plan = _plan(spark, call("big_dim_version", **kw))
        assert "SortMergeJoin" in plan and "Broadcast" not in plan, (kw, plan)
        small = _plan(spark, call("small_dim_version", **kw))
        assert "BroadcastExchange" in small, (kw, small)
    # the large join still returns each fact once, with its version
    got = analyst.rows(call("big_dim_version"))
    assert len(got) == 1 and got[0][:2] == (1, 1) and got[0][4] is not None


def test_a_seed_loads_what_its_cells_say(analyst):
    """`dbt seed` of the analyst project's tests/fixtures/analyst/seeds/seed_cells.csv: an empty
    cell is NULL in every column type (not the string 'None'), a quote and a backslash in a text
    cell arrive as written, a decimal keeps its digits, a boolean and a date their values."""
    analyst.dbt("seed", "--select", "seed_cells")
    rows = analyst.spark().sql(f"select * from {SCHEMA}.seed_cells order by id").collect()
    got = [tuple(None if v is None else str(v) for v in r) for r in rows]
    assert got == [
        ("1", "plain", "12.5", "0.1", "True", "2024-03-04"),
        ("2", None, None, None, None, None),
        ("3", "it's a \\ backslash, quoted", "-0.01", "0.001", "False", "2024-02-29"),
    ], got
