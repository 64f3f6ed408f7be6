"""lakerank's own checks of dbt's features on parquet, beyond dbt's suite: the ``merge`` and
``delete+insert`` strategies and ``UPDATE`` / ``DELETE`` statements against a pandas oracle
over generated rounds (NULLs, repeated keys, predicates, a subset of update columns); a
``dbt snapshot`` killed between its stage and its swap leaves the last snapshot whole; ``dbt
docs generate`` after an incremental run in the same process reads every comment."""

from __future__ import annotations

import json
import os
import pathlib
import random
import shutil
import subprocess

import pandas as pd
import pytest
from dbt.tests.util import run_dbt

COLUMNS = ["k1", "k2", "v", "note", "extra"]

_MERGED_SQL = """
{{ config(materialized='incremental', incremental_strategy='merge', unique_key=['k1', 'k2'],
          merge_update_columns=['v', 'note'], incremental_predicates=["DBT_INTERNAL_DEST.k1 != 3"]) }}
select * from {{ source('gen', 'src') }}
"""

_REPLACED_SQL = """
{{ config(materialized='incremental', incremental_strategy='delete+insert', unique_key='k1',
          incremental_predicates=["note is not null"]) }}
select * from {{ source('gen', 'src') }}
"""

_SOURCES_YML = """
sources:
  - name: gen
    schema: "{{ target.schema }}"
    tables: [{name: src}]
models:
  - name: merged
    description: "Merged rows"
    columns:
      - name: k1
        description: "First key part"
"""


def _rows(rng: random.Random, n: int) -> pd.DataFrame:
    """``n`` rows over a small key space (repeated keys across rounds), NULLs in the values."""
    keys = rng.sample([(a, b) for a in range(1, 6) for b in "xyz"], n)
    return pd.DataFrame([{
        "k1": a, "k2": b,
        "v": None if rng.random() < 0.2 else round(rng.uniform(0, 100), 2),
        "note": None if rng.random() < 0.3 else rng.choice(["a", "b", "c'quote"]),
        "extra": rng.randint(0, 9),
    } for a, b in keys], columns=COLUMNS)


def _values_sql(df: pd.DataFrame) -> str:
    def lit(value, kind):
        if value is None or (isinstance(value, float) and pd.isna(value)):
            return f"cast(null as {kind})"
        if kind == "string":
            return "'" + str(value).replace("'", "\\'") + "'"
        return f"cast({value} as {kind})"

    kinds = {"k1": "int", "k2": "string", "v": "double", "note": "string", "extra": "int"}
    return " union all ".join(
        "select " + ", ".join(f"{lit(row[c], kinds[c])} as {c}" for c in COLUMNS) for _i, row in df.iterrows())


def _oracle_merge(target: pd.DataFrame, source: pd.DataFrame) -> pd.DataFrame:
    """dbt's MERGE: a target row (k1 != 3) matched on (k1, k2) takes v and note; unmatched
    source rows are inserted."""
    out, matched = [], set()
    src = {(r.k1, r.k2): r for r in source.itertuples()}
    for r in target.itertuples():
        s = src.get((r.k1, r.k2)) if r.k1 != 3 else None
        if s is not None:
            matched.add((r.k1, r.k2))
            out.append({**r._asdict(), "v": s.v, "note": s.note})
        else:
            out.append(r._asdict())
    out += [r._asdict() for r in source.itertuples() if (r.k1, r.k2) not in matched]
    return pd.DataFrame(out, columns=["Index", *COLUMNS])[COLUMNS]


def _oracle_delete_insert(target: pd.DataFrame, source: pd.DataFrame) -> pd.DataFrame:
    """dbt's delete+insert: target rows whose k1 a source row has and whose note is not null go."""
    keys = set(source.k1)
    kept = target[~(target.k1.isin(keys) & target.note.notna())]
    return pd.concat([kept, source], ignore_index=True)


def _table(project, name: str) -> pd.DataFrame:
    rows = project.run_sql(f"select {', '.join(COLUMNS)} from {project.test_schema}.{name}", fetch="all")
    return pd.DataFrame([tuple(r) for r in rows], columns=COLUMNS)


def _same(actual: pd.DataFrame, expected: pd.DataFrame) -> None:
    def norm(df):
        df = df.astype(object).where(df.notna(), None)
        return sorted((tuple(None if v is None else (round(v, 6) if isinstance(v, float) else v) for v in row)
                      for row in df.itertuples(index=False)), key=repr)

    assert norm(actual) == norm(expected)


