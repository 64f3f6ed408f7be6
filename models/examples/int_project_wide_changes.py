"""Seed 003 multi-stream input — one commit stream out of three.

The wide table `dim_project_wide` is a pk_table, and a pk_table run consumes the pending
window of ONE commit source. Its three streams have three commit id spaces: the
contract changelog's batch ids (stg_contract_changelog), int_payments' snapshot ids
(its audit log: payment versions as retract changes) and stg_design_changes' batch ids.
This model keeps one watermark per source (table properties
`lakerank.source.<name>`) and publishes, per run, the rows of every source's pending
window (watermark, head] as ONE new commit `_commit_id` of its own table, recording
the new head and all watermarks in one metastore call; dim_project_wide then takes this
table as its commit source. Each source's rows are mapped to the wide table's columns
of their stream (the other columns are NULL). `--full-refresh` re-reads every source
from its first commit (rebuild dim_project_wide with it). See
python_udfs.ingest.commit_union.run_commit_union.
"""

from python_udfs.ingest.commit_union import run_commit_union

DDL = (
    "rowkind STRING, project_id BIGINT, "
    "contract_count BIGINT, contract_amount DECIMAL(18,2), last_sign_time TIMESTAMP_NTZ, "
    "contracts_changed_at TIMESTAMP_NTZ, "
    "payment_count BIGINT, paid_amount DECIMAL(18,2), last_pay_time TIMESTAMP_NTZ, "
    "designer STRING, design_status STRING, design_changed_at TIMESTAMP_NTZ, design_op_ts TIMESTAMP_NTZ, "
    "design_change_id BIGINT, "
    "source_stream STRING, source_commit_id BIGINT, _commit_id BIGINT"
)

CONTRACTS = """
select
    rowkind, project_id,
    1 as contract_count, amount as contract_amount, sign_time as last_sign_time,
    op_ts as contracts_changed_at,
    'contracts' as source_stream, _commit_id as source_commit_id
from {rows}
"""

PAYMENTS = """
select
    rowkind, project_id,
    1 as payment_count, amount as paid_amount, pay_time as last_pay_time,
    'payments' as source_stream, _commit_id as source_commit_id
from {rows}
"""

DESIGN_CHANGES = """
select
    '+I' as rowkind, project_id,
    designer, design_status, change_time as design_changed_at, op_ts as design_op_ts,
    change_id as design_change_id,
    'design_changes' as source_stream, _commit_id as source_commit_id
from {rows}
"""


def _full_refresh() -> bool:
    """dbt's --full-refresh flag (lakerank runs Python models inside the dbt process)."""
    try:
        from dbt.flags import get_flags

        return bool(getattr(get_flags(), "FULL_REFRESH", False))
    except Exception:
        return False


def sources(schema: str) -> list:
    """The three commit sources of the wide table (see run_commit_union)."""
    return [
        {"name": "contracts", "head_table": f"{schema}.stg_contract_changelog",
         "head_property": "lakerank.commit_id", "select": CONTRACTS},
        {"name": "payments", "head_table": f"{schema}.int_payments",
         "head_property": "lakerank.snapshot_id",
         "rows_table": f"{schema}.int_payments__audit_log", "select": PAYMENTS},
        {"name": "design_changes", "head_table": f"{schema}.stg_design_changes",
         "head_property": "lakerank.commit_id", "select": DESIGN_CHANGES},
    ]


def model(dbt, session):
    dbt.config(materialized="stream_ingest", file_format="parquet")
    # The sources (dbt.ref makes them parents of this model in the DAG).
    dbt.ref("stg_contract_changelog")
    dbt.ref("int_payments")
    dbt.ref("stg_design_changes")
    schema = dbt.this.schema
    return run_commit_union(
        session,
        table=f"{schema}.{dbt.this.identifier}",
        ddl=DDL,
        sources=sources(schema),
        reset=_full_refresh(),
    )
