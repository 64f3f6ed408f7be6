#!/usr/bin/env python3
"""Records a real PostgreSQL 15 change stream as Debezium delivers it (issue 50), for
tests/functional/test_debezium_replay.py to replay in CI.

The real tools: a throwaway PostgreSQL 15 (scripts/services/postgres.sh) at the default
replica identity (updates carry no before image, deletes only the key) and Debezium's
Postgres connector in its embedded engine (tools/debezium-runner: pgoutput, the JSON
converter with the schema/payload wrapper, the default decimal.handling.mode=precise, a file
offset store). Two tables receive the same workload: ``contracts`` (``amount numeric``:
Debezium's ``io.debezium.data.VariableScaleDecimal``) and ``contracts_p`` (``amount
numeric(12,2)``: ``org.apache.kafka.connect.data.Decimal``); a third, ``markers``, is written
between build points only to know that the engine has delivered everything committed before
(its events, like ``contracts_p``'s, are other tables' lines that lakerank's table filter
skips).

The workload runs in multi-statement transactions, each statement applied to ``contracts`` and
then to ``contracts_p``. At each build point the current file is closed and PostgreSQL's own
``dense_rank()``, ``rank()`` and ``row_number()`` (ties by ``contract_id``, as lakerank's
``row_number``) over ``partition by project_id order by sign_time`` are recorded for every live
contract with its row, for both tables.

Build point 3 holds the connector's offsets (nothing committed), then halts the engine
(``Runtime.halt``): the restart re-sends everything since the last committed offset (the end of
build 2) into later files, and the first of them is cut between two changes of one contract in
one transaction (file 4 ends after the re-sent first change, file 5 starts with the re-sent
second one): a build of file 4 must still show the newer image.

Output (tests/fixtures/debezium_pg/): the files in landing order (``pg-0001.jsonl``, ...), one
``expected-NN.json`` per build point and ``manifest.json`` (which files each build lands,
what it exercises, the versions, the date, the event counts, this command).

    python3 scripts/record_debezium.py                    # rewrites tests/fixtures/debezium_pg/
    python3 scripts/record_debezium.py --out /tmp/dbz     # elsewhere

Needs Java 17+ and Maven (the runner is built with ``mvn package`` on first use; Debezium from
Maven Central) and PostgreSQL 15 (installed with apt-get by the service script if missing).
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import pathlib
import random
import shutil
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "debezium"))
from sources import DATABASES, DEBEZIUM_VERSION, Runner, _next_name, _number, _payload, build_runner, log  # noqa: E402
from workload import Workload, ts  # noqa: E402

SEED = 50  # the workload's random choices



def record(kind: str, out: pathlib.Path | None, keep_work: bool) -> None:
    classpath = build_runner()
    rng = random.Random(SEED)
    work = pathlib.Path(tempfile.mkdtemp(prefix="lakerank-dbz-"))
    files_dir = work / "files"
    runner_log = open(work / "runner.log", "w")
    db = DATABASES[kind]()
    out = out or db.out
    runner = None
    try:
        db.setup()
        version = db.version()
        props = work / "connector.properties"
        props.write_text("\n".join(["name=lakerank-recording", *db.props(work)]) + "\n")
        w = Workload(db, rng)
        builds = []

        def build_point(exercises: str, files: list[str]):
            expected = w.expected()
            n = len(builds) + 1
            builds.append({"build": n, "files": files, "expected": f"expected-{n:02d}.json", "exercises": exercises,
                           "live_contracts": len(expected["contracts"]), "expected_rows": expected})
            log(f"build point {n}: {files}, {len(expected['contracts'])} live contracts")

        def start_runner(first_file: int) -> Runner:
            return Runner(classpath, props, files_dir, first_file, runner_log, db.prefix)

        if not db.snapshot:  # no snapshot: the first rows are streamed
            runner = start_runner(1)
            w.sync(runner)
        # The first rows: the snapshot's, read before streaming starts (a tie in project 1).
        for cid, (project, hours, amount) in enumerate([
                (1, 0, "1250.00"), (1, 2, "300"), (1, 2, "12.5"), (2, 1, "0.125"), (2, 5, "-40.10"),
                (3, 3, "99999.999"), (3, 4, None), (1, 6, "7"), (2, 7, "0"), (3, 8, "1.005"),
                (4, 9, "-0.5"), (4, 9.5, "45.675")], start=1):
            w.insert(cid, project, ts(hours), amount)
        w.commit()

        if db.snapshot:
            runner = start_runner(1)
            w.sync(runner)  # the snapshot is over: what follows is streamed
        # Build 1: the snapshot (op r), then inserts streamed: late ones (before every row of
        # their project), ties, amounts of 0 to 4 decimal places, negative and null.
        w.insert(13, 2, ts(-5), "12.345")      # late: before all of project 2
        w.insert(14, 1, ts(2), "-7.005")        # a third tie at +2 h in project 1
        w.insert(15, 3, ts(3), "0.01")          # a tie with 6
        w.insert(16, 3, ts(12), "100.1")
        w.insert(17, 4, ts(-1), None)
        w.commit()
        w.insert(18, 4, ts(9), "2.5")           # a tie with 11
        w.insert(19, 1, ts(-3), "-1234.5678")   # late
        w.commit()
        w.random_txn(8, -10, 30)
        w.random_txn(6, -10, 30)
        w.sync(runner)
        build_point(("snapshot reads (op r) of 12 contracts" if db.snapshot else "12 contracts inserted (no snapshot)")
                    + ", then streamed inserts in multi-statement "
                    "transactions: late inserts (earlier than every row of their project), ties, amounts "
                    "with 0-4 decimal places, negative and null", [runner.rotate()])

        # Build 2: updates without before images, moves, key changes, deletes, re-inserts,
        # several changes to one row in one transaction.
        w.update(3, sign_time=ts(20))           # later
        w.update(5, sign_time=ts(-8))           # earlier: late update
        w.update(7, project=4)                  # a move
        w.update(8, amount="-0.005")
        w.commit()
        w.rekey(9, 109)                         # a primary-key change: d + tombstone + c
        w.delete(10)
        w.delete(2)
        w.commit()
        w.insert(10, 2, ts(1), "10.10")         # re-insert of a deleted key, another project
        w.update(12, sign_time=ts(15))          # four changes to 12 in one transaction
        w.update(12, amount="3.333")
        w.update(12, project=1)
        w.update(12, sign_time=ts(2))           # ends in the tie of project 1
        w.commit()
        w.delete(13)                            # delete and re-insert in one transaction
        w.insert(13, 3, ts(3), "66.66")
        w.commit()
        for _ in range(3):
            w.random_txn(6, -10, 30)
        a, b = sorted(w.live)[:2]               # b moved onto a's project and sign time: a tie
        w.update(b, project=w.live[a][0], sign_time=w.live[a][1])
        w.commit()
        w.sync(runner)
        build_point(("updates (before: null)" if db.snapshot else "updates (with before images: binlog_row_image=FULL)")
                    + ", sign-time updates (later, earlier), a project move, a primary-key "
                    "change (9 -> 109: delete, tombstone, create), deletes, a re-insert of a deleted key, four "
                    "changes to one row in one transaction, a delete and re-insert in one transaction, a move "
                    "into a tie",
                    [runner.rotate()])

        # Build 3: nothing committed from here (hold), then the halt.
        runner.send("hold")
        runner.expect("holding")
        first_cut = len(db.tables) + 1          # re-sent: 300 (each table), then 14's first change
        w.insert(300, 2, ts(4), "5.55")
        w.update(14, sign_time=ts(-20))         # change A of 14 (the re-sent copy ends file 4)
        tie = min(c for c, (p, _) in w.live.items() if p == 3 and c != 14)
        w.update(14, project=3, sign_time=w.live[tie][1], amount="14.14")   # change B (file 5): a tie

        w.delete(15)                            # delete and re-insert of 15 in the same transaction
        w.insert(15, 3, ts(25), "15.015")
        w.update(16, amount="-16.16")
        w.commit()
        w.random_txn(5, -10, 30)
        w.sync(runner)
        held = runner.rotate()
        build_point("the held transactions (offsets not committed): one transaction inserts 300, changes 14 "
                    "twice (sign time, then project, sign time and amount, into a tie), deletes and re-inserts 15, "
                    "changes 16's amount; then random changes", [held])
        runner.halt()
        db.after_halt()
        log(f"halted; restarting at file {_number(held) + 1}, cut after {first_cut} events")

        # Build 4: the restart re-sends since build 2's offset; the first file is cut after the
        # re-sent first change of 14.
        runner = start_runner(_number(held) + 1)
        runner.send(f"cut {first_cut}")
        cut = runner.expect("cut").split()[1]
        runner.current = _next_name(cut)
        lines = (files_dir / cut).read_text().splitlines()
        last = _payload(lines[-1])
        assert len(lines) == first_cut and last["source"]["table"] == "contracts" and \
            last["after"]["contract_id"] == w.c(14) and last["after"]["project_id"] == w.p(1), \
            f"the re-sent file does not end with 14's first change: {lines}"
        build_point("re-sent events only (the restart after the halt): 300's insert and 14's first change, "
                    "re-sent; the file ends between 14's two changes: the newer image (build 3's) must stay",
                    [cut])

        # Build 5: the rest of the re-sent events, then new transactions.
        w.random_txn(6, -10, 30)
        w.insert(301, 1, ts(-30), "0.999")      # late
        w.update(300, project=1, sign_time=ts(2))   # into the tie of project 1
        w.commit()
        w.sync(runner)
        f5 = runner.rotate()
        first = next(p for p in map(_payload, (files_dir / f5).read_text().splitlines())
                     if p and p["source"]["table"] == "contracts")
        assert first["after"]["contract_id"] == w.c(14) and first["after"]["project_id"] == w.p(3), first
        build_point("the rest of the re-sent events (14's second change first, 15's delete and re-insert, 16, the "
                    "random transaction, build 3's marker), then new transactions", [f5])

        # Build 6: a key changed onto a deleted key, a project emptied, more ties and late rows.
        w.rekey(109, 9)                         # back onto the key it left
        w.update(301, sign_time=ts(2), project=1)
        for cid in sorted(c for c, (p, _) in w.live.items() if p == 2):
            w.delete(cid)                       # project 2 emptied
        w.commit()
        w.insert(302, 2, ts(0), "2.00")         # project 2 again, one row
        w.random_txn(6, -10, 30)
        w.sync(runner)
        build_point("a key changed back onto a deleted key (109 -> 9), a late update into a tie, every contract of "
                    "project 2 deleted then one re-inserted, random changes", [runner.rotate()])
        runner.stop()
        runner = None
        write_fixture(db, out, files_dir, builds, version)
    finally:
        if runner is not None:
            runner.stop()
        db.stop()
        runner_log.close()
        if keep_work:
            log(f"work kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def write_fixture(db, out: pathlib.Path, files_dir: pathlib.Path, builds: list, version: str) -> None:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    landed = [f for b in builds for f in b["files"]]
    counts = collections.Counter()
    for name in landed:
        shutil.copy(files_dir / name, out / name)
        for line in (out / name).read_text().splitlines():
            p = _payload(line)
            if p is None:
                counts["tombstone"] += 1
            elif "op" not in p:  # the MySQL connector's schema changes (ddl)
                counts["schema change"] += 1
            else:
                counts[f"{p['source']['table']} {p['op']}"] += 1
    for b in builds:
        rows = b.pop("expected_rows")  # one row a line
        (out / b["expected"]).write_text("{\n" + ",\n".join(
            f' "{t}": [\n  ' + ",\n  ".join(json.dumps(r) for r in rows[t]) + "\n ]" for t in db.tables) + "\n}\n")
    manifest = {
        "what": f"{db.title} changes as Debezium's embedded engine delivered them (scripts/record_debezium.py); "
                "land each build's files in order, build with contracts_format: debezium-json, "
                "contracts_table_include: contracts, compare with the build's expected ranks",
        "regenerate": f"python3 scripts/record_debezium.py{db.option}",
        "debezium": DEBEZIUM_VERSION,
        "connector": db.connector,
        db.name: version,
        "recorded": dt.date.today().isoformat(),
        "tables": db.described_tables,
        "events": dict(sorted(counts.items())),
        "builds": builds,
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    log(f"wrote {out}: {len(landed)} files, events {dict(sorted(counts.items()))}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--database", choices=sorted(DATABASES), default="postgresql",
                    help="postgresql (tests/fixtures/debezium_pg) or mariadb (tests/fixtures/debezium_mysql)")
    ap.add_argument("--out", type=pathlib.Path, help="the fixture folder (default: the database's)")
    ap.add_argument("--keep-work", action="store_true", help="keep the temporary folder (runner log, offsets)")
    args = ap.parse_args()
    record(args.database, args.out, args.keep_work)


if __name__ == "__main__":
    main()
