"""``dbt docs generate`` (dbt-tests-adapter ``basic.test_docs_generate``) on lakerank: dbt's
own runs and catalog checks, against an expected catalog in lakerank's (Spark's) terms.

What differs from dbt's Postgres catalog, each checked here against its own source:

- types are Spark SQL's as the metastore stores them: a seed's integer column is ``bigint``
  (dbt-spark's seed type for a whole number), text ``string``, a datetime ``timestamp``
  (the suite's target keeps Spark's default timestamp type), ``count(*)`` ``bigint``;
- relation types are ``table`` and ``view``; there is no database (Spark has two levels);
- the owner is the user Spark runs as (``SPARK_USER``, else Hadoop's user: the OS user);
- columns are numbered from 0, as dbt-spark numbers them (dbt's references catalog from 1);
- statistics are the metastore's: a table written whole (``ephemeral_summary``, a
  ``CREATE TABLE ... AS``) has its size in bytes, which must equal its parquet files' size on
  disk; a seed (created empty, then inserted into) and views have none. Its row count once
  ``ANALYZE TABLE`` computed one is lakerank's own test below.
"""

from __future__ import annotations

import os
import pathlib
import pwd

import pytest
from dbt.tests.adapter.basic import expected_catalog
from dbt.tests.adapter.basic.test_docs_generate import (
    BaseDocsGenerate,
    BaseDocsGenReferences,
    seed__seed_csv,
)
from dbt.tests.util import get_artifact, run_dbt

_TYPES = {"id_type": "bigint", "text_type": "string", "time_type": "timestamp",
          "view_type": "view", "table_type": "table"}


def _spark_user() -> str:
    """The user Spark records as a relation's owner (Spark's ``Utils.getCurrentUserName``)."""
    return (os.environ.get("SPARK_USER") or os.environ.get("HADOOP_USER_NAME")
            or pwd.getpwuid(os.getuid()).pw_name)


class _BytesOnDisk:
    """Equal to the size of a table's data files (Spark's own count: files whose names start
    with ``_`` or ``.`` are not data), read from the file system when the test compares, i.e.
    after the run that wrote the table."""

    def __init__(self, directory: pathlib.Path):
        self.directory = directory

    def size(self) -> int:
        files = [p for p in self.directory.rglob("*") if p.is_file() and not p.name.startswith(("_", "."))]
        assert files, f"no data files under {self.directory}"
        return sum(p.stat().st_size for p in files)

    def __eq__(self, other) -> bool:
        return other == self.size()

    def __repr__(self) -> str:
        return f"<bytes of {self.directory}>"


def _table_dir(project, home: pathlib.Path, name: str) -> pathlib.Path:
    return home / "warehouse" / f"{project.test_schema}.db" / name


def _table_stats(directory: pathlib.Path) -> dict:
    return {
        "bytes": {"id": "bytes", "label": "bytes", "value": _BytesOnDisk(directory), "description": None,
                  "include": True},
        "has_stats": {**expected_catalog.no_stats()["has_stats"], "value": True},
    }


class TestDocsGenerate(BaseDocsGenerate):
    @pytest.fixture(scope="class")
    def expected_catalog(self, project):
        return expected_catalog.base_expected_catalog(
            project, role=_spark_user(), model_stats=expected_catalog.no_stats(), **_TYPES)


class TestDocsGenReferences(BaseDocsGenReferences):
    @pytest.fixture(scope="class")
    def expected_catalog(self, project, lakerank_suite_home):
        catalog = expected_catalog.expected_references_catalog(
            project, role=_spark_user(), bigint_type="bigint", model_stats=expected_catalog.no_stats(), **_TYPES)
        for section in catalog.values():
            for node in section.values():
                node["columns"] = {name: {**column, "index": column["index"] - 1}
                                   for name, column in node["columns"].items()}
        table_dir = _table_dir(project, lakerank_suite_home, "ephemeral_summary")
        catalog["nodes"]["model.test.ephemeral_summary"]["stats"] = _table_stats(table_dir)
        return catalog

    def test_analyzed_table_row_count(self, project, lakerank_suite_home):
        """lakerank's own: the row count ``ANALYZE TABLE`` stores is in the catalog, beside the
        size (dbt-spark shows both). A ``dbt run`` rebuilds the table without it, so
        ``test_references`` holds in either order."""
        run_dbt(["run", "--select", "ephemeral_summary"])
        project.run_sql(f"analyze table {project.test_schema}.ephemeral_summary compute statistics")
        run_dbt(["docs", "generate", "--no-compile"])
        catalog = get_artifact(os.path.join(project.project_root, "target", "catalog.json"))
        stats = catalog["nodes"]["model.test.ephemeral_summary"]["stats"]
        first_names = {line.split(",")[1] for line in seed__seed_csv.strip().splitlines()[1:]}
        assert stats["rows"] == {"id": "rows", "label": "rows", "value": len(first_names), "description": None,
                                 "include": True}
        assert stats["bytes"]["value"] == _BytesOnDisk(_table_dir(project, lakerank_suite_home, "ephemeral_summary"))
