"""The project's layout rules (docs/editing_the_pipeline.md), checked on the parsed manifest
(`dbt parse`, no Spark) and on the files: what dbt-project-evaluator would check for a dbt
project, plus lakerank's own split into the library package and the pipeline."""

from __future__ import annotations

import json
import os
import pathlib
import re
import subprocess

import pytest

from lakerank_project import EXAMPLES_ON

ROOT = pathlib.Path(__file__).resolve().parents[2]
LAYERS = {"staging": 0, "intermediate": 1, "marts": 2, "published": 3}
PREFIXES = {"staging": ("stg_",), "intermediate": ("int_",), "marts": ("fct_", "dim_"),
            "examples": ("stg_", "int_", "fct_", "dim_"), "published": ("published_",)}
PK_TESTS = {"unique", "unique_combination", "valid_rows"}
MAX_LINES = 400


@pytest.fixture(scope="module")
def manifest(tmp_path_factory):
    """The project parsed with the examples on, so that the rules cover them too."""
    from dbt.cli.main import dbtRunner

    home = tmp_path_factory.mktemp("layout_home")
    os.environ["LAKERANK_HOME"] = str(home)
    target = tmp_path_factory.mktemp("layout_target")
    res = dbtRunner().invoke(["parse", "--project-dir", str(ROOT), "--profiles-dir", str(ROOT / "profiles"),
                              "--target-path", str(target), "--vars", json.dumps(EXAMPLES_ON)])
    assert res.success, res.exception
    assert not (home / "metastore_db").exists(), "parsing started a Spark session"
    return res.result


def _models(manifest):
    return {n.unique_id: n for n in manifest.nodes.values()
            if n.resource_type == "model" and n.package_name == "lakerank"}


def _folder(node) -> str:
    return pathlib.PurePath(node.original_file_path).parts[1]


def test_every_model_has_a_primary_key_test_or_says_why_not(manifest):
    tested = set()
    for node in manifest.nodes.values():
        meta = getattr(node, "test_metadata", None)
        if node.resource_type != "test" or meta is None or meta.name not in PK_TESTS:
            continue
        if meta.name == "valid_rows" and not (meta.kwargs.get("key") or meta.kwargs.get("arguments", {}).get("key")):
            continue
        tested.update(node.depends_on.nodes)
    missing = [n.name for uid, n in _models(manifest).items()
               if uid not in tested and not str(n.config.meta.get("primary_key_test", "")).startswith("none: ")]
    assert missing == [], f"models with no primary-key test and no meta.primary_key_test reason: {missing}"


def test_the_examples_are_off_unless_asked_for(manifest, tmp_path):
    """`dbt build` builds the product: without the var `lakerank_examples`, dbt sees no model,
    data test or source of models/examples/ (dbt_project.yml), which are there when it is on."""
    from dbt.cli.main import dbtRunner

    on = {n.original_file_path for n in [*manifest.nodes.values(), *manifest.sources.values()]}
    assert {p for p in on if p.startswith("models/examples/")}
    res = dbtRunner().invoke(["ls", "--project-dir", str(ROOT), "--profiles-dir", str(ROOT / "profiles"),
                              "--target-path", str(tmp_path), "--output", "path", "--quiet"])
    assert res.success, res.exception
    assert "models/marts/fct_contract_rank.sql" in res.result
    assert [p for p in res.result if p.startswith("models/examples/")] == []


def test_model_names_follow_their_folder(manifest):
    wrong = [n.original_file_path for n in _models(manifest).values()
             if not n.name.startswith(PREFIXES[_folder(n)])]
    assert wrong == []


def test_layers_only_read_earlier_layers_and_staging_reads_only_sources(manifest):
    models = _models(manifest)
    wrong = []
    for node in models.values():
        upstream = [models[u] for u in node.depends_on.nodes if u in models]
        if _folder(node) == "staging" and upstream:
            wrong.append(f"{node.name} (staging) reads {[u.name for u in upstream]}")
        for up in upstream:
            if _folder(up) == "examples" and _folder(node) != "examples":
                wrong.append(f"{node.name} reads the example {up.name}")
            elif _folder(node) in LAYERS and LAYERS[_folder(up)] > LAYERS[_folder(node)]:
                wrong.append(f"{node.name} ({_folder(node)}) reads {up.name} ({_folder(up)})")
    assert wrong == []


def test_every_model_and_column_is_documented(manifest):
    undocumented = []
    for node in _models(manifest).values():
        if not node.description.strip():
            undocumented.append(node.name)
        if not node.columns:
            undocumented.append(f"{node.name}: no columns documented")
        undocumented += [f"{node.name}.{c.name}" for c in node.columns.values() if not c.description.strip()]
    assert undocumented == []


def test_the_library_knows_nothing_of_the_pipeline():
    """lakerank_lib's macros read no model or source of their own: everything comes in as an
    argument, so the package installs alone (tests/fixtures/analyst: one packages.yml entry)."""
    calls = []
    for path in (ROOT / "lakerank_lib" / "macros").rglob("*.sql"):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"\b(ref|source)\(\s*['\"][A-Za-z_]|\blakerank\.[a-z_]+\(", line):
                calls.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert calls == []
    analyst = (ROOT / "tests" / "fixtures" / "analyst" / "dbt_project.yml").read_text()
    assert "enabled: false" not in analyst
    assert (ROOT / "tests" / "fixtures" / "analyst" / "packages.yml").read_text().count("- local:") == 1


def test_no_source_file_over_the_size_limit():
    files = subprocess.run(["git", "ls-files", "*.py", "*.sql", "*.yml", "*.sh"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    long = {f: n for f in files if not f.startswith("tests/")
            and (n := len((ROOT / f).read_text().splitlines())) > MAX_LINES}
    assert long == {}
