"""The lakerank adapter: dbt-spark with in-process Python models."""

from __future__ import annotations

from typing import Any, Dict, Type

from dbt.adapters.base import available
from dbt.adapters.base.impl import PythonJobHelper
from dbt.adapters.contracts.connection import AdapterResponse
from dbt.adapters.spark.impl import SparkAdapter

from dbt.adapters.lakerank.connections import LakerankConnectionManager, resolve_home
from dbt.adapters.lakerank.python_job import SessionPythonJobHelper


class LakerankAdapter(SparkAdapter):
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

    @available
    def lakerank_home(self) -> str:
        """Absolute ``LAKERANK_HOME`` of the embedded target (landing, checkpoints)."""
        creds = self.config.credentials
        return resolve_home(getattr(creds, "lakerank_home", None))
