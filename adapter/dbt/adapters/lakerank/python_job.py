"""Run a dbt Python model in this process, on the active SparkSession.

dbt-spark 1.11 only submits Python models to Databricks. lakerank runs them
where the SQL models run: the compiled code (the model plus the
materialization's wrapper) is ``exec``-ed with ``spark`` bound to the session.
On a cluster the project's ``python_udfs`` package is shipped to executors.
"""

from __future__ import annotations

import os
import sys
import tempfile
import zipfile
from typing import Any, Dict

from dbt.adapters.base.impl import PythonJobHelper
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.lakerank.home import project_dir
from dbt.adapters.lakerank.remote import target_driver
from dbt.adapters.lakerank.session import current_thread_session

_SHIPPED: set = set()


def ship_python_udfs(spark, root: str) -> None:
    """Make ``python_udfs`` importable on executors of a non-local master."""
    master = spark.sparkContext.master
    pkg = os.path.join(root, "python_udfs")
    if master.startswith("local") or not os.path.isdir(pkg) or (master, root) in _SHIPPED:
        return
    fd, path = tempfile.mkstemp(suffix=".zip", prefix="python_udfs_")
    os.close(fd)
    with zipfile.ZipFile(path, "w") as zf:
        for base, _dirs, files in os.walk(pkg):
            for name in files:
                if name.endswith(".py"):
                    full = os.path.join(base, name)
                    zf.write(full, os.path.relpath(full, root))
    spark.sparkContext.addPyFile(path)
    _SHIPPED.add((master, root))


class SessionPythonJobHelper(PythonJobHelper):
    def __init__(self, parsed_model: Dict, credential: Any) -> None:
        self.parsed_model = parsed_model
        self.credential = credential

    def submit(self, compiled_code: str) -> Any:
        name = self.parsed_model.get("alias") or self.parsed_model.get("name", "model")
        method = str(getattr(self.credential, "method", "session"))
        if method != "session":
            raise DbtRuntimeError(
                f"Python model {name} cannot run on a target with method '{method}': lakerank runs Python "
                "models on a Spark driver it controls (targets local, cluster and connect). Build the Python "
                "models (the ingests) with one of those; the thrift target runs SQL table and view models only "
                "(docs/design.md, 'Targets')."
            )
        remote = target_driver(self.credential)
        if remote is not None:  # the connect target: on the serve driver, in this client's session
            return remote.call("run_python_model", (name, compiled_code, project_dir()))
        return run_model(current_thread_session(), name, compiled_code, project_dir())


def run_model(spark, name: str, compiled_code: str, root: str) -> Any:
    """``exec`` a compiled Python model with ``spark`` bound to ``spark``."""
    if root not in sys.path:
        sys.path.insert(0, root)
    ship_python_udfs(spark, root)
    scope: Dict[str, Any] = {"spark": spark, "__name__": f"lakerank_model_{name}"}
    try:
        exec(compile(compiled_code, f"<dbt python model {name}>", "exec"), scope)
    except DbtRuntimeError:
        raise
    except Exception as exc:  # surface the model's own error to dbt
        raise DbtRuntimeError(f"Python model {name} failed: {type(exc).__name__}: {exc}") from exc
    result = scope.get("lakerank_result")
    return result if result is None or isinstance(result, (str, int, float, bool)) else str(result)
