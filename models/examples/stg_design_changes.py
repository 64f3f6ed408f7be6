"""Seed 003 stream 3 of the wide table — the design-change stream.

Streams the JSON Lines design changes landed under $LAKERANK_HOME/landing/design_changes/
into typed rows, one partition per commit, exactly once; bad lines go to
stg_design_changes__quarantine, per-commit counts to stg_design_changes__ingest_log.
Each change carries the project's whole design state (designer, design_status) as of
its change_time. The stream (landing folder and fields) is declared in
_examples_streams.yml; the work is in python_udfs.ingest.landing_ingest.
"""

from python_udfs.ingest.landing_ingest import run_declared_stream


def model(dbt, session):
    dbt.config(materialized="stream_ingest", file_format="parquet")
    return run_declared_stream(session, dbt.this, dbt.config.get("stream"))
