"""The Jinja surface of lakerank's commit protocol (:mod:`python_udfs.commit.protocol`): one
adapter method per phase, each running on the driver (here, or `lakerank serve`'s on the
connect target). Stage is the materialization's own write (``lakerank_write_dirs`` or an
``insert overwrite directory`` into ``lakerank_lib.stage_dir(...)``) and record its own
``ALTER ... SET TBLPROPERTIES`` (``lakerank_lib.record_commit``)."""

from __future__ import annotations

from typing import Any, Dict, List

from dbt.adapters.base import available
from dbt.adapters.base.meta import AdapterMeta
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.lakerank import fence
from dbt.adapters.lakerank.remote import driver_side
from python_udfs.commit import lease, protocol


def _table(relation):
    return (relation.schema, relation.identifier)


def _unless_fenced(target, call):
    """``call()``; a lost lease or a live writer's intent (the shared catalog: docs/deployment.md,
    "Several writers") as a dbt error that says the table is untouched."""
    try:
        return call()
    except (lease.FencedError, lease.LeaseLostError) as exc:
        raise DbtRuntimeError(f"{exc}; {target} is left as it is") from None


class CommitMixin(metaclass=AdapterMeta):
    @available
    @driver_side
    def lakerank_commit_begin(self, target, recorded: int, logs=(), root: str = "") -> Dict[str, str]:
        """Recovery, before a commit of ``target`` whose last recorded commit is ``recorded``:
        finish or roll back a dead run's intent, drop partitions ``recorded + 1`` of the log
        tables ``logs`` (``[[relation, column], ...]``), sweep dead attempts under
        ``<root>/_v`` (root: the table's location). ``{'done': what it did ('' if nothing),
        'root': root, 'writer': fence.writer()}`` (the stage suffix and fencing of this writer)."""
        spark = self._session()
        root = root or protocol.table_location(spark, _table(target))
        logs = [(_table(rel), col) for rel, col in logs]
        done = _unless_fenced(target, lambda: protocol.recover(spark, _table(target), int(recorded), logs, root))
        return {"done": f"{target}: {done}" if done else "", "root": root, "writer": fence.writer()}

    @available
    @driver_side
    def lakerank_commit_intent(self, target, commit_id: int, stage: str, depth: int, touched) -> Dict[str, Any]:
        """Plan the swap of ``touched`` partitions to the directories staged under ``stage``
        (``depth`` partition levels) and write it as the commit's intent."""
        spark = self._session()
        try:
            plan = protocol.plan_partitions(spark, _table(target), commit_id, stage, depth, touched)
        except ValueError as exc:
            raise DbtRuntimeError(str(exc)) from None
        protocol.write_intent(spark, _table(target), plan)
        return plan

    @available
    @driver_side
    def lakerank_commit_swap(self, target, plan) -> Dict[str, int]:
        """Point ``target`` at the plan's directories (partitions replaced, created, dropped;
        ``relocate`` of the table), one metastore call per kind of change."""
        return _unless_fenced(target, lambda: protocol.swap(self._session(), _table(target), plan))

    @available
    @driver_side
    def lakerank_commit_finish(self, target, plan, keep: List[str] = ()) -> int:
        """After the record: delete what the commit superseded, its intent, and every dead
        attempt under the plan's root (``keep``: directories to leave). Returns how many
        directories the sweep deleted."""
        return protocol.finish(self._session(), _table(target), plan, keep)

    @available
    def lakerank_stage_suffix(self) -> str:
        """What this writer's stage directories end with: ``-<writer id>`` while it holds the
        shared catalog's lease (sweep and recovery tell live writers' stages by it), else ''."""
        return lease.stage_suffix()

    @available
    def lakerank_fenced(self) -> bool:
        """Whether a commit's record is fenced (:func:`fence.record`): this build holds the
        shared catalog's lease."""
        return fence.fenced()

    @available
    def lakerank_record_fenced(self, target, properties: Dict[str, Any]) -> str:
        """The record step on the shared catalog: ``properties`` set on ``target`` only while
        its recorded commit is the one this build read before its commit."""
        fence.record(self._session(), target, {str(k): str(v) for k, v in properties.items()})
        return ""
