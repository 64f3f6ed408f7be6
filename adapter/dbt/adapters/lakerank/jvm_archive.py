"""A class-data-sharing archive for the embedded Spark driver's JVM (JDK AppCDS).

A cold `dbt` process spends most of its start-up loading and verifying Spark's and Hive's
classes. A dynamic CDS archive of the classes a session loads halves that (the JVM maps
them, already parsed and verified, instead of reading ~10,000 classes from jars; figures in
docs/benchmarks.md, "The JVM archive").

    python3 -m dbt.adapters.lakerank.jvm_archive      # build it (about 30 s, once per machine)

`scripts/test.sh` builds it first (the demo does not: one process, one JVM start, it would
cost more than it saves). A session uses it when it exists
(`-XX:SharedArchiveFile`); the archive is named after the Java binary and the pyspark
version, so another JVM or another Spark gets its own. If the JVM rejects it (another class
path, e.g. extra jars), the JVM runs without it (`-Xshare:auto`) and prints a warning.
`LAKERANK_JVM_ARCHIVE=off` disables it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from typing import Optional

from dbt.adapters.lakerank.java_check import LakerankJavaError, check_java
from dbt.adapters.lakerank.session import JVM_FLAGS, archive_path

_WORKLOAD = """
import os, sys
from pyspark.sql import SparkSession
home = sys.argv[1]
spark = (SparkSession.builder.enableHiveSupport()
         .config("spark.sql.warehouse.dir", os.path.join(home, "warehouse"))
         .config("spark.ui.enabled", "false").getOrCreate())
spark.sql("create database if not exists lakerank_archive").collect()
spark.sql("create table if not exists lakerank_archive.t (k bigint, v string) using parquet "
          "partitioned by (k)").collect()
spark.sql("insert overwrite lakerank_archive.t partition (k = 1) select 'x'").collect()
spark.sql("select k, count(*) over (partition by k order by v) from lakerank_archive.t").collect()
spark.stop()
"""


def build(force: bool = False) -> Optional[str]:
    """Build the archive (a short Spark session with a Hive metastore, a write and a query,
    its loaded classes dumped at exit) under a temporary name, then move it into place.
    Returns its path, or None when disabled; without a usable Java, java_check's error."""
    check_java()  # no Java or too old: the clear error (java_check.py), not the dump's JVM output
    path = archive_path()
    if path is None or (os.path.exists(path) and not force):
        return path
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with tempfile.TemporaryDirectory(prefix="lakerank-jvm-archive-") as home:
        env = {**os.environ, "PYSPARK_SUBMIT_ARGS": (
            f'--driver-java-options "{JVM_FLAGS} -XX:ArchiveClassesAtExit={tmp} '
            f'-Dderby.system.home={home}" pyspark-shell')}
        proc = subprocess.run([sys.executable, "-c", _WORKLOAD, home], env=env, cwd=home,
                              capture_output=True, text=True)
    if proc.returncode != 0 or not os.path.exists(tmp):
        if os.path.exists(tmp):
            os.remove(tmp)
        raise RuntimeError(f"lakerank: building the JVM archive failed:\n{proc.stderr[-3000:]}")
    os.replace(tmp, path)
    return path


if __name__ == "__main__":
    try:
        print(build(force="--force" in sys.argv) or "lakerank: no JVM archive (disabled)")
    except LakerankJavaError as exc:
        sys.exit(exc.msg)  # scripts/test.sh stops here, at once, with what to install
