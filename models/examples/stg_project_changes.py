"""Seed 002 dimension source — the project dimension's CDC stream.

Streams the JSON Lines CDC events of the project table landed under
$LAKERANK_HOME/landing/projects/ into typed rows, one partition per commit, exactly
once; bad lines go to stg_project_changes__quarantine, per-commit counts to
stg_project_changes__ingest_log. `op` is c (create), u (update) or d (delete); a
project's state is its last event by (op_ts, file, line).
The stream (landing folder and fields) is declared in _examples_streams.yml; the work is in
python_udfs.ingest.landing_ingest.
"""

from python_udfs.ingest.landing_ingest import run_declared_stream


def model(dbt, session):
    dbt.config(materialized="stream_ingest", file_format="parquet")
    return run_declared_stream(session, dbt.this, dbt.config.get("stream"))
