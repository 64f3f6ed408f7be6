"""The embedded SparkSession: one per process, on one LAKERANK_HOME at a time.

Everything that must be decided before the JVM starts or the metastore opens lives here:
the Derby metastore and warehouse inside the home (:mod:`home`), the JVM's flags and the
class-data archive it maps (built by :mod:`jvm_archive`), and the profile's runtime
settings, applied once per dbt invocation (:func:`apply_once`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
from typing import Callable, Dict, Optional

from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.lakerank.fence import give_back
from dbt.adapters.lakerank.home import acquire_build_lock, metastore_path, release_build_lock
from dbt.adapters.lakerank.home_origin import check_home_origin
from dbt.adapters.lakerank.java_check import check_java
from python_udfs.jvm import jvm_class

# C1 only starts fast; it also shrinks the default code cache to 48 MB, which Spark's generated
# code fills in a long build ("Out of space in CodeCache"): reserve more. Metaspace starts at
# 256 MB: Spark's classes outgrow the default 21 MB trigger in stages, a full GC at each, in
# every process start.
# Spark's generated methods over 8,000 bytes (a long predicate) are compiled, not interpreted
# (docs/benchmarks.md, "Compiled code"). LAKERANK_JVM_FLAGS replaces them all (e.g. C2 for a
# long-lived process with cores to spare; the tests keep C1: their two JVMs share two cores).
JVM_FLAGS = os.environ.get("LAKERANK_JVM_FLAGS", "-XX:TieredStopAtLevel=1 -XX:ReservedCodeCacheSize=384m "
                           "-XX:MetaspaceSize=256m -XX:+UseSerialGC -Xss4m -XX:-DontCompileHugeMethods")


def archive_path() -> Optional[str]:
    """Where this machine's archive lives (it may not exist yet); None when disabled or no
    Java is found."""
    if os.environ.get("LAKERANK_JVM_ARCHIVE", "").lower() in ("off", "0", "false"):
        return None
    java_home = os.environ.get("JAVA_HOME")
    java = os.path.join(java_home, "bin", "java") if java_home else shutil.which("java")
    if not java or not os.path.exists(java):
        return None
    import pyspark

    java = os.path.realpath(java)
    key = f"{java}:{os.path.getmtime(java)}:{pyspark.__version__}:{os.path.dirname(pyspark.__file__)}"
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "lakerank", f"jvm-{hashlib.sha1(key.encode()).hexdigest()[:16]}.jsa")


def archive_flag() -> str:
    """The JVM flag that maps the archive, or '' when there is none."""
    path = archive_path()
    return f"-XX:SharedArchiveFile={path}" if path and os.path.exists(path) else ""


_ACTIVE_HOME = None
# dbt opens one connection per thread: starting (or switching) the session, and applying
# the profile's settings, happen once, under this lock.
_SESSION_LOCK = threading.RLock()


def home_spark_conf(home: str) -> Dict[str, str]:
    """Spark settings that put every file the embedded target writes under ``home``."""
    return {
        "spark.sql.warehouse.dir": os.path.join(home, "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": (
            f"jdbc:derby:;databaseName={metastore_path(home)};create=true"
        ),
        "spark.sql.streaming.checkpointLocation": os.path.join(home, "checkpoints", "_default"),
        "spark.local.dir": os.path.join(home, "tmp"),
        # Hive's session state makes this folder (default: one `/tmp/<session id>_resources`
        # per process, never removed): under the home, one for all.
        "spark.hadoop.hive.downloaded.resources.dir": os.path.join(home, "tmp", "hive_resources"),
        "spark.lakerank.home": home,
        # DataNucleus' level-2 cache keeps the metastore's table and partition objects in
        # this JVM between metastore transactions (a small gain: docs/benchmarks.md). Safe
        # here: the home's Derby database is embedded, and Derby boots a database in one JVM
        # only, so no other process changes it under the cache; another home (or a return to
        # this one) gets a new DataNucleus factory and an empty cache. A shared metastore
        # server would need it off.
        "spark.hadoop.datanucleus.cache.level2": "true",
        "spark.hadoop.datanucleus.cache.level2.type": "soft",
        # Derby's metastore cannot filter on non-string partition columns
        # (bigint commit ids, timestamp segments): prune on the client instead.
        "spark.sql.hive.metastorePartitionPruningFallbackOnException": "true",
        # The fast fallback rejects every predicate on a TIMESTAMP_NTZ partition column
        # ("Expected only partition pruning predicates", Spark 4.3): use the plain one.
        "spark.sql.hive.metastorePartitionPruningFastFallback": "false",
        # Constraint propagation explodes on lakerank's change-diff queries (a full outer
        # join with one null-safe comparison per column): planning outgrows the query.
        "spark.sql.constraintPropagation.enabled": "false",
        # A column comment (persist_docs) or a new data schema (on_schema_change) on a parquet
        # table: Spark first writes Hive-compatible columns, which Derby's metastore refuses
        # for a comment over 256 characters, then falls back to its own format (the schema
        # in table properties, a placeholder Hive column), which Hive's type check refuses
        # against the columns stored first. The home's metastore is Spark's alone, so the
        # check is off, and a refused write is retried at once (the embedded metastore has no
        # transient failures to wait out; its default, 10 tries 2 s apart, took 20 s per
        # comment).
        "spark.hadoop.hive.metastore.disallow.incompatible.col.type.changes": "false",
        "spark.hadoop.hive.hmshandler.retry.attempts": "1",
        "spark.hadoop.hive.hmshandler.retry.interval": "0ms",
    }


# The shared deployment (docs/deployment.md): a target whose settings name a metastore
# service. Its catalog and warehouse are the profile's; the home keeps only this process's
# own files (scratch, logs, checkpoints, the build lock).
METASTORE_URIS = "spark.hadoop.hive.metastore.uris"
DEPLOYMENT = "spark.lakerank.deployment"
# The home's Derby metastore and warehouse, and the settings that exist for them only: never
# applied when the catalog is shared.
HOME_CATALOG_KEYS = (
    "spark.sql.warehouse.dir",
    "spark.hadoop.javax.jdo.option.ConnectionURL",
    "spark.hadoop.datanucleus.cache.level2",
    "spark.hadoop.datanucleus.cache.level2.type",
    "spark.hadoop.hive.metastore.disallow.incompatible.col.type.changes",
    "spark.hadoop.hive.hmshandler.retry.attempts",
    "spark.hadoop.hive.hmshandler.retry.interval",
)
# S3A (hadoop-aws 3.5.0: pyspark 4.3.0's Hadoop) and what it needs, in the cache that
# scripts/services/jars.sh fills from Maven Central.
S3A_JARS = ("hadoop-aws-3.5.0.jar", "bundle-2.35.4.jar", "analyticsaccelerator-s3-1.3.1.jar")


def is_shared(conf: Dict[str, str]) -> bool:
    """Whether these settings are the shared deployment's: they name a metastore service, or
    the target says so (``spark.lakerank.deployment: shared``, the profile's shared target)."""
    return bool(str(conf.get(METASTORE_URIS, "") or "").strip()) or conf.get(DEPLOYMENT) == "shared"


def jars_dir() -> str:
    """Where scripts/services/jars.sh keeps the jars it fetched (``LAKERANK_JARS``)."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.environ.get("LAKERANK_JARS") or os.path.join(cache, "lakerank", "jars")


def s3a_class_path() -> str:
    """The S3A jars as a class path; a clear error naming how to fetch them when one is missing."""
    folder = jars_dir()
    missing = [j for j in S3A_JARS if not os.path.isfile(os.path.join(folder, j))]
    if missing:
        raise DbtRuntimeError(
            f"lakerank: the shared target needs S3A's jars, missing in {folder}: {', '.join(missing)}; "
            "run scripts/services/jars.sh (Maven) or set LAKERANK_JARS to a folder that has them "
            "(docs/deployment.md)")
    return os.pathsep.join(os.path.join(folder, j) for j in S3A_JARS)


def session_spark_conf(home: str, params: Dict[str, str]) -> Dict[str, str]:
    """Every Spark setting a new embedded session starts with.

    The embedded default: the profile's, then ``LAKERANK_SPARK_CONF``'s, then the home's
    (:func:`home_spark_conf`, last: nothing points the metastore or the warehouse elsewhere).
    The shared deployment (the settings name a metastore service, :func:`is_shared`): the
    home's settings except its catalog's (:data:`HOME_CATALOG_KEYS`), then the profile's and
    ``LAKERANK_SPARK_CONF``'s over them, so the metastore, the warehouse and the landing zone
    are the profile's; S3A's jars go on the driver's and the executors' class path."""
    user = {**params, **env_spark_conf()}
    if not is_shared(user):
        return {**user, **home_spark_conf(home)}
    if not str(user.get(METASTORE_URIS, "") or "").strip():
        raise DbtRuntimeError("lakerank: the shared target needs a metastore service (spark.hadoop.hive.metastore."
                              "uris, LAKERANK_METASTORE_URI in profiles/profiles.yml): docs/deployment.md")
    if not str(user.get("spark.sql.warehouse.dir", "") or "").strip():
        raise DbtRuntimeError("lakerank: the shared target needs a warehouse (spark.sql.warehouse.dir, "
                              "LAKERANK_WAREHOUSE in profiles/profiles.yml): docs/deployment.md")
    own = {k: v for k, v in home_spark_conf(home).items() if k not in HOME_CATALOG_KEYS}
    conf = {**own, **user}
    for key in ("spark.lakerank.home", "spark.local.dir"):  # this process's own files
        conf[key] = own[key]
    if any(str(conf.get(k, "")).startswith("s3a://") for k in ("spark.sql.warehouse.dir", "spark.lakerank.landing")):
        jars = s3a_class_path()
        for key in ("spark.driver.extraClassPath", "spark.executor.extraClassPath"):
            conf[key] = os.pathsep.join(p for p in (conf.get(key, ""), jars) if p)
    return conf


def env_spark_conf() -> Dict[str, str]:
    """``LAKERANK_SPARK_CONF="k1=v1,k2=v2"``: Spark settings over the profile's
    ``server_side_parameters`` for one run (e.g. an A/B measurement), without editing it.
    Read when the process starts its session; a value cannot contain a comma."""
    out = {}
    for item in os.environ.get("LAKERANK_SPARK_CONF", "").split(","):
        if item.strip():
            key, sep, value = item.partition("=")
            if not sep:
                raise ValueError(f"LAKERANK_SPARK_CONF: expected key=value, got {item!r}")
            out[key.strip()] = value.strip()
    return out


def start_embedded_session(home: str, params: Dict[str, str]):
    """Create (or reuse) the process's SparkSession for ``home``.

    One JVM serves every dbt invocation of the process. If the active session
    belongs to another home it is stopped first, so two homes never share a
    metastore or warehouse.
    """
    with _SESSION_LOCK:
        _start_embedded_session(home, params)


def stop_embedded_session() -> None:
    """Stop the process's session and release its home (e.g. before its cluster goes away)."""
    with _SESSION_LOCK:
        _stop_active_session()


def _stop_active_session() -> None:
    global _ACTIVE_HOME
    from pyspark.sql import SparkSession

    active = SparkSession._instantiatedSession
    if active is not None:
        give_back()  # the shared catalog's lease, while its metastore client still runs
        active.stop()
        _reset_hive_client()
    if _ACTIVE_HOME is not None:
        release_build_lock(_ACTIVE_HOME)
    _ACTIVE_HOME = None


def _start_embedded_session(home: str, params: Dict[str, str]):
    global _ACTIVE_HOME
    from pyspark.sql import SparkSession

    active = SparkSession._instantiatedSession  # the process-wide session (active is per thread)
    if active is not None and _ACTIVE_HOME not in (None, home):
        _stop_active_session()
        active = None
    if active is None:
        check_java()  # a clear error naming what to install, never a dead JVM's traceback
    acquire_build_lock(home)  # first: a build refused for a busy home writes nothing
    if active is None:
        try:
            check_home_origin(home)  # once per session start: the session stays on this home
        except Exception:
            release_build_lock(home)
            raise
        os.makedirs(os.path.join(home, "tmp"), exist_ok=True)
        os.environ.setdefault(
            "PYSPARK_SUBMIT_ARGS",
            f'--driver-java-options "{JVM_FLAGS} {archive_flag()} -Dderby.system.home={home} '
            f'-Dlog4j2.configurationFile={LOG4J2_CONFIG} -Dlakerank.spark.log={spark_log_path(home)}" pyspark-shell',
        )
        conf = session_spark_conf(home, params)
        _launch_jvm(home, conf)
        builder = SparkSession.builder.enableHiveSupport()
        for key, value in conf.items():
            builder = builder.config(key, value)
        spark = builder.getOrCreate()
        _APPLIED.pop("embedded", None)  # a new session has none of the runtime settings yet
        spark.sparkContext.setLogLevel("ERROR")
        # Bind the new session's metastore client from a thread with no stale Hive client.
        jvm_class(spark, "org.apache.hadoop.hive.ql.metadata.Hive").closeCurrent()
        spark.catalog.databaseExists("default")
        _THREAD_HOMES[threading.get_ident()] = home
    _ACTIVE_HOME = home


# Spark's own log (log4j) goes to the home's logs/spark.log, not the terminal.
LOG4J2_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "log4j2.properties")


