"""One of the racing builders of tests/functional/test_shared_deployment.py's several-writers
test: a long-lived process with its own LAKERANK_HOME (and dbt target folder) on the shared
catalog and bucket, that runs what its driver writes on stdin, one JSON command a line, and
appends one JSON result a line to ``RESULTS``:

    python tests/support/race_builder.py RESULTS

- ``{"cmd": "land", "batch": i}``: land batch ``i`` of the test's CDC stream on S3;
- ``{"cmd": "build", "fault": {...}}``: ``dbt build --target shared`` (``fault``: the var
  ``lakerank_fault``, e.g. a ``kill:<step>`` that SIGKILLs this process mid-commit, or a
  ``stop:<step>`` that SIGSTOPs it until its driver sends SIGCONT);
- ``{"cmd": "check", "batches": n}``: every table exact against the independent oracle of
  batches ``0..n-1`` (the ingest log reconciles), every partition's directory present, a
  commit record with a stale expected commit id refused by the metastore, and a writer
  whose lease was taken over leaving the new holder's stage and refusing to recover;
- ``{"cmd": "quit"}``.
"""

from __future__ import annotations

import json
import os
import pathlib
import sys
import time
import traceback

HERE = pathlib.Path(__file__).resolve().parent
for p in (str(HERE), str(HERE.parents[1])):
    if p not in sys.path:
        sys.path.insert(0, p)

os.environ.setdefault("LAKERANK_SHUFFLE_PARTITIONS", "2")
os.environ.setdefault("LAKERANK_BUILD_SUMMARY", "off")
os.environ["LAKERANK_TARGET"] = "shared"

import cdc  # noqa: E402
from checks import assert_all_exact  # noqa: E402
from shared_scenario import SharedLakerank  # noqa: E402

BATCHES = cdc.generate_batches(seed=34, n_batches=3, events_per_batch=60, n_projects=6)


def land(lakerank, batch: int) -> dict:
    lakerank.landed = batch
    return {"path": lakerank.land(BATCHES[batch])}


def build(lakerank, fault) -> dict:
    result = lakerank.dbt("build", vars={"rank_function": "dense_rank", **({"lakerank_fault": fault} if fault else {})},
                          expect_success=False)
    failed = [f"{r.node.name}: {r.message}" for r in (result.result or []) if r.status in ("error", "fail")]
    return {"ok": bool(result.success), "failed": failed, "exception": str(result.exception or "")}


def missing_partition_dirs(spark) -> list:
    """The partitions of lakerank's tables whose directory is gone (a stage another writer
    deleted under a commit)."""
    from python_udfs.commit import protocol
    from python_udfs.jvm import external_catalog, scala_items

    missing = []
    for name in scala_items(external_catalog(spark).listTables("lakerank")):
        table = ("lakerank", str(name))
        meta = external_catalog(spark).getTable(*table)
        if meta.partitionColumnNames().isEmpty():
            continue
        for spec, (_part, location) in protocol.partitions(spark, table).items():
            path, fs = protocol._fs(spark, location)
            if not fs.exists(path):
                missing.append(f"{table[1]} {spec}: {location}")
    return missing


def stale_record_refused(spark) -> str:
    """The metastore's answer to a record of int_contract_block_rank that expects a commit id it no
    longer has (the fence of a writer that lost its lease): the refusal's message."""
    from python_udfs.commit import lease

    current = lease.get_property(spark, "lakerank", "int_contract_block_rank", "lakerank.commit_id")
    stale = str(int(current) - 1)
    try:
        lease.alter_if(spark, "lakerank", "int_contract_block_rank", {"lakerank.commit_id": "999"},
                       "lakerank.commit_id", stale)
    except lease.FencedError as exc:
        assert lease.get_property(spark, "lakerank", "int_contract_block_rank", "lakerank.commit_id") == current
        return str(exc)
    raise AssertionError(f"a record expecting commit {stale} was accepted over commit {current}")


