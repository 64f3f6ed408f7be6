"""dbt's ``incremental`` strategies and ``on_schema_change`` (dbt-tests-adapter
``incremental``) on lakerank's parquet tables: ``merge`` and ``delete+insert`` rewrite the
table into a new version and point the table at it (docs/dbt_on_lakerank.md)."""

import re

import pytest
from dbt.tests.adapter.incremental import test_incremental_unique_id as unique_id
from dbt.tests.adapter.incremental.test_incremental_merge_exclude_columns import BaseMergeExcludeColumns
from dbt.tests.adapter.incremental.test_incremental_microbatch import BaseMicrobatch
from dbt.tests.adapter.incremental.test_incremental_on_schema_change import BaseIncrementalOnSchemaChange
from dbt.tests.adapter.incremental.test_incremental_predicates import BaseIncrementalPredicates
from dbt.tests.adapter.incremental.test_incremental_unique_id import BaseIncrementalUniqueKey

# dbt-spark's own model for the merge predicates (its ids are bigint, as a seed's are)
_MERGE_PREDICATES_SQL = """
{{ config(materialized = 'incremental', unique_key = 'id') }}
{% if not is_incremental() %}
select cast(1 as bigint) as id, 'hello' as msg, 'blue' as color
union all
select cast(2 as bigint) as id, 'goodbye' as msg, 'red' as color
{% else %}
select cast(1 as bigint) as id, 'hey' as msg, 'blue' as color
union all
select cast(2 as bigint) as id, 'yo' as msg, 'green' as color
union all
select cast(3 as bigint) as id, 'anyway' as msg, 'purple' as color
{% endif %}
"""

# dbt-spark's microbatch model: partitioned by day (the strategy overwrites a batch's partitions)
_MICROBATCH_PARTITIONED_SQL = """
{{ config(materialized='incremental', incremental_strategy='microbatch', event_time='event_time',
          batch_size='day', begin=modules.datetime.datetime(2020, 1, 1, 0, 0, 0), partition_by=['date_day'],
          file_format='parquet') }}
select *, cast(event_time as date) as date_day
from {{ ref('input_model') }}
"""


class _SparkSqlInserts:
    """The unique-key tests' insert statements in Spark SQL: a date column takes a date
    literal (Spark's ANSI store assignment refuses a string; Postgres types the quoted value
    itself). dbt-spark runs these tests on Delta seeds on Databricks only."""

    @pytest.fixture(scope="class")
    def seeds(self):
        def dated(sql):
            return re.sub(r"'(\d{4}-\d\d-\d\d)'\)", r"date'\1')", sql)

        return {"duplicate_insert.sql": dated(unique_id.seeds__duplicate_insert_sql),
                "seed.csv": unique_id.seeds__seed_csv,
                "add_new_rows.sql": dated(unique_id.seeds__add_new_rows_sql)}


class TestUniqueKeyMerge(_SparkSqlInserts, BaseIncrementalUniqueKey):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {"+incremental_strategy": "merge"}}


class TestUniqueKeyDeleteInsert(_SparkSqlInserts, BaseIncrementalUniqueKey):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {"+incremental_strategy": "delete+insert"}}


class TestMergeExcludeColumns(BaseMergeExcludeColumns):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {"+incremental_strategy": "merge"}}


class TestIncrementalPredicatesDeleteInsert(BaseIncrementalPredicates):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {"+incremental_predicates": ["id != 2"], "+incremental_strategy": "delete+insert"}}


class TestIncrementalPredicatesMerge(BaseIncrementalPredicates):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {"+incremental_predicates": ["dbt_internal_dest.id != 2"],
                           "+incremental_strategy": "merge"}}

    @pytest.fixture(scope="class")
    def models(self):
        return {"delete_insert_incremental_predicates.sql": _MERGE_PREDICATES_SQL}


class TestOnSchemaChange(BaseIncrementalOnSchemaChange):
    pass


class TestMicrobatch(BaseMicrobatch):
    pass


class TestMicrobatchPartitioned(BaseMicrobatch):
    @pytest.fixture(scope="class")
    def microbatch_model_sql(self) -> str:
        return _MICROBATCH_PARTITIONED_SQL
