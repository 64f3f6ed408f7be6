"""lakerank's one commit protocol: stage → intent → swap → record → finish, and the recovery
of a run that died between any two of them, in one place.

Every write that readers must see whole goes through it: a pk_table commit (its (partition,
bucket) directories and its log partitions), a merge_on_read commit (its audit-log
partition) and compaction (its base), a publication, the ingests' partitions.

1. **stage**: the caller writes new directories under ``<table root>/_v/<kind><commit>_<run>``
   (:func:`stage_dir`; in Jinja its twin, the macro ``lakerank_lib.stage_dir``), so a rerun
   never writes into a dead attempt's files. Kinds: ``c`` a merge-on-read commit, ``b`` a
   base, ``p`` a publication, ``r`` a whole-table rewrite, ``i`` an ingest's partition.
   Nothing points at them yet: a kill here leaves garbage, no change.
2. **intent**: when the swap takes more than one metastore call (pk_table: replaced,
   created and dropped partitions), the plan is written to ``<table root>/_lakerank/
   intent.json`` first (:func:`write_intent`). A swap of one call needs none.
3. **swap**: the metastore is pointed at the new directories (:func:`swap`; a plan's
   ``replace`` / ``create`` / ``drop`` of partitions, ``relocate`` of the table itself),
   one external-catalog call per kind of change.
4. **record**: the table's property says which commit it holds (``lakerank.commit_id``, a
   pk_table's ``lakerank.snapshot_id``): one ``ALTER ... SET TBLPROPERTIES``, a SQL
   statement the materialization runs (``lakerank_lib.record_commit``).
5. **finish**: the directories the commit superseded are deleted, the intent removed, and
   every ``_v/`` directory nothing points into swept (:func:`finish`).

**Recovery** (:func:`recover`, the first thing a commit does): an intent at or below the
recorded commit is finished; one above it is rolled back (each partition pointed back at its
old directory, the new ones deleted); partitions ``recorded + 1`` of the table's log tables
are dropped; the dead attempts' directories are swept. A swap of one call is its own commit
point where the caller says so (merge_on_read's audit partition, a publication, an ingest
partition): the rerun finds the partition and only records it.

The functions take a SparkSession with a JVM (the embedded target, or the `lakerank serve`
driver) and a table as ``(database, name)``; the adapter's ``lakerank_commit_*`` methods
(``dbt.adapters.lakerank.commits``) are their Jinja surface.
"""

from __future__ import annotations

import json
from typing import Any, Dict, Iterable, List, Optional, Tuple

from python_udfs.commit import lease
from python_udfs.jvm import (
    external_catalog,
    jvm_class,
    moved_partition,
    new_partition,
    partition_spec,
    point_partition,
    scala_items,
    scala_seq,
)

Table = Tuple[str, str]

# One pk_table commit lists its table's partitions once: `recover` keeps the listing, the plan
# and the swap use it (nothing else changes them in between), `finish` sweeps with the locations
# the swap left; `forget` (at the start of every commit) drops both.
_LISTINGS: Dict[str, Dict[str, Any]] = {}
_SWAPPED: Dict[str, Tuple[int, List[str]]] = {}


def _key(table: Table) -> str:
    return f"{table[0]}.{table[1]}".lower()


def forget(table: Table) -> None:
    """Drop what this process remembers of ``table``'s partitions (a new commit starts)."""
    _LISTINGS.pop(_key(table), None)
    _SWAPPED.pop(_key(table), None)


def _fs(spark, location: str):
    path = jvm_class(spark, "org.apache.hadoop.fs.Path")(location)
    return path, path.getFileSystem(spark._jsc.hadoopConfiguration())


def path_bytes(spark, location: str) -> int:
    """The bytes of the files under ``location``."""
    path, fs = _fs(spark, location)
    return int(fs.getContentSummary(path).getLength())


def _qualified(spark, location: str) -> str:
    return str(jvm_class(spark, "org.apache.hadoop.fs.Path")(location).toString())


def table_location(spark, table: Table) -> str:
    return _qualified(spark, external_catalog(spark).getTable(*table).location())


def partitions(spark, table: Table) -> Dict[str, Tuple[Any, str]]:
    """``{"c=v/...": (CatalogTablePartition, location)}`` of ``table``."""
    out = {}
    none = jvm_class(spark, "scala.Option").empty()
    for part in scala_items(external_catalog(spark).listPartitions(table[0], table[1], none)):
        spec = part.spec()
        items = [f"{k}={spec.apply(k)}" for k in scala_items(spec.keys())]
        out["/".join(items)] = (part, _qualified(spark, part.location()))
    return out


