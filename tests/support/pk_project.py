"""A throwaway dbt project that installs lakerank_lib (the library package), for pk_table tests."""

from __future__ import annotations

import json
import os
import pathlib
import textwrap
from typing import Dict, List, Optional

ROOT = pathlib.Path(__file__).resolve().parents[2]


class PkProject:
    """Models written as files, real `dbt` invocations through the session's dbtRunner."""

    def __init__(self, runner, tmp: pathlib.Path, models: Dict[str, str]):
        self.runner = runner
        self.home = tmp / "home"
        self.project = tmp / "project"
        (self.project / "models").mkdir(parents=True)
        (self.project / "dbt_project.yml").write_text(textwrap.dedent("""\
            name: pk_tests
            version: "0.1.0"
            config-version: 2
            profile: lakerank
            """))
        (self.project / "packages.yml").write_text(f"packages:\n  - local: {ROOT / 'lakerank_lib'}\n")
        for name, sql in models.items():
            self.write_model(name, sql)
        self.invoke("deps")

    def write_model(self, name: str, sql: str) -> None:
        (self.project / "models" / f"{name}.sql").write_text(sql)

    def invoke(self, *args: str, vars_: Optional[dict] = None, expect_success: bool = True):
        os.environ["LAKERANK_HOME"] = str(self.home)
        cli = [*args, "--project-dir", str(self.project), "--profiles-dir", str(ROOT / "profiles")]
        if vars_ is not None:
            cli += ["--vars", json.dumps(vars_)]
        res = self.runner.invoke(cli)
        if expect_success:
            assert res.success, f"dbt {args} failed: {res.exception or [r.message for r in res.result or []]}"
        return res

    def spark(self):
        from dbt.adapters.lakerank.session import current_thread_session

        return current_thread_session()

    def rows(self, sql: str) -> List[dict]:
        return [r.asDict() for r in self.spark().sql(sql).collect()]

    def compiled(self, inline: str) -> str:
        res = self.invoke("compile", "--inline", inline, "--quiet")
        return res.result.results[0].node.compiled_code

    def queries(self, *inlines: str) -> List[List[dict]]:
        """The rows of each inline query that uses lakerank macros (compiled by dbt, run in
        Spark), all compiled by one dbt invocation (each costs a parse check and a compile run)."""
        marker = "/*lakerank-pk-project-next-query*/"
        parts = self.compiled(f"\n{marker}\n".join(inlines)).split(marker)
        assert len(parts) == len(inlines), parts
        return [self.rows(sql) for sql in parts]
