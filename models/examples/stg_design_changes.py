"""Seed 003 stream 3 of the wide table — the design-change stream.

Streams the JSON Lines design changes landed under $LAKERANK_HOME/landing/design_changes/
into typed rows, one partition per commit, exactly once; bad lines go to
stg_design_changes__quarantine, per-commit counts to stg_design_changes__ingest_log.
Each change carries the project's whole design state (designer, design_status) as of
its change_time. The work is in python_udfs.landing_ingest.
"""

from python_udfs.landing_ingest import landing_path, run_landing_ingest

FIELDS = [
    ("change_id", "bigint", True),
    ("project_id", "bigint", True),
    ("designer", "string", True),
    ("design_status", "string", True),
    ("change_time", "timestamp", True, {"formats": ["yyyy-MM-dd HH:mm:ss"]}),
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
        landing_dir=landing_path(home, "design_changes"),
        checkpoint_dir=f"{home}/checkpoints/{name}",
        table=f"{schema}.{name}",
        quarantine_table=f"{schema}.{name}__quarantine",
        ingest_log_table=f"{schema}.{name}__ingest_log",
    )
