"""The crash soak's rerun-and-check, in a process of its own (the soak's killed builds run in
their own processes, and a home's embedded metastore admits one JVM at a time: the test's
own JVM cannot open it between them).

    python tests/support/soak_check.py SPEC.json

SPEC: {"home": ..., "vars": {...}, "rank_function": ..., "files": [[name, [lines]], ...]}.
Runs `dbt run` of the pipeline on the home (recovering whatever the kills left), then checks
ranks, zipper, changelog replay and ingest counts against the oracle fed with the landed
files, and that no dead attempt's directory or commit is left. Exit 0 when all hold.
(:func:`check_home` is the same check on a :class:`Lakerank`: the soak runs its last one in
its own process, where no killed build follows.)"""

from __future__ import annotations

import json
import os
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

import cdc  # noqa: E402
from checks import assert_all_exact  # noqa: E402
from crash import assert_no_leftovers  # noqa: E402
from lakerank_project import Lakerank  # noqa: E402


def main(spec_path: str) -> None:
    from dbt.cli.main import dbtRunner

    spec = json.loads(pathlib.Path(spec_path).read_text())
    os.environ["DBT_TARGET_PATH"] = os.environ.get("DBT_TARGET_PATH", "target/soak") + "-soak"
    check_home(Lakerank(dbtRunner(), pathlib.Path(spec["home"])), spec["files"], spec["vars"], spec["rank_function"])
    print("SOAK CHECK OK")


def check_home(lr: Lakerank, files, settings: dict, rank_function: str) -> None:
    """The completing rerun on ``lr``'s home and the checks (the module docstring)."""
    lr.dbt("run", vars=settings)  # the data tests' own checks are in the oracle's below
    oracle = cdc.Oracle()
    for name, lines in files:
        oracle.consume(name, lines)
    assert_all_exact(lr, oracle, rank_function)
    spark = lr.spark()
    assert_no_leftovers(spark)
    # The leftover check can fail: a directory no partition references is found.
    fct_log = spark.sql("describe formatted lakerank.int_contract_block_rank__audit_log").collect()
    planted = next(r.data_type for r in fct_log if r.col_name == "Location").replace("file:", "") + "/_v/c0_planted"
    os.makedirs(planted)
    try:
        assert_no_leftovers(spark)
        raise SystemExit("the leftover check missed a planted directory")
    except AssertionError as exc:
        assert "c0_planted" in str(exc), exc
    finally:
        os.rmdir(planted)


if __name__ == "__main__":
    main(sys.argv[1])
