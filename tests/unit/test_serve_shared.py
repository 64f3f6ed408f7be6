"""`lakerank serve` refuses the shared deployment (docs/deployment.md, "Not built yet"): its
builds would take no build lease and commit beside the other builders unfenced."""

from __future__ import annotations

import pathlib

from dbt.adapters.lakerank import serve
from dbt.adapters.lakerank.home import read_state

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_serve_refuses_the_shared_target_and_starts_nothing(tmp_path, capsys):
    home = tmp_path / "home"
    home.mkdir()
    code = serve.main(["serve", "--home", str(home), "--target", "shared", "--project-dir", str(ROOT), "--port", "0"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "shared deployment" in err and "build lease" in err and "dbt build --target shared" in err, err
    assert read_state(str(home)) is None