def _listing(spark, table: Table) -> Dict[str, Tuple[Any, str]]:
    listing = _LISTINGS.get(_key(table))
    return listing if listing is not None else partitions(spark, table)


# -- 1. stage ------------------------------------------------------------------------------

def _dir_partitions(spark, location: str, depth: int) -> Dict[str, str]:
    """``{"c=v/_bucket=n": path}`` for the partition directories ``depth`` levels under
    ``location`` (names unescaped, as the metastore spells partition values)."""
    unescape = jvm_class(spark, "org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils").unescapePathName
    _path, fs = _fs(spark, location)
    found = fs.globStatus(jvm_class(spark, "org.apache.hadoop.fs.Path")(location.rstrip("/") + "/*" * depth)) or []
    out = {}
    for status in found:
        leaf, names = status.getPath(), []
        for _ in range(depth):
            names.append(unescape(leaf.getName()))
            leaf = leaf.getParent()
        if status.isDirectory() and all("=" in n for n in names):
            out["/".join(reversed(names))] = str(status.getPath().toString())
    return out


# -- 2. intent -----------------------------------------------------------------------------

def _intent_path(spark, table: Table) -> str:
    return table_location(spark, table) + "/_lakerank/intent.json"


def plan_partitions(spark, table: Table, commit_id: int, stage: str, depth: int, touched: Iterable[str]):
    """The swap of the ``touched`` partitions (``"c=v/_bucket=n"``) of ``table`` to the
    directories staged under ``stage``: replaced, created (staged, not yet a partition) and
    dropped (a partition, nothing staged)."""
    old = _listing(spark, table)
    new = _dir_partitions(spark, stage, depth)
    touched = [str(t) for t in touched]
    stray = sorted(set(new) - set(touched))
    if stray:
        raise ValueError(f"{table[0]}.{table[1]} staged partitions it did not declare: {stray[:5]}")
    return {
        "commit_id": int(commit_id),
        # the table's root (the stage is <root>/_v/c<attempt>): `finish` sweeps <root>/_v
        # without asking the metastore
        "location": stage.rsplit("/_v/", 1)[0] if "/_v/" in stage else "",
        "replace": [[t, old[t][1], new[t]] for t in touched if t in old and t in new],
        "create": [[t, new[t]] for t in touched if t in new and t not in old],
        "drop": [[t, old[t][1]] for t in touched if t in old and t not in new],
    }


def write_intent(spark, table: Table, plan: Dict[str, Any]) -> None:
    """Write ``plan`` as ``table``'s intent (marked ``intent``: its ``finish`` removes it)."""
    plan["intent"] = True
    if lease.held() is not None:
        plan["writer"] = lease.WRITER  # recovery leaves a live writer's intent alone
    write_json(spark, _intent_path(spark, table), plan)


def read_intent(spark, table: Table) -> Optional[Dict[str, Any]]:
    return read_json(spark, _intent_path(spark, table))


def write_json(spark, location: str, value: Any) -> None:
    """``value`` as JSON in the file ``location`` (replaced if it exists)."""
    path, fs = _fs(spark, location)
    out = fs.create(path, True)
    try:
        out.write(bytearray(json.dumps(value).encode("utf-8")))
    finally:
        out.close()


def read_json(spark, location: str) -> Any:
    """The JSON value in the file ``location``; None when there is no such file (or it is empty)."""
    path, fs = _fs(spark, location)
    if not fs.exists(path):
        return None
    stream = fs.open(path)
    try:
        text_in = jvm_class(spark, "java.io.InputStreamReader")(stream, "UTF-8")
        reader = jvm_class(spark, "java.io.BufferedReader")(text_in)
        text = "".join(iter(lambda: reader.readLine() or "", ""))
    finally:
        stream.close()
    return json.loads(text) if text else None


def clear_intent(spark, table: Table) -> None:
    path, fs = _fs(spark, _intent_path(spark, table))
    fs.delete(path, False)


# -- 3. swap -------------------------------------------------------------------------------

