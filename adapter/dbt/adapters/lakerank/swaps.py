"""The partition-swap commit protocol of the lakerank adapter: a commit writes new directories,
records its swap plan as an intent file, re-points the partitions (one metastore call per kind
of change), and finishes (deletes what it superseded) only after the commit is recorded; a run
that died part-way is rolled back from the intent (lakerank_lib's pk_table/recover.sql)."""

from __future__ import annotations

import json
from typing import Any, Dict

from dbt.adapters.base import available
from dbt.adapters.base.meta import AdapterMeta
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.lakerank.remote import driver_side
from python_udfs.jvm import jvm_class, moved_partition, new_partition, scala_seq


class SwapMixin(metaclass=AdapterMeta):
    # One pk_table commit lists its table's partitions once: lakerank_drop_dead_stages at its
    # start keeps the listing, the swap plans and applies from it (nothing else changes the
    # table's partitions in between), and the sweep after the commit uses the locations the
    # swap left (apply_swap). lakerank_tables_info, the first call of every commit, forgets
    # both (_forget_listing), so a listing never outlives its commit.
    def _intent_path(self, target) -> str:
        return self.lakerank_table_location(target) + "/_lakerank/intent.json"

    @available
    @driver_side
    def lakerank_recover(self, target, snapshot_id: int, logs, location: str = "") -> str:
        """Crash recovery of a pk_table, in one place, before its next commit: bring
        ``target`` back to its last recorded commit ``snapshot_id`` and sweep what a dead
        attempt left. A commit whose intent is at or below the record is finished (its
        superseded directories deleted); one above it is rolled back partition by partition.
        Then the partitions ``snapshot_id + 1`` of the existing log tables ``logs``
        (``[[relation, column], ...]``: audit, state and snapshot logs) are dropped, and the
        version directories under ``_v/`` that no partition points into. Returns what it did
        (empty when there was nothing to recover)."""
        done = []
        intent = self.lakerank_read_intent(target)
        if intent is not None:
            if intent["commit_id"] <= snapshot_id:
                self.lakerank_finish_swap(target, intent)
                done.append(f"finished recorded commit {intent['commit_id']}")
            else:
                self.lakerank_rollback_swap(target, intent)
                self.lakerank_clear_intent(target)
                done.append(f"rolled back unfinished commit {intent['commit_id']}")
        dead = snapshot_id + 1
        for relation, column in logs:
            if self.lakerank_partition_exists(relation, column, dead):
                self._session().sql(f"alter table {relation} drop if exists partition ({column} = {dead})")
                done.append(f"dropped {relation.identifier} partition {column} = {dead}")
        deleted = self.lakerank_drop_dead_stages(target, location)
        if deleted:
            done.append(f"deleted {deleted} dead version directories")
        return f"pk_table {target}: " + "; ".join(done) if done else ""

    @available
    @driver_side
    def lakerank_read_intent(self, target):
        """The unfinished commit's swap plan of ``target`` (None when there is none)."""
        spark = self._session()
        path, fs = self._fs(self._intent_path(target))
        if not fs.exists(path):
            return None
        stream = fs.open(path)
        try:
            reader = jvm_class(spark, "java.io.BufferedReader")(
                jvm_class(spark, "java.io.InputStreamReader")(stream, "UTF-8")
            )
            text = "".join(iter(lambda: reader.readLine() or "", ""))
        finally:
            stream.close()
        return json.loads(text) if text else None

    @available
    @driver_side
    def lakerank_clear_intent(self, target) -> str:
        path, fs = self._fs(self._intent_path(target))
        fs.delete(path, False)
        return ""

    def _dir_partitions(self, location: str, depth: int) -> Dict[str, str]:
        """``{"c=v/_bucket=n": path}`` for the partition directories ``depth`` levels under
        ``location`` (names unescaped, as the metastore spells partition values)."""
        spark = self._session()
        unescape = jvm_class(spark, "org.apache.spark.sql.catalyst.catalog.ExternalCatalogUtils").unescapePathName
        _path, fs = self._fs(location)
        found = fs.globStatus(jvm_class(spark, "org.apache.hadoop.fs.Path")(location.rstrip("/") + "/*" * depth)) or []
        out = {}
        for status in found:
            if not status.isDirectory():
                continue
            leaf = status.getPath()
            names = []
            for _ in range(depth):
                names.append(unescape(leaf.getName()))
                leaf = leaf.getParent()
            if all("=" in n for n in names):
                out["/".join(reversed(names))] = str(status.getPath().toString())
        return out

    @available
    @driver_side
    def lakerank_plan_swap(self, target, stage_location: str, partition_depth: int, touched, commit_id: int):
        """Plan the swap of ``touched`` partitions (``"c=v/_bucket=n"`` strings) of ``target``
        to the directories written under ``stage_location`` and write it as the commit's
        intent file, before anything is re-pointed: a run that dies part-way is rolled back
        from it."""
        old = self._listing(target)
        new = self._dir_partitions(stage_location, partition_depth)
        touched = [str(t) for t in touched]
        stray = sorted(set(new) - set(touched))
        if stray:
            raise DbtRuntimeError(f"{target} staged partitions it did not declare: {stray[:5]}")
        plan = {
            "commit_id": int(commit_id),
            # the table's location (the stage is <location>/_v/c<commit>_<run>): the sweep after
            # the commit lists <location>/_v without asking the metastore
            "location": stage_location.rsplit("/_v/", 1)[0] if "/_v/" in stage_location else "",
            "replace": [[t, old[t][1], new[t]] for t in touched if t in old and t in new],
            "create": [[t, new[t]] for t in touched if t in new and t not in old],
            "drop": [[t, old[t][1]] for t in touched if t in old and t not in new],
        }
        path, fs = self._fs(self._intent_path(target))
        out = fs.create(path, True)
        try:
            out.write(bytearray(json.dumps(plan).encode("utf-8")))
        finally:
            out.close()
        return plan

    # (Was four listings per commit: JFR, ~4 % of the JVM in the Paimon vectors.)
    _listings: Dict[str, Dict[str, Any]] = {}

    _swapped: Dict[str, Any] = {}

    @staticmethod
    def _listing_key(relation) -> str:
        return f"{relation.schema}.{relation.identifier}".lower()

    def _listing(self, relation):
        listing = SwapMixin._listings.get(self._listing_key(relation))
        return listing if listing is not None else self._partitions(relation)

    @available
    @driver_side
    def lakerank_apply_swap(self, target, plan) -> Dict[str, int]:
        """Re-point ``target``'s partitions per ``plan``: one metastore call each for the
        replaced, created and dropped partitions."""
        spark = self._session()
        catalog = spark._jsparkSession.sharedState().externalCatalog()
        key = self._listing_key(target)
        old = self._listing(target)
        SwapMixin._listings.pop(key, None)

        def repointed(t, location):
            return moved_partition(spark, old[t][0], location)

        if plan["replace"]:
            catalog.alterPartitions(target.schema, target.identifier,
                                    scala_seq(spark, (repointed(t, n) for t, _o, n in plan["replace"])))
        if plan["create"]:
            storage = catalog.getTable(target.schema, target.identifier).storage()
            catalog.createPartitions(target.schema, target.identifier,
                                     scala_seq(spark, (new_partition(spark, t, n, storage)
                                                       for t, n in plan["create"])), True)
        if plan["drop"]:
            catalog.dropPartitions(
                target.schema, target.identifier,
                scala_seq(spark, (old[t][0].spec() for t, _o in plan["drop"] if t in old)), True, False, True,
            )
        spark.catalog.refreshTable(f"{target.schema}.{target.identifier}")
        live = {t: loc for t, (_part, loc) in old.items()}
        live.update({t: n for t, _o, n in plan["replace"]})
        live.update({t: n for t, n in plan["create"]})
        for t, _o in plan["drop"]:
            live.pop(t, None)
        SwapMixin._swapped[key] = (int(plan["commit_id"]), sorted(live.values()))
        return {"replaced": len(plan["replace"]), "created": len(plan["create"]), "dropped": len(plan["drop"])}

    @available
    @driver_side
    def lakerank_rollback_swap(self, target, plan) -> str:
        """Undo a (possibly partial) swap: every touched partition points at its location
        from before the commit again, and the dead attempt's directories are deleted."""
        spark = self._session()
        current = self._partitions(target)

        def spec_sql(t):
            return ", ".join(
                f"{k} = '{v}'" for k, v in (item.split("=", 1) for item in t.split("/"))
            )

        name = f"{target.schema}.{target.identifier}"
        for t, old_loc, new_loc in plan["replace"]:
            spark.sql(f"alter table {name} partition ({spec_sql(t)}) set location '{old_loc}'")
            self.lakerank_delete_path(new_loc)
        for t, new_loc in plan["create"]:
            if t in current:
                spark.sql(f"alter table {name} drop if exists partition ({spec_sql(t)})")
            self.lakerank_delete_path(new_loc)
        for t, old_loc in plan["drop"]:
            spark.sql(f"alter table {name} add if not exists partition ({spec_sql(t)}) location '{old_loc}'")
        spark.catalog.refreshTable(name)
        return ""

    @available
    @driver_side
    def lakerank_finish_swap(self, target, plan) -> str:
        """After the commit is recorded: delete superseded directories, then the intent,
        then every version directory no partition points into any more (a stage whose every
        partition this commit superseded was left empty: found by scripts/soak.py)."""
        for item in plan["replace"] + plan["drop"]:
            old_loc = item[1]
            if "/_v/" in old_loc:
                self.lakerank_delete_path(old_loc)
        self.lakerank_clear_intent(target)
        swapped = SwapMixin._swapped.pop(self._listing_key(target), None)
        live = swapped[1] if swapped and swapped[0] == int(plan["commit_id"]) else None
        self.lakerank_drop_dead_stages(target, plan.get("location", ""), live)
        return ""

    @available
    @driver_side
    def lakerank_drop_dead_stages(self, target, location: str = "", live=None) -> int:
        """Delete the version directories under ``target``'s ``_v/`` that no partition points
        into: stages of runs that died before their swap (call after recovery, when no
        intent is pending). Returns how many were deleted. ``live``: the partitions'
        locations if known (after this process's swap), else the partitions are listed, and
        that listing serves the commit's swap (``_listing``)."""
        root = (location or self.lakerank_table_location(target)) + "/_v"
        path, fs = self._fs(root)
        if live is None:
            listing = self._partitions(target)
            SwapMixin._listings[self._listing_key(target)] = listing
            live = [loc for _part, loc in listing.values()]
        if not fs.exists(path):
            return 0
        deleted = 0
        for status in fs.listStatus(path):
            loc = str(status.getPath().toString())
            if not any(p == loc or p.startswith(loc + "/") for p in live):
                deleted += int(bool(fs.delete(status.getPath(), True)))
        return deleted

    def _forget_listing(self, relation) -> None:
        SwapMixin._listings.pop(self._listing_key(relation), None)
        SwapMixin._swapped.pop(self._listing_key(relation), None)
