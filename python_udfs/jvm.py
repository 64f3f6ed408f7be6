"""Cheap access to JVM classes from the driver."""

from __future__ import annotations

from typing import Dict, Optional

_JVM_CLASSES: Dict[tuple, object] = {}


def jvm_class(spark, name: str):
    """The JVM class ``name`` (fully qualified) as a py4j ``JavaClass``, cached.

    ``spark._jvm.org.apache.hadoop.fs.Path`` resolves one name segment per round trip, and
    every segment that is not a class ("org", "org.apache", ... and each wildcard import the
    gateway tries) is a failed class lookup that scans every jar on Spark's classpath, a
    cost a pk_table commit's profile showed (docs/benchmarks.md).
    """
    from py4j.java_gateway import JavaClass

    client = spark.sparkContext._gateway._gateway_client
    key = (id(client), name)
    cls = _JVM_CLASSES.get(key)
    if cls is None:
        cls = _JVM_CLASSES[key] = JavaClass(name, client)
    return cls


def scala_seq(spark, items):
    """A Scala ``Seq`` of the JVM objects ``items`` (what catalog calls take)."""
    arr = jvm_class(spark, "java.util.ArrayList")()
    for item in items:
        arr.add(item)
    return jvm_class(spark, "scala.jdk.javaapi.CollectionConverters").asScala(arr).toSeq()


def scala_items(collection):
    """The items of a Scala collection (a ``Seq``, a map's keys ...), one by one."""
    it = collection.iterator()
    while it.hasNext():
        yield it.next()


def external_catalog(spark):
    """The session's external catalog (the metastore), for calls that skip SQL parsing and
    analysis."""
    return spark._jsparkSession.sharedState().externalCatalog()


def split_table_name(spark, table: str):
    """``(database, table)`` of ``db.table`` or ``table`` (backticks allowed)."""
    parts = [p.strip("`") for p in table.split(".")]
    return (parts[-2] if len(parts) > 1 else spark.catalog.currentDatabase()), parts[-1]


def storage_at(spark, storage, location: str):
    """``storage`` (a partition's or table's storage format) pointed at ``location``."""
    uri = jvm_class(spark, "org.apache.hadoop.fs.Path")(location).toUri()
    return storage.copy(jvm_class(spark, "scala.Some")(uri), storage.inputFormat(), storage.outputFormat(),
                        storage.serde(), storage.compressed(), storage.properties(), storage.serdeName())


def partition_spec(spark, spec_path: str):
    """The Scala ``Map`` partition spec of ``"c=v/..."``."""
    spec = jvm_class(spark, "scala.collection.immutable.Map$").__getattr__("MODULE$").empty()
    for item in spec_path.split("/"):
        key, value = item.split("=", 1)
        spec = spec.updated(key, value)
    return spec


def new_partition(spark, spec_path: str, location: str, storage):
    """A ``CatalogTablePartition`` for ``"c=v/..."`` at ``location`` (``storage``: the
    table's storage format)."""
    none = jvm_class(spark, "scala.Option").empty()
    empty = jvm_class(spark, "scala.collection.immutable.Map$").__getattr__("MODULE$").empty()
    return jvm_class(spark, "org.apache.spark.sql.catalyst.catalog.CatalogTablePartition")(
        partition_spec(spark, spec_path), storage_at(spark, storage, location), empty,
        jvm_class(spark, "java.lang.System").currentTimeMillis(), -1, none)


def moved_partition(spark, part, location: str):
    """The ``CatalogTablePartition`` ``part`` pointed at ``location`` (spec, parameters and
    times kept)."""
    none = jvm_class(spark, "scala.Option").empty()
    return part.copy(part.spec(), storage_at(spark, part.storage(), location), part.parameters(),
                     part.createTime(), part.lastAccessTime(), none)


def point_partition(spark, database: str, table: str, spec_path: str, location: str) -> Optional[str]:
    """Point partition ``"c=v/..."`` of ``database.table`` at ``location``: re-point it if
    it exists, else register it; one metastore write either way (the atomic step of a
    publish: a reader sees the old directory or the new one). What ``SHOW PARTITIONS`` plus
    ``ALTER TABLE ... ADD PARTITION / SET LOCATION`` do, without parsing, analysing and
    looking the table up three times. Returns the partition's location before, None if it
    did not exist."""
    catalog = external_catalog(spark)
    found = catalog.getPartitionOption(database, table, partition_spec(spark, spec_path))
    previous = None
    if found.isDefined():
        previous = str(found.get().location())
        catalog.alterPartitions(database, table, scala_seq(spark, [moved_partition(spark, found.get(), location)]))
    else:
        storage = catalog.getTable(database, table).storage()
        catalog.createPartitions(database, table,
                                 scala_seq(spark, [new_partition(spark, spec_path, location, storage)]), True)
    spark.catalog.refreshTable(f"`{database}`.`{table}`")
    return previous


def partition_values(spark, database: str, table: str, column: str):
    """The values (strings) of partition column ``column`` of ``database.table``'s
    partitions, from the metastore's partition names (no SQL statement)."""
    names = external_catalog(spark).listPartitionNames(database, table, jvm_class(spark, "scala.Option").empty())
    out = []
    for i in range(names.size()):
        for item in str(names.apply(i)).split("/"):
            key, value = item.split("=", 1)
            if key == column:
                out.append(value)
    return out


def kept(df):
    """``df`` computed once, at its first action, and its rows kept for every later use (a
    lazy local checkpoint, memory then disk): later uses read the same rows, never a
    recomputation. Cheaper than ``persist()`` on the ingests' parsed lines, which pays for
    building compressed column batches (docs/benchmarks.md). The price: a lost block fails
    the job instead of recomputing it (the commit is not made; the rerun redoes it). Free the
    rows with ``release``."""
    return df.localCheckpoint(eager=False)


def release(df) -> None:
    """Drop the rows ``kept`` (or a local checkpoint) holds for ``df``, or for the temporary
    view ``df`` reads (``spark.table(view)``); a no-op for other frames."""
    jdf = getattr(df, "_jdf", None)  # None over Spark Connect: the server cleans up
    if jdf is None:
        return
    plan = jdf.queryExecution().analyzed()
    while plan.getClass().getSimpleName() in ("SubqueryAlias", "View"):  # a temporary view over its plan
        plan = plan.child()
    if plan.getClass().getSimpleName() == "LogicalRDD":
        plan.rdd().unpersist(False)
