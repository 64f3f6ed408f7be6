"""A real PostgreSQL 15 as Debezium delivers it (issue 50), replayed: the files that Debezium's
Postgres connector (embedded engine, pgoutput, default replica identity, JSON with schemas,
the default decimal.handling.mode=precise) wrote from a real workload, recorded once by
scripts/record_debezium.py into tests/fixtures/debezium_pg/ (its manifest says what each
build point exercises), land here file by file as a user lands them, each build point
followed by ``dbt build --vars '{contracts_format: debezium-json, contracts_table_include:
contracts}'``.

The oracle is PostgreSQL itself: after each build, ``fct_contract_rank`` must hold every
contract that PostgreSQL held live at that point, with its project, sign time, amount (to the
cent, rounded half-up as decimal(18,2) rounds) and ``dense_rank()`` over (partition by project
order by sign time), as PostgreSQL computed it. The ingest log must reconcile against counts
taken from the files themselves: every line is one event (an update carries no before image at
the default replica identity), the lines of ``contracts_p``, ``markers`` and tombstones are
skipped, none is quarantined.

Build 4 lands only events re-sent after a connector restart, cut between two changes of one
contract in one transaction: the contract must keep its newer image (build 3's).

One home, six builds: dense_rank only (the pipeline's other rank functions are compared with
their oracle in test_pipeline_exact.py; the fixture records PostgreSQL's rank() and
row_number() too).
"""

from __future__ import annotations

import os

import debezium_fixture as fx
from lakerank_project import Lakerank

FIXTURE = fx.PG
VARS = {"contracts_format": "debezium-json", "contracts_table_include": "contracts"}
COUNTS = ["applied", "noop", "stale", "before_image", "quarantined", "skipped"]


def _land(lr: Lakerank, name: str) -> None:
    """The file as a user lands it: written under a hidden name, then renamed."""
    lr.landing.mkdir(parents=True, exist_ok=True)
    tmp = lr.landing / f".{name}.tmp"
    tmp.write_text((FIXTURE / name).read_text())
    os.replace(tmp, lr.landing / name)


def _file_counts(names) -> dict:
    """Events landed and skipped, counted from the files: a Debezium line is one event (two
    for an update with a before image, which the default replica identity never sends); the
    other tables' lines and the tombstones are skipped."""
    landed = skipped = 0
    for name in names:
        for line in fx.lines(FIXTURE, name):
            _, p = fx.message(line)
            if p is None or p["source"]["table"] != "contracts":
                landed += 1
                skipped += 1
            else:
                landed += 2 if p["op"] == "u" and p["before"] is not None else 1
    return {"events_landed": landed, "skipped": skipped}


def _ranks(lr: Lakerank) -> dict:
    fct = lr.table("fct_contract_rank")
    return {int(r.contract_id): (int(r.project_id), r.sign_time, fx.cents(r.amount), int(r.asc_rn))
            for r in fct.itertuples()}


def _expected(build: dict) -> dict:
    return {r["contract_id"]: (r["project_id"], r["sign_time"], fx.cents(r["amount"]), r["dense_rank"])
            for r in fx.expected(FIXTURE, build)["contracts"]}


def _diff(got: dict, want: dict) -> str:
    wrong = {k: (got.get(k), want.get(k)) for k in sorted(set(got) | set(want)) if got.get(k) != want.get(k)}
    return f"{len(wrong)} contracts differ (contract: (lakerank, PostgreSQL)): {dict(list(wrong.items())[:8])}"


def test_debezium_postgres_replay_matches_postgres_ranks(runner, tmp_path):
    lr = Lakerank(runner, tmp_path / "home")
    manifest = fx.manifest(FIXTURE)
    failures = []
    seen_commits = -1
    for build in manifest["builds"]:
        n = build["build"]
        for name in build["files"]:
            _land(lr, name)
        lr.dbt("build", vars=VARS)

        got, want = _ranks(lr), _expected(build)
        if got != want:
            failures.append(f"build {n} ({build['exercises']}): fct_contract_rank != PostgreSQL's dense_rank: "
                            f"{_diff(got, want)}")

        log = lr.table("stg_contract_ingest_log")
        log = log[log["_commit_id"] > seen_commits]
        seen_commits = int(log["_commit_id"].max())
        counts = {k: int(log[k].fillna(0).sum()) for k in ["events_landed", *COUNTS]}
        if counts["events_landed"] != sum(counts[k] for k in COUNTS):
            failures.append(f"build {n}: the ingest log does not reconcile: {counts}")
        files = _file_counts(build["files"])
        if {k: counts[k] for k in files} != files:
            failures.append(f"build {n}: ingest log {counts} != the files' {files}")
        if counts["quarantined"]:
            q = lr.table("stg_contract_quarantine")
            failures.append(f"build {n}: {counts['quarantined']} events quarantined, e.g. "
                            f"{q['reason'].value_counts().head(3).to_dict()}")
    assert not failures, "\n".join(failures)
