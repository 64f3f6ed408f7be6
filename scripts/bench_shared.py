"""The bench on the shared deployment (`scripts/bench.py --shared`, docs/deployment.md): for
one history size, PostgreSQL, s3proxy and a Hive metastore service are started from the
project's own scripts (scripts/services/), the catalog is the metastore's, the warehouse and
the landing zone are on S3; every `dbt` of the bench runs with `--target shared`
(LAKERANK_TARGET) in that environment. The landed files are written to the home first (the
DuckDB oracle reads them there) and put on S3 with boto3, as a producer would land them."""

from __future__ import annotations

import contextlib
import os
import pathlib
import subprocess
from typing import Dict, Iterator

ROOT = pathlib.Path(__file__).resolve().parents[1]
SERVICES = ROOT / "scripts" / "services"


def _settings(text: str) -> Dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def _start(script: str, env: Dict[str, str]) -> Dict[str, str]:
    proc = subprocess.run(["bash", str(SERVICES / script), "start"], env=env, capture_output=True, text=True,
                          timeout=900)
    if proc.returncode != 0:
        raise SystemExit(f"bench: scripts/services/{script} start failed (docs/services.md):\n{proc.stderr[-3000:]}")
    return _settings(proc.stdout)


@contextlib.contextmanager
def shared_deployment(name: str) -> Iterator[Dict[str, str]]:
    """The environment of a build on the shared target, its catalog the PostgreSQL database
    ``name`` and its tables and landing zone under ``s3a://<bucket>/<name>/``; the services
    stopped on exit."""
    env = {**os.environ}
    started = []
    try:
        jars = subprocess.run(["bash", str(SERVICES / "jars.sh")], capture_output=True, text=True, timeout=1800)
        if jars.returncode != 0:
            raise SystemExit(f"bench: scripts/services/jars.sh failed:\n{jars.stderr[-3000:]}")
        env.update(_settings(jars.stdout))
        for script, folder in (("postgres.sh", "LAKERANK_PG_DIR"), ("s3proxy.sh", "LAKERANK_S3PROXY_DIR")):
            env.update(_start(script, env))
            started.append((script, env[folder]))
        bucket = env["LAKERANK_S3_BUCKET"]
        env.update(LAKERANK_WAREHOUSE=f"s3a://{bucket}/{name}/warehouse",
                   LAKERANK_LANDING=f"s3a://{bucket}/{name}/landing", LAKERANK_METASTORE_DB=name)
        env.update(_start("metastore.sh", env))
        started.append(("metastore.sh", env["LAKERANK_METASTORE_DIR"]))
        env["LAKERANK_TARGET"] = "shared"
        yield env
    finally:
        for script, folder in reversed(started):
            subprocess.run(["bash", str(SERVICES / script), "stop", folder], capture_output=True, timeout=120)


def upload(env: Dict[str, str], files, stream: str = "contracts") -> None:
    """Put landed ``files`` (local paths) into the landing zone's ``stream`` folder on S3."""
    import boto3

    bucket, prefix = env["LAKERANK_LANDING"].split("://", 1)[1].split("/", 1)
    s3 = boto3.client("s3", endpoint_url=env["LAKERANK_S3_ENDPOINT"], region_name=env.get("AWS_REGION", "us-east-1"),
                      aws_access_key_id=env["AWS_ACCESS_KEY_ID"], aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"])
    for path in files:
        s3.upload_file(str(path), bucket, f"{prefix.rstrip('/')}/{stream}/{pathlib.Path(path).name}")


def warehouse_on_disk(env: Dict[str, str]) -> pathlib.Path:
    """Where s3proxy keeps the warehouse's objects (for the bytes a batch writes)."""
    bucket, key = env["LAKERANK_WAREHOUSE"].split("://", 1)[1].split("/", 1)
    return pathlib.Path(env["LAKERANK_S3PROXY_DIR"]) / "data" / bucket / key