def spark_log_path(home: str) -> str:
    """Where the embedded driver's JVM logs: Spark's log4j output and the JVM's stderr
    (``LAKERANK_SPARK_LOG``: `lakerank serve` keeps its server's in serve.log)."""
    return os.environ.get("LAKERANK_SPARK_LOG") or os.path.join(home, "logs", "spark.log")


class LakerankJvmError(DbtRuntimeError):
    """The embedded driver's JVM exited while starting."""


def _launch_jvm(home: str, conf: Dict[str, str]) -> None:
    """Start the process's JVM (PySpark's gateway) with its stderr appended to the home's
    spark.log: what the JVM prints before log4j is up ("WARNING: Using incubator modules")
    stays off the terminal. A JVM that exits while starting raises its last lines. Nothing
    to do when the process has a JVM already (a later session runs in the same one)."""
    from pyspark import SparkConf, SparkContext
    from pyspark.errors import PySparkRuntimeError
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:
        return
    log = spark_log_path(home)
    os.makedirs(os.path.dirname(log), exist_ok=True)
    with open(log, "ab") as err:
        start = err.tell()
        try:  # the same conf the builder would give spark-submit (launch-time settings)
            gateway = launch_gateway(SparkConf(loadDefaults=False).setAll(conf.items()), popen_kwargs={"stderr": err})
        except PySparkRuntimeError:
            with open(log, "rb") as fh:
                fh.seek(start)
                tail = fh.read().decode("utf-8", "replace").strip().splitlines()[-20:]
            raise LakerankJvmError("lakerank: the embedded Spark driver's JVM exited while starting; its last "
                                   f"lines (from {log}):\n" + "\n".join(tail)) from None
    SparkContext._ensure_initialized(gateway=gateway)