def swap(spark, table: Table, plan: Dict[str, Any]) -> Dict[str, int]:
    """Point ``table`` at a plan's directories: partitions replaced, created (a partition
    that exists already is re-pointed: a replayed commit replaces its files) and dropped, one
    metastore call per kind; ``relocate: [old, new]`` re-points the table itself."""
    lease.confirm(spark)  # a writer whose lease was lost swaps nothing
    catalog = external_catalog(spark)
    db, name = table
    replace, create, drop = plan.get("replace", []), plan.get("create", []), plan.get("drop", [])
    if len(create) == 1 and not replace and not drop and _key(table) not in _LISTINGS:
        (spec, location), = create  # one partition: no listing needed
        previous = point_partition(spark, db, name, spec, location)
        _undo_if_lost(spark, table, spec, previous)
    elif replace or create or drop:
        old = _listing(spark, table)
        _LISTINGS.pop(_key(table), None)
        replace = replace + [[t, old[t][1], n] for t, n in create if t in old]
        create = [[t, n] for t, n in create if t not in old]
        if replace:
            catalog.alterPartitions(db, name, scala_seq(spark, (moved_partition(spark, old[t][0], n)
                                                                for t, _o, n in replace)))
        if create:
            storage = catalog.getTable(db, name).storage()
            catalog.createPartitions(db, name, scala_seq(spark, (new_partition(spark, t, n, storage)
                                                                 for t, n in create)), True)
        if drop:
            catalog.dropPartitions(db, name, scala_seq(spark, (old[t][0].spec() for t, _o in drop if t in old)),
                                   True, False, True)
        live = {t: loc for t, (_part, loc) in old.items()}
        live.update({t: n for t, _o, n in replace})
        live.update({t: n for t, n in create})
        for t, _o in drop:
            live.pop(t, None)
        _SWAPPED[_key(table)] = (int(plan.get("commit_id", -1)), sorted(live.values()))
    if plan.get("relocate"):
        spark.sql(f"alter table `{db}`.`{name}` set location '{plan['relocate'][1]}'")
    spark.catalog.refreshTable(f"`{db}`.`{name}`")
    return {"replaced": len(replace), "created": len(create), "dropped": len(drop)}


def _undo_if_lost(spark, table: Table, spec: str, previous: Optional[str]) -> None:
    """After a one-partition swap, confirm the lease again: a writer paused between its
    confirm and its swap (a stopped process whose JVM finished the metastore call it was in)
    may have lost the lease meanwhile, and its swap then re-pointed a partition the new
    holder committed to a stage that holder swept. Such a swap is put back (the partition
    re-pointed to ``previous``) before the loss is raised. A partition that did not exist is
    left: if the new holder had created it first, the create was a no-op; if not, the new
    holder's own swap re-points it. Nothing on an embedded home (no lease)."""
    try:
        lease.confirm(spark)
    except lease.LeaseLostError:
        if previous is not None:
            point_partition(spark, table[0], table[1], spec, previous)
        raise


def rollback(spark, table: Table, plan: Dict[str, Any]) -> None:
    """Undo a (possibly partial) swap: every touched partition points at its location from
    before the commit again, and the dead attempt's directories are deleted."""
    current = partitions(spark, table)
    catalog = external_catalog(spark)
    db, name = table
    storage = catalog.getTable(db, name).storage()
    back = [[t, o] for t, o, _n in plan.get("replace", [])] + [[t, o] for t, o in plan.get("drop", [])]
    moved = [moved_partition(spark, current[t][0], o) for t, o in back if t in current]
    added = [new_partition(spark, t, o, storage) for t, o in back if t not in current]
    if moved:
        catalog.alterPartitions(db, name, scala_seq(spark, moved))
    if added:
        catalog.createPartitions(db, name, scala_seq(spark, added), True)
    gone = [current[t][0].spec() for t, _n in plan.get("create", []) if t in current]
    if gone:
        catalog.dropPartitions(db, name, scala_seq(spark, gone), True, False, True)
    for item in plan.get("replace", []) + plan.get("create", []):
        delete_path(spark, item[-1])
    spark.catalog.refreshTable(f"`{db}`.`{name}`")


def stage_dir(root: str, kind: str, commit_id, attempt: str) -> str:
    """Where attempt ``attempt`` of commit ``commit_id`` stages under a table's ``root``."""
    return f"{root}/_v/{kind}{commit_id}_{attempt}{lease.stage_suffix()}"


# -- 5. finish -----------------------------------------------------------------------------

def finish(spark, table: Table, plan: Dict[str, Any], keep: Iterable[str] = ()) -> int:
    """After the commit is recorded: delete the directories it superseded, then its intent,
    then every ``_v/`` directory of the table's root that no partition (nor the table, nor
    ``keep``) points into. Returns how many directories the sweep deleted."""
    for item in plan.get("replace", []) + plan.get("drop", []):
        if "/_v/" in item[1]:
            delete_path(spark, item[1])
    if plan.get("intent"):
        clear_intent(spark, table)
    swapped = _SWAPPED.pop(_key(table), None)
    live = swapped[1] if swapped and swapped[0] == int(plan.get("commit_id", -1)) else None
    return sweep(spark, table, plan.get("location", ""), live, keep)


