"""The lakerank adapter: dbt-spark with in-process Python models."""

from __future__ import annotations

import os
from typing import Any, Dict, Type

from dbt.adapters.base import available
from dbt.adapters.base.impl import PythonJobHelper
from dbt.adapters.contracts.connection import AdapterResponse
from dbt.adapters.spark.impl import SparkAdapter

from dbt.adapters.lakerank.catalog import catalog_rows
from dbt.adapters.lakerank.commits import CommitMixin
from dbt.adapters.lakerank.connections import LakerankConnectionManager
from dbt.adapters.lakerank.fence import give_back
from dbt.adapters.lakerank.home import metastore_path, resolve_home
from dbt.adapters.lakerank.pk_tables import PkTableMixin
from dbt.adapters.lakerank.python_job import SessionPythonJobHelper
from dbt.adapters.lakerank.records import RecordMixin
from dbt.adapters.lakerank.rewrites import RewriteMixin
from dbt.adapters.lakerank.session import env_spark_conf, is_shared
from dbt.adapters.lakerank.storage import StorageMixin
from dbt.adapters.lakerank.view_text import swap_relations


class LakerankAdapter(StorageMixin, CommitMixin, RecordMixin, PkTableMixin, RewriteMixin, SparkAdapter):
    ConnectionManager = LakerankConnectionManager  # type: ignore[assignment]

    @property
    def default_python_submission_method(self) -> str:
        return "session"

    @property
    def python_submission_helpers(self) -> Dict[str, Type[PythonJobHelper]]:
        return {**super().python_submission_helpers, "session": SessionPythonJobHelper}

    def generate_python_submission_response(self, submission_result: Any) -> AdapterResponse:
        message = str(submission_result) if submission_result is not None else "OK"
        return AdapterResponse(_message=message)

    def cleanup_connections(self) -> None:
        """dbt's, then the shared catalog's build lease goes back: the invocation is over."""
        super().cleanup_connections()
        give_back()

    def release_connection(self) -> None:
        """dbt's; a `dbt run-operation` is over when its one connection is released (it never
        cleans up its connections): its lease goes back then."""
        super().release_connection()
        from dbt.flags import get_flags

        if getattr(get_flags(), "WHICH", None) == "run-operation":
            give_back()

    @available
    def lakerank_swap_relations(self, texts: Dict[str, str], mapping: Dict[str, str]) -> Dict[str, str]:
        """Views' SQL ``texts`` (by name) reading ``mapping``'s values where they read its keys
        (``schema.name``): published view models' readers (lakerank_lib's publication), all
        in one call."""
        return {name: swap_relations(text, mapping) for name, text in texts.items()}

    @available
    def lakerank_home(self) -> str:
        """Absolute ``LAKERANK_HOME`` of the embedded target (landing, checkpoints)."""
        creds = self.config.credentials
        return resolve_home(getattr(creds, "lakerank_home", None))

    def list_relations_without_caching(self, schema_relation):
        """dbt-spark's listing, except where there is nothing to introspect (see
        :meth:`_nothing_to_introspect`), without the session's temporary views (`SHOW TABLE
        EXTENDED IN <schema>` lists them too, schema-less: an incremental model's
        ``<model>__dbt_tmp`` broke a later ``dbt docs generate`` in the same process)."""
        if self._nothing_to_introspect():
            return []
        return [r for r in super().list_relations_without_caching(schema_relation) if r.schema]

    def _get_one_catalog(self, information_schema, schemas, used_schemas):
        """The catalog of one schema from the metastore, comments included
        (:mod:`catalog`); dbt-spark's over thrift and the connect target."""
        spark = self._session() if self._remote_driver() is None else None
        if spark is None or len(schemas) != 1:
            return super()._get_one_catalog(information_schema, schemas, used_schemas)
        import agate
        from dbt_common.clients.agate_helper import DEFAULT_TYPE_TESTER

        rows = catalog_rows(spark, list(schemas)[0])
        return agate.Table.from_object(rows, column_types=DEFAULT_TYPE_TESTER)

    def _nothing_to_introspect(self) -> bool:
        """`dbt compile` / `dbt ls` on an embedded home whose metastore was never created:
        it has no relations and no properties, which is said without starting a JVM
        (sqlfluff's dbt templater fills dbt's relation cache and compiles every model: the
        lint would otherwise start Spark). Runs and builds are unchanged."""
        from dbt.flags import get_flags

        creds = self.config.credentials
        if str(creds.method) != "session" or creds.engine == "connect":
            return False
        if getattr(get_flags(), "WHICH", None) not in ("compile", "ls", "list"):
            return False
        if is_shared({**dict(creds.server_side_parameters), **env_spark_conf()}):
            return False  # the catalog is a metastore service's, not the home's
        return not os.path.isdir(metastore_path(self.lakerank_home()))

    @available
    def lakerank_test_kill(self, where: str, how: str = "kill") -> str:
        """A test-only crash (``lakerank_fault: kill:<step>``): SIGKILL this dbt process's
        process group, its JVM included, as an operator's ``kill -9`` of a build would. Only
        under LAKERANK_TEST_HOOKS=1 and only in a process that leads its own group (the
        crash tests start dbt with ``start_new_session``): a dbt run in-process in a test
        runner is refused rather than killing the runner. ``how`` 'stop' (``lakerank_fault:
        stop:<step>``): SIGSTOP this process alone (not its JVM), as a paused writer."""
        import signal

        from dbt_common.exceptions import CompilationError

        if os.environ.get("LAKERANK_TEST_HOOKS") != "1" or os.getpgrp() != os.getpid():
            raise CompilationError(f"lakerank_fault {how}:{where}: only in a test's own dbt process group")
        if how == "stop":
            os.kill(os.getpid(), signal.SIGSTOP)
            return ""  # continued
        os.killpg(os.getpgrp(), signal.SIGKILL)
        return ""  # not reached
