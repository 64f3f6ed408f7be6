"""Storage helpers of the lakerank adapter: metastore reads and writes through Spark's external
catalog, and files through Hadoop's FileSystem, each one call where SQL DDL would take several.
Embedded/cluster session only; over thrift they fall back to SQL or do nothing."""

from __future__ import annotations

from typing import Any, Dict, List

from dbt.adapters.base import available
from dbt.adapters.base.meta import AdapterMeta
from dbt.adapters.events.logging import AdapterLogger
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.lakerank import fence
from dbt.adapters.lakerank.remote import driver_side, target_driver
from dbt.adapters.lakerank.session import home_session
from python_udfs.commit import protocol
from python_udfs.faults import inject_full_disk
from python_udfs.jvm import jvm_class, release, scala_seq

logger = AdapterLogger("lakerank")


class StorageMixin(metaclass=AdapterMeta):
    # -- storage helpers (embedded/cluster session only; no-ops over thrift) -------------
    def _session(self):
        creds = self.config.credentials
        if str(creds.method) != "session":
            return None
        if getattr(creds, "engine", "embedded") == "connect":
            raise DbtRuntimeError("lakerank: a driver-side call ran in a connect-target process (a bug)")
        return home_session(self.lakerank_home(), dict(creds.server_side_parameters))

    def _remote_driver(self):
        """The serve driver endpoint on the connect target, else None (see remote.py)."""
        return target_driver(self.config.credentials)

    @available
    def lakerank_require_driver(self, materialization: str) -> str:
        """Stop with a clear message when ``materialization`` cannot run on this target: the
        incremental materializations write directories and re-point partitions through a
        Spark driver lakerank controls (in the dbt process, or `lakerank serve`'s for the
        connect target), which a thrift target does not have."""
        method = str(self.config.credentials.method)
        if method != "session":
            raise DbtRuntimeError(
                f"{materialization} needs a Spark driver lakerank controls (targets local, cluster and connect) "
                f"for its metastore and file operations; this target's method is '{method}'. The thrift target "
                "runs SQL table and view models and the library's read macros only (docs/design.md, 'Targets')."
            )
        self._remote_driver()  # the connect target without a serve driver refuses here
        return ""

    @available
    @driver_side
    def lakerank_partition_locations(self, relation) -> Dict[str, str]:
        """``{"col=value": location}`` for every partition of ``relation`` (one metastore call)."""
        spark = self._session()
        if spark is None:
            return {}
        listing = protocol.partitions(spark, (relation.schema, relation.identifier))
        return {spec: location for spec, (_part, location) in listing.items()}

    @available
    @driver_side
    def lakerank_delete_path(self, location: str) -> bool:
        """Delete a superseded data directory through Hadoop's FileSystem API."""
        spark = self._session()
        return spark is not None and protocol.delete_path(spark, location)

    @available
    @driver_side
    def lakerank_table_location(self, relation) -> str:
        spark = self._session()
        if spark is None:
            return ""
        catalog = spark._jsparkSession.sharedState().externalCatalog()
        table = catalog.getTable(relation.schema, relation.identifier)
        return str(jvm_class(spark, "org.apache.hadoop.fs.Path")(table.location()).toString())

    @available
    @driver_side
    def lakerank_schema_location(self, schema: str) -> str:
        """The warehouse directory of ``schema`` (where its managed tables live)."""
        spark = self._session()
        if spark is None:
            return ""
        database = spark._jsparkSession.sharedState().externalCatalog().getDatabase(schema)
        return str(jvm_class(spark, "org.apache.hadoop.fs.Path")(database.locationUri()).toString())

    @available
    @driver_side
    def lakerank_table_exists(self, relation) -> bool:
        """Ask the metastore directly (dbt's relation cache misses tables written by macros)."""
        if self._nothing_to_introspect():
            return False
        spark = self._session()
        if spark is None:
            return self.get_relation(relation.database, relation.schema, relation.identifier) is not None
        catalog = spark._jsparkSession.sharedState().externalCatalog()
        return bool(catalog.tableExists(relation.schema, relation.identifier))

    @available
    @driver_side
    def lakerank_tables_info(self, relations, qualified: bool = False,
                             view_text: bool = False) -> Dict[str, Dict[str, Any]]:
        """``{identifier: {'exists', 'location', 'properties', 'view_text'}}`` for ``relations``
        (``view_text``: a view's SQL when asked for, one more round trip a view, else empty), read
        with one metastore call per schema (keyed ``schema.identifier`` when ``qualified``:
        two schemas holding one name). A commit reads its tables' existence, location and
        properties once, before anything changes, and asks again only for what it creates."""
        def key(schema: str, identifier: str) -> str:
            return f"{schema}.{identifier}" if qualified else identifier

        out: Dict[str, Dict[str, Any]] = {
            key(r.schema, r.identifier): {"exists": False, "location": "", "properties": {}, "view_text": ""}
            for r in relations
        }
        if self._nothing_to_introspect():
            return out
        spark = self._session()
        if spark is None:
            for r in relations:
                if self.lakerank_table_exists(r):
                    rows = self.execute(f"show tblproperties {r}", fetch=True)[1]
                    out[key(r.schema, r.identifier)].update(
                        exists=True, properties={str(k): str(v) for k, v in rows})
            return out
        catalog = spark._jsparkSession.sharedState().externalCatalog()
        path = jvm_class(spark, "org.apache.hadoop.fs.Path")
        for schema in sorted({r.schema for r in relations}):
            by_name = {r.identifier.lower(): r.identifier for r in relations if r.schema == schema}
            for name in by_name.values():  # a new commit: nothing listed before it is trusted
                protocol.forget((schema, name))
            found = catalog.getTablesByName(schema, scala_seq(spark, list(by_name))).iterator()
            while found.hasNext():
                table = found.next()
                name = by_name.get(str(table.identifier().table()).lower())
                if name is None:
                    continue
                # One round trip for the whole property map ("k -> v" entries; keys hold no " -> ").
                text = table.properties().mkString("\u0001", "\u0002", "\u0001").strip("\u0001")
                props = dict(item.split(" -> ", 1) for item in text.split("\u0002") if item)
                located = table.storage().locationUri().isDefined()  # a view has no location
                fence.observe(schema, name, props)
                out[key(schema, name)] = {
                    "exists": True, "location": str(path(table.location()).toString()) if located else "",
                    "properties": props, "view_text": _view_text(table) if view_text and not located else ""}
        return out

    @available
    @driver_side
    def lakerank_partition_exists(self, relation, column: str, value) -> bool:
        """Whether ``relation`` has partition ``column = value`` (one metastore lookup, no
        listing; ``True`` when it cannot tell, so callers fall back to their DDL)."""
        spark = self._session()
        if spark is None:
            return True
        catalog = spark._jsparkSession.sharedState().externalCatalog()
        if not catalog.tableExists(relation.schema, relation.identifier):
            return False
        empty = jvm_class(spark, "scala.collection.immutable.Map$").__getattr__("MODULE$").empty()
        spec = empty.updated(column, str(value))
        return bool(catalog.getPartitionOption(relation.schema, relation.identifier, spec).isDefined())

    # -- table properties (commit watermarks) through the metastore ----------------------
    @available
    @driver_side
    def lakerank_get_property(self, relation, key: str, default: str = "") -> str:
        """A table property (lakerank keeps commit watermarks there); ``default`` if absent."""
        if self._nothing_to_introspect():
            return default
        spark = self._session()
        if spark is None:
            if not self.lakerank_table_exists(relation):
                return default
            rows = self.execute(f"show tblproperties {relation}", fetch=True)[1]
            for row in rows:
                if row[0] == key:
                    return str(row[1])
            return default
        catalog = spark._jsparkSession.sharedState().externalCatalog()
        if not catalog.tableExists(relation.schema, relation.identifier):
            return default
        props = catalog.getTable(relation.schema, relation.identifier).properties()
        value = props.get(key)
        value = str(value.get()) if value.isDefined() else default
        if key == fence.COMMIT and value != default:
            fence.observe(relation.schema, relation.identifier, {key: value})
        return value

    # -- views and writes a commit stages (commits.py swaps them in) ------------------------
    @available
    @driver_side
    def lakerank_query_schema(self, view: str):
        """``[{"name", "type"}]`` of a table or temporary view (Spark simple type strings)."""
        spark = self._session()
        return [{"name": f.name, "type": f.dataType.simpleString()} for f in spark.table(view).schema.fields]

    @available
    @driver_side
    def lakerank_materialize_view(self, view: str) -> str:
        """Compute temporary view ``view`` once and re-register it as its rows.

        ``cache table`` keeps the view's plan: every later statement re-analyses the whole
        chain of SQL views below it (the model's SELECT each time) and matches it against
        the cache, seconds per statement. A local checkpoint cuts the lineage: the view
        becomes a leaf. Without an embedded session it falls back to ``cache table``.
        """
        spark = self._session()
        if spark is None:
            self.execute(f"cache table {view}")
        else:
            spark.table(view).localCheckpoint(eager=True).createOrReplaceTempView(view)
        return ""

    @available
    @driver_side
    def lakerank_drop_view(self, view: str) -> str:
        """Drop temporary view ``view``, first freeing the rows ``lakerank_materialize_view``
        kept for it. Dropping the view alone leaves its local checkpoint in the block manager
        until a JVM garbage collection reaches it: memory that grows with every run of a
        long-lived session, and persisted RDDs that vanish from the session at a time no one
        chose (a count of them taken around other work changes under it)."""
        spark = self._session()
        if spark is not None and spark.catalog.tableExists(view):
            release(spark.table(view))
        self.execute(f"drop view if exists {view}")
        return ""

    def _fs(self, location: str):
        spark = self._session()
        path = jvm_class(spark, "org.apache.hadoop.fs.Path")(location)
        return path, path.getFileSystem(spark._jsc.hadoopConfiguration())

    @available
    @driver_side
    def lakerank_existing_paths(self, locations) -> List[str]:
        """Those of ``locations`` that exist."""
        return [loc for loc in locations if loc and self._fs(loc)[1].exists(self._fs(loc)[0])]

    @available
    @driver_side
    def lakerank_path_bytes(self, locations) -> int:
        """Total bytes of the files under ``locations`` (what a commit wrote or keeps)."""
        total = 0
        for loc in locations:
            path, fs = self._fs(loc)
            if fs.exists(path):
                total += int(fs.getContentSummary(path).getLength())
        return total

    @available
    @driver_side
    def lakerank_write_dirs(self, sql: str, location: str, partition_by, like=None, fault: str = "") -> str:
        """Run ``sql`` and write its rows as parquet under ``location``, one Hive-style
        directory (``col=value/...``) per value of ``partition_by``, replacing whatever was
        there. No table and no metastore call: callers register the directories they keep
        (a CTAS or ``insert overwrite ... partition`` pays two to four metastore round trips
        per write, most of a small commit's time). With ``like`` (a table), the columns are
        cast to that table's columns of the same name (by position, as an insert would, when
        some name is not the table's): a log table that gained columns (``on_schema_change``)
        keeps its partition column last, so the new columns follow ``_commit_time``.

        ``fault`` (test hook, ``lakerank_fault: "write:<part>"``): when ``location`` contains
        ``<part>``, the write fails as a full disk would, after leaving a torn parquet file."""
        from pyspark.sql import functions as F

        logger.debug(f"lakerank: writing {location} (partitioned by {list(partition_by)}):\n{sql}")
        spark = self._session()
        df = spark.sql(sql)
        if like is not None:
            fields = spark.table(f"{like.schema}.{like.identifier}").schema.fields
            named = {f.name.lower(): f for f in fields}
            pairs = (
                [(c, named[c.lower()]) for c in df.columns]
                if all(c.lower() in named for c in df.columns)
                else list(zip(df.columns, fields))
            )
            df = df.select([F.col(f"`{c}`").cast(f.dataType).alias(f.name) for c, f in pairs])
        writer = df.write.mode("overwrite")
        if partition_by:
            writer = writer.partitionBy(*partition_by)
        writer.parquet(location)
        return self.lakerank_write_fault(location, fault)

    @available
    @driver_side
    def lakerank_write_fault(self, location: str, fault: str = "") -> str:
        """Test hook (``lakerank_fault: "write:<part>"``) after a write to ``location``: when
        ``location`` contains ``<part>``, fail as a full disk would, after leaving a torn
        parquet file there. Otherwise nothing."""
        if fault.startswith("write:"):
            try:
                inject_full_disk(location, fault.split(":", 1)[1], f"lakerank_fault {fault!r}")
            except OSError as exc:
                raise DbtRuntimeError(str(exc)) from exc
        return ""


def _view_text(table) -> str:
    """A catalog table's view text (one round trip), empty for a table."""
    text = table.viewText()
    return str(text.get()) if text.isDefined() else ""