def live_stage_kept(spark) -> str:
    """A writer whose lease another writer took over sweeps the audit log of int_contract_block_rank:
    the new holder's stage stays, and its recovery refuses. The other writer's takeover is the
    lease value it writes (its id, the next epoch); its stage is a directory named as its own."""
    from python_udfs.commit import lease, protocol

    table = ("lakerank", "int_contract_block_rank__audit_log")
    lease.acquire(spark, 60, 600, print)
    mine = lease.held()
    other = lease.Lease("w0d15ea5e", "another host pid 1", mine.epoch + 1, 0, 600)
    lease.alter_if(spark, lease.LEASE_DB, lease.LEASE_TABLE, {lease.KEY: other.value()}, lease.KEY, mine.value())
    stage = protocol.stage_dir(protocol.table_location(spark, table), "c", 999, "0badcafe").replace(
        lease.WRITER, other.writer)
    path, fs = protocol._fs(spark, stage + "/part-0.parquet")
    fs.create(path, True).close()
    try:
        protocol.sweep(spark, table)
        assert fs.exists(path), f"{stage}: the live writer's stage was deleted"
        try:
            protocol.recover(spark, table, -1)
        except lease.LeaseLostError as exc:
            return str(exc)
        raise AssertionError("a writer whose lease was taken over recovered a table")
    finally:
        protocol.delete_path(spark, stage)
        lease.alter_if(spark, lease.LEASE_DB, lease.LEASE_TABLE, {lease.KEY: lease._released(other)}, lease.KEY,
                       other.value())
        lease.release()


def check(lakerank, batches: int) -> dict:
    oracle = cdc.Oracle()
    for i in range(batches):
        oracle.consume(cdc.batch_file_name(i), BATCHES[i])
    spark = lakerank.spark()
    try:
        assert_all_exact(lakerank, oracle, "dense_rank")
    except AssertionError as exc:  # with each rank table's watermark and commits, for the failure's story
        raise AssertionError(f"{exc}\n" + "\n".join(rank_table_commits(spark))) from None
    missing = missing_partition_dirs(spark)
    assert not missing, f"partitions whose directory was deleted: {missing[:5]}"
    return {"fenced": stale_record_refused(spark), "lost": live_stage_kept(spark)}


def rank_table_commits(spark) -> list:
    """Per rank table: its recorded commit and base, and its audit log's rows per commit."""
    out = []
    for table in ("int_contract_block_rank", "int_project_block_offset", "int_project_block_version",
                  "int_project_rank_accumulation"):
        props = {r[0]: r[1] for r in spark.sql(f"show tblproperties lakerank.{table}").collect()}
        rows = spark.sql(f"select _commit_id, count(*) from lakerank.{table}__audit_log group by _commit_id"
                         " order by 1").collect()
        out.append(f"{table}: commit {props.get('lakerank.commit_id')}, base {props.get('lakerank.base_commit')},"
                   f" audit rows by commit {[tuple(r) for r in rows]}")
    return out


def main(results: str) -> None:
    from dbt.cli.main import dbtRunner

    lakerank = SharedLakerank(dbtRunner(), pathlib.Path(os.environ["LAKERANK_HOME"]))
    lakerank.dbt("show", "--inline", "select 1")  # the session (S3A) before the first command
    commands = {"land": lambda c: land(lakerank, c["batch"]), "build": lambda c: build(lakerank, c.get("fault")),
                "check": lambda c: check(lakerank, c["batches"])}
    with open(results, "a", encoding="utf-8") as out:
        out.write(json.dumps({"cmd": "ready", "ok": True}) + "\n")
        out.flush()
        for line in sys.stdin:
            command = json.loads(line)
            if command["cmd"] == "quit":
                return
            started = time.time()
            try:
                result = {"ok": True, **commands[command["cmd"]](command)}
            except Exception:
                result = {"ok": False, "error": traceback.format_exc()[-3000:]}
            out.write(json.dumps({"cmd": command["cmd"], "seconds": round(time.time() - started, 1), **result}) + "\n")
            out.flush()


if __name__ == "__main__":
    main(sys.argv[1])
