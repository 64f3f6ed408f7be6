"""Fixtures of the functional tests that drive the ingest's Python directly (no dbt)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    from pyspark.sql import SparkSession

    from dbt.adapters.lakerank.session import JVM_FLAGS, stop_embedded_session
    from python_udfs.jvm import jvm_class

    # Another module's live session (an in-process dbt's home, say) is stopped, never shared:
    # its metastore is another home's, and a JVM thread that last served it (the streaming
    # query's, the py4j callbacks') may still hold a Hive client of that metastore.
    stop_embedded_session()
    base = tmp_path_factory.mktemp("contract_ingest_spark")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("test_contract_ingest_unit")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "Asia/Shanghai")
        .config("spark.sql.warehouse.dir", str(base / "warehouse"))
        .config("spark.hadoop.javax.jdo.option.ConnectionURL",
                f"jdbc:derby:;databaseName={base / 'metastore_db'};create=true")
        .config("spark.sql.streaming.stateStore.providerClass",
                "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
        # As the project's embedded session: Derby cannot filter bigint partitions itself.
        .config("spark.sql.hive.metastorePartitionPruningFallbackOnException", "true")
        .config("spark.sql.hive.metastorePartitionPruningFastFallback", "true")
        # Only effective if this fixture starts the JVM: faster start, derby.log out of the cwd.
        .config("spark.driver.extraJavaOptions",
                f"{JVM_FLAGS} -Dderby.system.home={base}")
        .enableHiveSupport()
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    # Bind this thread's metastore client to the new session's metastore, as the adapter does.
    jvm_class(session, "org.apache.hadoop.hive.ql.metadata.Hive").closeCurrent()
    session.catalog.databaseExists("default")
    try:
        yield session
    finally:
        session.stop()