def use_home(home: str, params: Dict[str, str]) -> None:
    """Put the process's session on ``home`` (started or switched) with the profile's
    runtime settings, once per invocation (:func:`apply_once`): what opening an embedded
    connection does."""
    start_embedded_session(home, params)
    apply_once("embedded", {**params, **env_spark_conf()}, lambda: apply_runtime_conf(params))


def home_session(home: str, params: Dict[str, str]):
    """The process's SparkSession on ``home``, put there first (:func:`use_home`) if the
    process has none or has another home's: for adapter calls that may come before the
    invocation's first statement opened its connection (a macro reading the metastore
    while compiling), which would otherwise read another home's metastore."""
    from pyspark.sql import SparkSession

    spark = SparkSession._instantiatedSession
    if spark is None or spark._sc._jsc is None or _ACTIVE_HOME != home:
        use_home(home, params)
    return current_thread_session()


def process_session():
    """The process's SparkSession, without going through ``SparkSession.builder``.

    ``builder.getOrCreate()`` on a running session re-applies every option the (process-wide)
    builder ever received, one py4j round trip each: dbt-spark called it before every SQL
    statement, ~30 % of a small pk_table commit's Python time (py-spy, docs/benchmarks.md).
    """
    from pyspark.sql import SparkSession

    spark = SparkSession._instantiatedSession
    if spark is None or spark._sc._jsc is None:
        spark = SparkSession.builder.getOrCreate()
    return spark