def sweep(spark, table: Table, root: str = "", live: Optional[List[str]] = None, keep: Iterable[str] = (),
          prefix: str = "") -> int:
    """Delete the directories under ``<root>/_v`` (root: the table's location by default)
    that no partition, nor the table itself, nor ``keep`` points into: attempts that died
    before their swap. ``live``: the partitions' locations if known, else the partitions
    are listed, and that listing serves the commit's swap. ``prefix``: only the directories
    whose name starts with it (one commit's attempts: ``live`` then need only hold that
    commit's). Returns how many it deleted. Commits on a home are serialised by its build
    lock: no live attempt writes there. On the shared catalog the lease serialises them, and
    a directory of the lease's current holder, when that is another writer, is left alone
    (:func:`lease.live_other`)."""
    catalog = external_catalog(spark)
    meta = catalog.getTable(*table)
    root = (root or _qualified(spark, meta.location())).rstrip("/") + "/_v"
    path, fs = _fs(spark, root)
    if not fs.exists(path):  # nothing was ever staged here: no listing to take
        return 0
    if live is None and meta.partitionColumnNames().isEmpty():
        live = []
    elif live is None:
        listing = partitions(spark, table)
        _LISTINGS[_key(table)] = listing
        live = [loc for _part, loc in listing.values()]
    hadoop_path = jvm_class(spark, "org.apache.hadoop.fs.Path")
    live = [str(fs.makeQualified(hadoop_path(p)).toString()).rstrip("/")
            for p in [*live, _qualified(spark, meta.location()), *keep] if p]
    deleted = 0
    alive = lease.live_other(spark)
    for status in fs.listStatus(path):
        loc, name = str(status.getPath().toString()), status.getPath().getName()
        if alive(lease.writer_of(name)):
            continue
        if name.startswith(prefix) and not any(p == loc or p.startswith(loc + "/") for p in live):
            deleted += int(_delete(fs, status.getPath()))
    return deleted


def delete_path(spark, location: str) -> bool:
    if not location:
        return False
    path, fs = _fs(spark, location)
    return _delete(fs, path)


def _delete(fs, path) -> bool:
    """Delete ``path`` and everything under it; whether there was anything to delete.

    An object store may keep listing a folder that a recursive delete cannot remove: s3proxy's
    `filesystem` backend keeps an empty folder on disk (e.g. the `_temporary/0` of a write
    whose clean-up deleted the folder's marker before its files) and lists it as a prefix,
    while S3A finds no object under it to delete. Spark then refuses to create a table there
    (LOCATION_ALREADY_EXISTS). Such a folder is made an object first (S3A's `mkdirs` puts its
    marker), which the second delete removes. A local file system never gets here."""
    deleted = bool(fs.delete(path, True))
    if deleted and fs.getScheme() != "file" and fs.exists(path):
        _mark_folders(fs, path)
        fs.delete(path, True)
    return deleted


def _mark_folders(fs, path) -> None:
    for status in fs.listStatus(path):
        if status.isDirectory():
            fs.mkdirs(status.getPath())
            _mark_folders(fs, status.getPath())


# -- recovery ------------------------------------------------------------------------------

def recover(spark, table: Table, recorded: int, logs: Iterable[Tuple[Table, str]] = (), root: str = "") -> str:
    """Bring ``table`` back to its last recorded commit ``recorded``: an intent at or below
    it is finished, one above it rolled back; partitions ``recorded + 1`` of ``logs``
    (``[(table, column)]``: log tables written before the swap) dropped; dead attempts swept.
    Says what it did ('' when there was nothing to recover). On the shared catalog a writer
    whose lease was lost recovers nothing, and the intent of a live writer is not touched."""
    forget(table)
    lease.confirm(spark)
    done = []
    intent = read_intent(spark, table)
    if intent is not None and lease.live_other(spark)(intent.get("writer")):
        raise lease.FencedError(f"{table[0]}.{table[1]}: commit {intent['commit_id']} is in flight by writer "
                                f"{intent['writer']}, which holds the shared catalog's build lease; not touched")
    if intent is not None:
        if intent["commit_id"] <= recorded:
            finish(spark, table, intent)
            done.append(f"finished recorded commit {intent['commit_id']}")
        else:
            rollback(spark, table, intent)
            clear_intent(spark, table)
            done.append(f"rolled back unfinished commit {intent['commit_id']}")
    catalog = external_catalog(spark)
    dead = recorded + 1
    for log, column in logs:
        spec = partition_spec(spark, f"{column}={dead}")
        if catalog.getPartitionOption(log[0], log[1], spec).isDefined():
            catalog.dropPartitions(log[0], log[1], scala_seq(spark, [spec]), True, False, True)
            spark.catalog.refreshTable(f"`{log[0]}`.`{log[1]}`")
            done.append(f"dropped {log[1]} partition {column} = {dead}")
    deleted = sweep(spark, table, root)
    if deleted:
        done.append(f"deleted {deleted} dead version directories")
    return "; ".join(done)

