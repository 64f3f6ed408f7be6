"""Seed 000 source stage — replaces the CDC source `mysql_project_contract_table`.

Streams the JSON Lines CDC events landed under $LAKERANK_HOME/landing/contracts/ (the
shared target: LAKERANK_LANDING/contracts/, its checkpoint under the warehouse)
into a clean retract changelog (+I, -U, +U, -D) of the live contract set, one
partition per commit. The landed lines' format is the var `contracts_format`
(dbt_project.yml: lakerank, debezium-json, canal-json or maxwell-json; docs/cdc_formats.md), read
with the vars contracts_change_time, contracts_database_include, contracts_table_include,
contracts_sign_time_unit and contracts_amount_scale.
The per-contract state is a table (stg_contract_ingest_state) merged with set operations, no
Python UDF. The work is in python_udfs.ingest.contract_ingest.
"""

from python_udfs.ingest.cdc_formats import cdc_options
from python_udfs.ingest.contract_ingest import run_contract_ingest
from python_udfs.ingest.tables import checkpoint_dir, stream_landing


def model(dbt, session):
    dbt.config(materialized="stream_ingest", file_format="parquet")
    schema = dbt.this.schema
    fmt = dbt.config.get("contracts_format") or "lakerank"
    unit = dbt.config.get("contracts_sign_time_unit")  # none: an integer sign_time is quarantined
    scale = dbt.config.get("contracts_amount_scale")  # none: a Decimal without a schema is quarantined
    cdc = cdc_options(
        change_time=dbt.config.get("contracts_change_time"),
        database_include=dbt.config.get("contracts_database_include"),
        table_include=dbt.config.get("contracts_table_include"),
        units={"sign_time": unit} if unit else {},
        declare="the var contracts_change_time: arrival",
        declare_unit="the var contracts_sign_time_unit",
        scales={"amount": scale} if scale not in (None, "") else {},
    )
    return run_contract_ingest(
        session,
        landing_dir=stream_landing(session, "contracts"),
        checkpoint_dir=checkpoint_dir(session, "stg_contract_changelog"),
        changelog_table=f"{schema}.{dbt.this.identifier}",
        quarantine_table=f"{schema}.stg_contract_quarantine",
        ingest_log_table=f"{schema}.stg_contract_ingest_log",
        state_table=f"{schema}.stg_contract_ingest_state",
        fmt=fmt,
        cdc=cdc,
    )
