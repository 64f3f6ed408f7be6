"""A lakerank project run against one LAKERANK_HOME: real dbt invocations through the
session's dbtRunner (tests/conftest.py) and reads of its tables as pandas."""

from __future__ import annotations

import os
import pathlib

import pandas as pd

import cdc

ROOT = pathlib.Path(__file__).resolve().parents[2]

SCHEMA = "lakerank"
# The var that turns the library examples (models/examples/) on; off, dbt sees only the pipeline.
EXAMPLES_ON = {"lakerank_examples": True}


class Lakerank:
    """A lakerank project run against one LAKERANK_HOME; ``examples``: every dbt invocation
    with the library examples on (test_examples.py), else the pipeline alone."""

    def __init__(self, runner, home: pathlib.Path, examples: bool = False):
        self.runner = runner
        self.home = home
        self.examples = examples
        self.landed = 0

    @property
    def landing(self) -> pathlib.Path:
        return self.home / "landing" / "contracts"

    def land(self, lines, stream: str = "contracts") -> str:
        path = cdc.write_batch(self.home / "landing" / stream, self.landed, lines)
        self.landed += 1
        return path

    def dbt(self, *args, vars: dict | None = None, expect_success: bool = True, project: pathlib.Path = ROOT,
            messages: list | None = None):
        """`dbt <args>` on this home; ``project``: another project folder (an edited copy);
        ``messages``: a list that receives the text of every event dbt logs."""
        os.environ["LAKERANK_HOME"] = str(self.home)
        cli = [*args, "--project-dir", str(project), "--profiles-dir", str(ROOT / "profiles")]
        vars = {**(EXAMPLES_ON if self.examples else {}), **(vars or {})}
        if vars:
            import json

            cli += ["--vars", json.dumps(vars)]
        runner = self.runner
        if messages is not None:
            from dbt.cli.main import dbtRunner

            runner = dbtRunner(callbacks=[lambda event: messages.append(event.info.msg)])
        result = runner.invoke(cli)
        if expect_success and not result.success:
            failed = [
                f"{r.node.name}: {r.message}" for r in (result.result or []) if r.status in ("error", "fail")
            ]
            raise AssertionError(f"dbt {' '.join(args)} failed: {failed or result.exception}")
        return result

    def spark(self):
        from dbt.adapters.lakerank.session import current_thread_session

        return current_thread_session()

    def table(self, name: str, where: str = "") -> pd.DataFrame:
        """A table as pandas, timestamps rendered as business-time strings."""
        spark = self.spark()
        df = spark.table(f"{SCHEMA}.{name}")
        cols = []
        for field in df.schema.fields:
            if field.dataType.typeName() == "timestamp_ntz":  # zone-free (date_format is not)
                cols.append(f"cast({field.name} as string) as {field.name}")
            elif field.dataType.typeName() == "timestamp":
                cols.append(f"date_format({field.name}, 'yyyy-MM-dd HH:mm:ss') as {field.name}")
            elif field.dataType.typeName() == "decimal":
                cols.append(f"cast({field.name} as string) as {field.name}")
            else:
                cols.append(field.name)
        q = f"select {', '.join(cols)} from {SCHEMA}.{name} {('where ' + where) if where else ''}"
        return spark.sql(q).toPandas()
