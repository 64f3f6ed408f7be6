"""`lakerank serve` (issue E.1): a real Spark Connect server over a temporary LAKERANK_HOME,
queried by a real pyspark Connect client in another process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from dbt.adapters.lakerank import serve
from dbt.adapters.lakerank.home import LakerankBusyError, acquire_build_lock, alive, release_build_lock
from lakerank_project import ROOT

CLIENT = textwrap.dedent("""\
    import json, sys
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.remote(sys.argv[1]).getOrCreate()
    spark.sql("create database if not exists lakerank")
    spark.sql("create table lakerank.serve_probe using parquet as select 7 as a, timestamp'2024-02-12 08:30:55' as t")
    row = spark.sql("select a, cast(t as string) as t, current_timezone() as tz from lakerank.serve_probe").first()
    location = spark.sql("describe formatted lakerank.serve_probe").where("col_name = 'Location'").first()[1]
    print(json.dumps({"a": row.a, "t": row.t, "tz": row.tz, "location": location}))
    """)


def test_serve_answers_a_connect_client_on_the_homes_warehouse_and_stops(tmp_path, capsys):
    home = str(tmp_path / "home")
    args = ["serve", "--home", home, "--port", "0", "--project-dir", str(ROOT)]  # 0: any free port
    assert serve.main([*args, "--background"]) == 0
    try:
        state = json.loads((tmp_path / "home" / "serve.json").read_text())
        assert state["port"] > 0 and state["url"] == f"sc://127.0.0.1:{state['port']}" and state["home"] == home
        # one server per home, refused clearly; an embedded build on the home refuses too
        assert serve.main([*args, "--background"]) == 2
        assert "already serving" in capsys.readouterr().err
        with pytest.raises(LakerankBusyError, match="lakerank serve on port"):
            acquire_build_lock(home)

        out = subprocess.run([sys.executable, "-c", CLIENT, state["url"]], capture_output=True, text=True,
                             timeout=300, cwd=tmp_path)
        assert out.returncode == 0, out.stderr[-3000:]
        got = json.loads(out.stdout.strip().splitlines()[-1])
        # the embedded target's settings: business zone, wall-clock timestamps, the home's warehouse
        assert (got["a"], got["t"], got["tz"]) == (7, "2024-02-12 08:30:55", "Asia/Shanghai")
        assert got["location"].replace("file:", "").startswith(os.path.join(home, "warehouse"))
    finally:
        assert serve.main(["serve", "--home", home, "--stop"]) == 0
    assert not (tmp_path / "home" / "serve.json").exists()
    assert not alive(state["pid"])
    # it stopped Spark itself: no traceback of a session whose JVM was killed under it
    assert "Traceback" not in (tmp_path / "home" / "logs" / "serve.log").read_text()
    acquire_build_lock(home)  # the lock went with the server
    release_build_lock(home)
    capsys.readouterr()
    assert serve.main(["serve", "--home", home, "--stop"]) == 0
    assert "no server running" in capsys.readouterr().out
