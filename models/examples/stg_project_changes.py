"""Seed 002 dimension source — the project dimension's CDC stream.

Streams the JSON Lines CDC events of the project table landed under
$LAKERANK_HOME/landing/projects/ into typed rows, one partition per commit, exactly
once; bad lines go to stg_project_changes__quarantine, per-commit counts to
stg_project_changes__ingest_log. `op` is c (create), u (update) or d (delete); a
project's state is its last event by (op_ts, file, line). The work is in
python_udfs.landing_ingest.
"""

from python_udfs.landing_ingest import landing_path, run_landing_ingest

FIELDS = [
    ("project_id", "bigint", True),
    ("op", "string", True, {"values": ["c", "u", "d"]}),
    ("city", "string", False),
    ("designer", "string", False),
    ("status", "string", False),
    ("update_time", "timestamp", True, {"formats": ["yyyy-MM-dd HH:mm:ss"]}),
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
        landing_dir=landing_path(home, "projects"),
        checkpoint_dir=f"{home}/checkpoints/{name}",
        table=f"{schema}.{name}",
        quarantine_table=f"{schema}.{name}__quarantine",
        ingest_log_table=f"{schema}.{name}__ingest_log",
    )
