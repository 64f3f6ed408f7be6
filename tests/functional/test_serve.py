"""`lakerank serve` (issue E.1): a real Spark Connect server over a temporary LAKERANK_HOME,
queried by a real pyspark Connect client in another process; and nobody else in (issue R.6):
a client without the server's token, or with another, is refused by both of its endpoints and
changes nothing."""

from __future__ import annotations

import json
import os
import secrets
import stat
import subprocess
import sys
import textwrap

import pytest
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.lakerank import serve
from dbt.adapters.lakerank.driver_ops import REFUSED
from dbt.adapters.lakerank.home import LakerankBusyError, acquire_build_lock, alive, release_build_lock
from dbt.adapters.lakerank.remote import RemoteDriver
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


def connect_client(url: str, token: str = ""):
    """A Spark Connect session of this process on ``url``, with ``token`` if given."""
    from pyspark.sql.connect.client import ChannelBuilder, DefaultChannelBuilder
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    channel = DefaultChannelBuilder(url)
    if token:
        channel.set(ChannelBuilder.PARAM_TOKEN, token)
    return ConnectSession.builder.channelBuilder(channel).create()


def assert_refused_and_nothing_changed(state: dict, victim) -> None:
    """Clients without the server's token, or with another, try to create a table, drop
    one and, through the driver endpoint, delete a directory: each is refused, and the
    server's owner then sees nothing changed; the owner's own delete goes through."""
    wrong = secrets.token_urlsafe(32)
    for token in ("", wrong):
        intruder = connect_client(state["url"], token)
        try:
            for sql in ("create table lakerank.intruder using parquet as select 1 as a",
                        "drop table lakerank.serve_probe"):
                with pytest.raises(Exception, match="authentication token") as refused:
                    intruder.sql(sql).collect()
                assert wrong not in str(refused.value)
        finally:
            intruder.stop()
        with pytest.raises(DbtRuntimeError) as refused:
            RemoteDriver(state["driver"], "intruder", "8e0c5b0e-4a57-4f2d-9d55-1c2f3b4a5d6e",
                         token).call("lakerank_delete_path", [str(victim)])
        assert refused.value.msg == REFUSED
        assert victim.exists()
    owner = connect_client(state["url"], state["token"])
    try:
        assert not owner.catalog.tableExists("lakerank.intruder")
        assert owner.sql("select a from lakerank.serve_probe").first().a == 7
        # the call the intruders made does what it says, with the token
        driver = RemoteDriver(state["driver"], owner.client._user_id or "", owner.session_id, state["token"])
        assert driver.call("lakerank_delete_path", [str(victim)]) is True
        assert not victim.exists()
    finally:
        owner.stop()


def group_command_lines(pgid: int) -> list:
    """The command lines of the processes of group ``pgid`` (the server's Python and its JVM),
    which every user of the machine can read."""
    lines = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.getpgid(int(pid)) == pgid:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    lines.append(fh.read().decode(errors="replace"))
        except OSError:  # gone meanwhile
            pass
    assert len(lines) >= 2, lines
    return lines


def test_serve_answers_a_connect_client_on_the_homes_warehouse_and_stops(tmp_path, capsys, monkeypatch):
    home = str(tmp_path / "home")
    args = ["serve", "--home", home, "--port", "0", "--project-dir", str(ROOT)]  # 0: any free port
    assert serve.main([*args, "--background"]) == 0
    try:
        state = json.loads((tmp_path / "home" / "serve.json").read_text())
        assert state["port"] > 0 and state["url"] == f"sc://localhost:{state['port']}" and state["home"] == home
        # the token: its owner's only, never printed
        assert stat.S_IMODE(os.stat(tmp_path / "home" / "serve.json").st_mode) == 0o600
        assert len(state["token"]) >= 40 and state["token"] not in capsys.readouterr().out
        assert not [cmd for cmd in group_command_lines(state["pid"]) if state["token"] in cmd]
        # one server per home, refused clearly; an embedded build on the home refuses too
        assert serve.main([*args, "--background"]) == 2
        assert "already serving" in capsys.readouterr().err
        with pytest.raises(LakerankBusyError, match="lakerank serve on port"):
            acquire_build_lock(home)

        out = subprocess.run([sys.executable, "-c", CLIENT, state["url"]], capture_output=True, text=True,
                             timeout=300, cwd=tmp_path,
                             env={**os.environ, serve.TOKEN_ENV: state["token"]})
        assert out.returncode == 0, out.stderr[-3000:]
        got = json.loads(out.stdout.strip().splitlines()[-1])
        # the embedded target's settings: business zone, wall-clock timestamps, the home's warehouse
        assert (got["a"], got["t"], got["tz"]) == (7, "2024-02-12 08:30:55", "Asia/Shanghai")
        assert got["location"].replace("file:", "").startswith(os.path.join(home, "warehouse"))

        victim = tmp_path / "victim"
        (victim / "part=1").mkdir(parents=True)
        (victim / "part=1" / "data.parquet").write_bytes(b"kept")
        assert_refused_and_nothing_changed(state, victim)
    finally:
        assert serve.main(["serve", "--home", home, "--stop"]) == 0
    assert not (tmp_path / "home" / "serve.json").exists()
    assert not alive(state["pid"])
    # it stopped Spark itself: no traceback of a session whose JVM was killed under it
    log = (tmp_path / "home" / "logs" / "serve.log").read_text()
    assert "Traceback" not in log and state["token"] not in log
    acquire_build_lock(home)  # the lock went with the server
    release_build_lock(home)
    capsys.readouterr()
    assert serve.main(["serve", "--home", home, "--stop"]) == 0
    assert "no server running" in capsys.readouterr().out
    # a token of one's own is refused (the server makes one at every start), without its value
    monkeypatch.setenv("LAKERANK_SPARK_CONF", f"{serve.TOKEN_CONF}=hunter2")
    assert serve.main([*args, "--background"]) == 2
    err = capsys.readouterr().err
    assert f"{serve.TOKEN_CONF} is set" in err and "hunter2" not in err
    # the driver endpoint's token goes in clear to this machine only
    with pytest.raises(DbtRuntimeError, match="not sent in clear"):
        RemoteDriver("http://192.0.2.1:9", "u", "s", state["token"]).call("lakerank_delete_path", ["/"])
