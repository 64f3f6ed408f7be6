"""``dbt snapshot`` (dbt-tests-adapter ``simple_snapshot``) on lakerank's parquet tables: each
snapshot run writes the table's next version and points the table at it in one metastore
call, so a reader (or a killed run) never sees half of one (docs/dbt_on_lakerank.md)."""

from dbt.tests.adapter.simple_snapshot.test_snapshot import BaseSimpleSnapshot, BaseSnapshotCheck


class TestSnapshot(BaseSimpleSnapshot):
    pass


class TestSnapshotCheck(BaseSnapshotCheck):
    pass