class TestRewritesAgainstOracle:
    @pytest.fixture(scope="class")
    def models(self):
        return {"merged.sql": _MERGED_SQL, "replaced.sql": _REPLACED_SQL, "sources.yml": _SOURCES_YML}

    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {"+persist_docs": {"relation": True, "columns": True}}}

    def test_merge_and_delete_insert_rounds_then_dml_then_docs(self, project):
        rng = random.Random(7)
        merged = replaced = None
        for round_no in range(3):
            source = _rows(rng, 9)
            project.run_sql(f"drop table if exists {project.test_schema}.src")
            project.run_sql(f"create table {project.test_schema}.src using parquet as {_values_sql(source)}")
            run_dbt(["run"])
            merged = source.copy() if round_no == 0 else _oracle_merge(merged, source)
            replaced = source.copy() if round_no == 0 else _oracle_delete_insert(replaced, source)
            _same(_table(project, "merged"), merged)
            _same(_table(project, "replaced"), replaced)

        # UPDATE and DELETE statements (a hook's, an operation's) on the parquet table
        project.run_sql(f"update {project.test_schema}.replaced set v = v * 2, note = 'u' where k1 >= 3")
        project.run_sql(f"delete from {project.test_schema}.replaced r where r.note is null or r.k1 = 1")
        updated = replaced.k1 >= 3
        replaced = replaced.assign(v=replaced.v.astype(float).where(~updated, replaced.v.astype(float) * 2),
                                   note=replaced.note.where(~updated, "u"))
        replaced = replaced[~(replaced.note.isna() | (replaced.k1 == 1))]
        _same(_table(project, "replaced"), replaced)

        # the catalog of a process that ran incremental models: comments read back
        run_dbt(["docs", "generate"])
        catalog = json.loads(pathlib.Path("target/catalog.json").read_text())
        node = catalog["nodes"]["model.test.merged"]
        assert node["metadata"]["comment"] == "Merged rows"
        assert node["columns"]["k1"]["comment"] == "First key part"


_SNAPSHOT_YML = """
snapshots:
  - name: snap
    relation: ref('src')
    config:
      unique_key: id
      strategy: timestamp
      updated_at: updated_at
      hard_deletes: invalidate
"""


def _dbt_process(project: pathlib.Path, *args: str, fault: str = "") -> subprocess.CompletedProcess:
    """`dbt <args>` in its own process group (a `kill:` fault kills the group: dbt and its JVM)."""
    env = {**os.environ, "LAKERANK_TEST_HOOKS": "1", "LAKERANK_FAULT": fault}
    env.pop("PYSPARK_SUBMIT_ARGS", None)
    return subprocess.run([shutil.which("dbt"), *args, "--project-dir", str(project),
                           "--profiles-dir", str(project)], cwd=project, env=env, capture_output=True,
                          text=True, timeout=600, start_new_session=True)


def test_a_snapshot_killed_before_its_swap_leaves_the_last_one_whole(tmp_path):
    project, home = tmp_path / "snap_project", tmp_path / "snap_home"
    (project / "seeds").mkdir(parents=True)
    (project / "snapshots").mkdir()
    (project / "dbt_project.yml").write_text("name: snap_kill\nversion: '1.0'\nprofile: snap_kill\n")
    (project / "profiles.yml").write_text(json.dumps({"snap_kill": {"target": "t", "outputs": {"t": {
        "type": "lakerank", "method": "session", "host": "embedded", "schema": "snap", "threads": 1,
        "lakerank_home": str(home), "server_side_parameters": {"spark.master": "local[1]"}}}}}))
    (project / "snapshots" / "snap.yml").write_text(_SNAPSHOT_YML)
    seed = project / "seeds" / "src.csv"
    seed.write_text("id,name,updated_at\n1,a,2024-01-01 00:00:00\n2,b,2024-01-01 00:00:00\n"
                    "3,c,2024-01-01 00:00:00\n")
    first = _dbt_process(project, "build")
    assert first.returncode == 0, first.stdout[-3000:]
    # 1 changed, 2 deleted, 4 new; the snapshot is killed after writing its next version
    seed.write_text("id,name,updated_at\n1,a2,2024-02-01 00:00:00\n3,c,2024-01-01 00:00:00\n"
                    "4,d,2024-02-01 00:00:00\n")
    killed = _dbt_process(project, "build", fault="kill:staged")
    assert killed.returncode == -9, killed.stdout[-3000:]
    versions = home / "warehouse" / "snap.db" / "_lakerank_versions" / "snap" / "_v"
    assert len(list(versions.iterdir())) == 1  # the dead attempt, which nothing points at

    from dbt.cli.main import dbtRunner

    from dbt.adapters.lakerank.session import home_session

    spark = home_session(str(home), {"spark.master": "local[1]"})
    rows = {(r.id, r.name, r.dbt_valid_to) for r in spark.table("snap.snap").collect()}
    assert rows == {(1, "a", None), (2, "b", None), (3, "c", None)}  # the first snapshot, whole

    rerun = dbtRunner().invoke(["snapshot", "--project-dir", str(project), "--profiles-dir", str(project)])
    assert rerun.success, rerun.exception
    rows = sorted((r.id, r.name, r.dbt_valid_to is None) for r in spark.table("snap.snap").collect())
    assert rows == [(1, "a", False), (1, "a2", True), (2, "b", False), (3, "c", True), (4, "d", True)]
    live = [p.name for p in versions.iterdir()]
    assert len(live) == 1 and spark.sql("describe formatted snap.snap").where("col_name = 'Location'") \
        .collect()[0].data_type.endswith(live[0])
    assert not (home / "warehouse" / "snap.db" / "snap").exists()  # the first version, replaced


