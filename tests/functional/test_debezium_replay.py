"""Real databases as Debezium delivers them (issue 50), replayed: the files that Debezium's
embedded engine wrote from a real workload, recorded once by scripts/record_debezium.py and
landed here file by file as a user lands them, each build point followed by ``dbt build
--vars '{contracts_format: debezium-json, contracts_table_include: contracts}'``:

* tests/fixtures/debezium_pg/: PostgreSQL 15, the Postgres connector (pgoutput, the default
  replica identity: updates without a before image, deletes with the key only; the default
  decimal.handling.mode=precise: ``amount numeric`` as VariableScaleDecimal);
* tests/fixtures/debezium_mysql/: MariaDB 10.11, the MySQL connector (binlog_row_image=FULL:
  before images; ``amount decimal(16,4)`` as Decimal; ids shifted by 100,000, projects by
  100), streamed on the same home: the two streams share no contract or project.

Their manifests say what each build point exercises. The oracle is the database itself: after
each build, ``fct_contract_rank`` must hold every contract that the database held live at that
point, with its project, sign time, amount (to the cent, rounded half-up as decimal(18,2)
rounds) and ``dense_rank()`` over (partition by project order by sign time), as the database
computed it. The ingest log must reconcile against counts taken from the files themselves:
a line is one event (two for an update with a before image), the lines of other tables
(``contracts_p``, ``markers``), schema changes and tombstones are skipped, none is quarantined.

Build 4 lands only events re-sent after a connector restart, cut between two changes of one
contract in one transaction: the contract must keep its newer image (build 3's).

One home, six builds: dense_rank only (the pipeline's other rank functions are compared with
their oracle in test_pipeline_exact.py; the fixtures record the databases' rank() and
row_number() too).
"""

from __future__ import annotations

import os
import pathlib

import debezium_fixture as fx
from lakerank_project import Lakerank

VARS = {"contracts_format": "debezium-json", "contracts_table_include": "contracts"}
COUNTS = ["applied", "noop", "stale", "before_image", "quarantined", "skipped"]


def _land(lr: Lakerank, fixture: pathlib.Path, name: str) -> None:
    """The file as a user lands it: written under a hidden name, then renamed."""
    lr.landing.mkdir(parents=True, exist_ok=True)
    tmp = lr.landing / f".{name}.tmp"
    tmp.write_text((fixture / name).read_text())
    os.replace(tmp, lr.landing / name)


def _file_counts(fixture: pathlib.Path, names) -> dict:
    """Events landed and skipped, counted from the files: a Debezium line is one event, two for
    an update with a before image; tombstones, schema changes and other tables' lines are
    skipped."""
    landed = skipped = 0
    for name in names:
        for line in fx.lines(fixture, name):
            _, p = fx.message(line)
            if p is None or "op" not in p or p["source"]["table"] != "contracts":
                landed += 1
                skipped += 1
            else:
                landed += 2 if p["op"] == "u" and p["before"] is not None else 1
    return {"events_landed": landed, "skipped": skipped}


def _ranks(lr: Lakerank) -> dict:
    fct = lr.table("fct_contract_rank")
    return {int(r.contract_id): (int(r.project_id), r.sign_time, fx.cents(r.amount), int(r.asc_rn))
            for r in fct.itertuples()}


def _expected(fixture: pathlib.Path, build: dict) -> dict:
    return {r["contract_id"]: (r["project_id"], r["sign_time"], fx.cents(r["amount"]), r["dense_rank"])
            for r in fx.expected(fixture, build)["contracts"]}


def _diff(got: dict, want: dict) -> str:
    wrong = {k: (got.get(k), want.get(k)) for k in sorted(set(got) | set(want)) if got.get(k) != want.get(k)}
    return f"{len(wrong)} contracts differ (contract: (lakerank, the database)): {dict(list(wrong.items())[:6])}"


def test_debezium_replay_matches_the_databases_ranks(runner, tmp_path):
    lr = Lakerank(runner, tmp_path / "home")
    builds = list(zip(*(fx.manifest(f)["builds"] for f in fx.FIXTURES)))
    failures = []
    seen_commits = -1
    for n, per_fixture in enumerate(builds, start=1):
        files = {"events_landed": 0, "skipped": 0}
        for fixture, build in zip(fx.FIXTURES, per_fixture):
            for name in build["files"]:
                _land(lr, fixture, name)
            for k, v in _file_counts(fixture, build["files"]).items():
                files[k] += v
        lr.dbt("build", vars=VARS)

        got = _ranks(lr)
        for fixture, build in zip(fx.FIXTURES, per_fixture):
            want = _expected(fixture, build)
            mine = {k: v for k, v in got.items() if (k >= 100_000) == (fixture == fx.MYSQL)}
            if mine != want:
                failures.append(f"build {n}, {fixture.name} ({build['exercises']}): fct_contract_rank != the "
                                f"database's dense_rank: {_diff(mine, want)}")

        log = lr.table("stg_contract_ingest_log")
        log = log[log["_commit_id"] > seen_commits]
        seen_commits = int(log["_commit_id"].max())
        counts = {k: int(log[k].fillna(0).sum()) for k in ["events_landed", *COUNTS]}
        if counts["events_landed"] != sum(counts[k] for k in COUNTS):
            failures.append(f"build {n}: the ingest log does not reconcile: {counts}")
        if {k: counts[k] for k in files} != files:
            failures.append(f"build {n}: ingest log {counts} != the files' {files}")
        if counts["quarantined"]:
            reasons = lr.table("stg_contract_quarantine")["reason"].str.replace(r"'.*'", "'...'", regex=True)
            failures.append(f"build {n}: {counts['quarantined']} events quarantined; reasons so far: "
                            f"{reasons.value_counts().to_dict()}")
    assert not failures, "\n".join(failures)
