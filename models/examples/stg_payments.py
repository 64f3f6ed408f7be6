"""Seed 003 stream 2 of the wide table — the payments stream.

Streams the JSON Lines payment events landed under $LAKERANK_HOME/landing/payments/
into typed rows, one partition per commit, exactly once; bad lines go to
stg_payments__quarantine, per-commit counts to stg_payments__ingest_log.
A payment is re-sent (duplicate) or corrected (same payment_id, newer op_ts);
int_payments keeps each payment's latest version.
The stream (landing folder and fields) is declared in _examples_streams.yml; the work is in
python_udfs.ingest.landing_ingest.
"""

from python_udfs.ingest.landing_ingest import run_declared_stream


def model(dbt, session):
    dbt.config(materialized="stream_ingest", file_format="parquet")
    return run_declared_stream(session, dbt.this, dbt.config.get("stream"))