def current_thread_session():
    """The process's SparkSession, with this thread's Hive client bound to its metastore
    and the session set as the thread's active one.

    Hive caches a metastore client per thread; a thread that used the session of another
    home (or a session started outside dbt) would otherwise keep reading that metastore.
    PySpark's functions look the thread's active session up (and fall back to the builder).
    """
    spark = process_session()
    home = _ACTIVE_HOME or spark.conf.get("spark.lakerank.home", None)
    if home is not None and _THREAD_HOMES.get(threading.get_ident()) != home:
        jvm_class(spark, "org.apache.hadoop.hive.ql.metadata.Hive").closeCurrent()
        jvm_class(spark, "org.apache.spark.sql.SparkSession").setActiveSession(spark._jsparkSession)
        _THREAD_HOMES[threading.get_ident()] = home
    return spark


# What each engine's session last had applied, as (invocation id, settings). dbt opens a
# connection per thread, and all threads of a process share one session: the profile's
# settings go on once per invocation, before its first statement, never again from a thread
# that connects later, which would undo a setting a running model made
# (`set spark.sql.sources.partitionOverwriteMode = DYNAMIC` back to `static` under an
# insert_overwrite).
_APPLIED: Dict[str, tuple] = {}


def apply_once(engine: str, settings: Dict[str, str], apply: Callable[[], None]) -> None:
    """Run ``apply`` (which puts ``settings`` on ``engine``'s session) unless this dbt
    invocation already applied them there: the invocation's first connection does, and
    any connection whose settings differ from the last applied (another profile, a new
    session). Threads that connect later wait for it and never apply them again."""
    from dbt_common.invocation import get_invocation_id

    mark = (get_invocation_id(), tuple(sorted((k, str(v)) for k, v in settings.items())))
    with _SESSION_LOCK:
        if _APPLIED.get(engine) != mark:
            apply()
            _APPLIED[engine] = mark


def apply_runtime_conf(params: Dict[str, str]) -> None:
    """Set the profile's runtime SQL settings (then ``LAKERANK_SPARK_CONF``'s) on the running
    session: one process serves invocations with different profiles (e.g. another
    ``LAKERANK_TIMEZONE``), and static settings only take effect at JVM start."""
    spark = process_session()
    for key, value in {**params, **env_spark_conf()}.items():
        if spark.conf.isModifiable(key):
            spark.conf.set(key, str(value))


_THREAD_HOMES: Dict[int, str] = {}


def _reset_hive_client() -> None:
    """Forget the JVM's cached Hive client so a later SparkSession opens its own metastore."""
    from pyspark import SparkContext

    SparkContext._active_spark_context = None  # type: ignore[attr-defined]