_SNAPSHOT_NEW_RECORD_YML = """
snapshots:
  - name: snap_new_record
    relation: ref('people')
    config:
      unique_key: id
      strategy: check
      check_cols: [name]
      hard_deletes: new_record
"""


class _PeopleSnapshot:
    """A snapshot (``SNAPSHOT_YML``) of a three-row seed, run again after each new seed content."""

    SNAPSHOT_YML = ""

    @pytest.fixture(scope="class")
    def seeds(self):
        return {"people.csv": "id,name\n1,a\n2,b\n3,c\n"}

    @pytest.fixture(scope="class")
    def snapshots(self):
        return {"snap.yml": self.SNAPSHOT_YML}

    @staticmethod
    def snapshot_rounds(*contents: str) -> None:
        run_dbt(["seed"])
        run_dbt(["snapshot"])
        for csv in contents:
            pathlib.Path("seeds/people.csv").write_text(csv)
            run_dbt(["seed", "--full-refresh"])
            run_dbt(["snapshot"])


class TestSnapshotHardDeletesNewRecord(_PeopleSnapshot):
    """``hard_deletes: new_record``: a row gone from the source is closed and gets a new
    version marked deleted; a row that comes back opens a version again."""

    SNAPSHOT_YML = _SNAPSHOT_NEW_RECORD_YML

    def test_deleted_rows_get_a_deleted_version(self, project):
        # 3 deleted, 2 changed; then 3 back
        self.snapshot_rounds("id,name\n1,a\n2,b2\n", "id,name\n1,a\n2,b2\n3,c\n")
        rows = project.run_sql(f"select id, name, dbt_is_deleted, dbt_valid_to is null from "
                               f"{project.test_schema}.snap_new_record", fetch="all")
        assert sorted((tuple(r) for r in rows), key=repr) == [
            (1, "a", "False", True),
            (2, "b", "False", False), (2, "b2", "False", True),
            (3, "c", "False", False), (3, "c", "False", True), (3, "c", "True", False),
        ]


_SNAPSHOT_VALID_TO_CURRENT_YML = """
snapshots:
  - name: snap_current
    relation: ref('people')
    config:
      unique_key: id
      strategy: check
      check_cols: all
      hard_deletes: invalidate
      dbt_valid_to_current: "to_timestamp('9999-12-31')"
"""


class TestSnapshotValidToCurrent(_PeopleSnapshot):
    """``dbt_valid_to_current``: current versions carry the given end instead of NULL, and the
    next run still finds them current (closes them when their row changes or goes)."""

    SNAPSHOT_YML = _SNAPSHOT_VALID_TO_CURRENT_YML

    def test_current_rows_end_at_the_given_time(self, project):
        self.snapshot_rounds("id,name\n1,a\n2,b2\n")  # 2 changed, 3 deleted
        rows = project.run_sql(f"select id, name, year(dbt_valid_to) = 9999 from "
                               f"{project.test_schema}.snap_current", fetch="all")
        assert sorted(tuple(r) for r in rows) == [(1, "a", True), (2, "b", False), (2, "b2", True),
                                                  (3, "c", False)]
