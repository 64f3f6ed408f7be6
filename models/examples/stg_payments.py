"""Seed 003 stream 2 of the wide table — the payments stream.

Streams the JSON Lines payment events landed under $LAKERANK_HOME/landing/payments/
into typed rows, one partition per commit, exactly once; bad lines go to
stg_payments__quarantine, per-commit counts to stg_payments__ingest_log.
A payment is re-sent (duplicate) or corrected (same payment_id, newer op_ts);
int_payments keeps each payment's latest version. The work is in
python_udfs.landing_ingest.
"""

from python_udfs.landing_ingest import landing_path, run_landing_ingest

FIELDS = [
    ("payment_id", "bigint", True),
    ("project_id", "bigint", True),
    ("amount", "decimal(18,2)", True),
    ("pay_time", "timestamp", True, {"formats": ["yyyy-MM-dd HH:mm:ss"]}),
    ("op_ts", "timestamp", True),
]


def model(dbt, session):
    dbt.config(materialized="stream_ingest", file_format="parquet")
    home = session.conf.get("spark.lakerank.home")
    schema = dbt.this.schema
    name = dbt.this.identifier
    return run_landing_ingest(
        session,
        fields=FIELDS,
        landing_dir=landing_path(home, "payments"),
        checkpoint_dir=f"{home}/checkpoints/{name}",
        table=f"{schema}.{name}",
        quarantine_table=f"{schema}.{name}__quarantine",
        ingest_log_table=f"{schema}.{name}__ingest_log",
    )
