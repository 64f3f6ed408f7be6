"""The repository stands alone: a clone with nothing beside it installs, runs the demo and
passes its tests. Checked without Spark:

* no tracked file reads or cites anything beside the repository (the ``../shared`` folder and
  the notes that were kept there; ``.ci/run`` may name it);
* every ``<doc>.md#<section>`` citation names an existing page and one of its headings (the
  merge kernel cites docs/paimon_semantics.md that way);
* the tracked files copied into an empty folder, with nothing beside them, collect the whole
  test suite: a test module that reads a file outside the repository when it is imported (the
  Paimon vectors once were) fails there.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Files that may name what lies beside a checkout: CI's script, and this test's own patterns.
MAY_NAME_OUTSIDE = {".ci/run", "tests/unit/test_standalone.py"}
OUTSIDE = re.compile(r"\.\./shared|/work/shared|PAIMON_SEMANTICS|SPARK_NOTES|\bDESIGN\.md|§\s*\d")
# A citation of a page's section (`.md`, `#`, the anchor), and more sections of that page after a comma
CITATION = re.compile(r"(?P<page>[\w./-]*\.md)#(?P<first>[\w-]+)(?P<more>(?:,\s*#[\w-]+)*)")


def _tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [f for f in out.split("\0") if f]


def _texts():
    """(path, text) of every tracked text file (links and binaries left out)."""
    for name in _tracked():
        path = ROOT / name
        if path.is_symlink() or not path.is_file():
            continue
        try:
            yield name, path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue


def _anchors(page: pathlib.Path) -> set[str]:
    """The heading anchors of a Markdown page, as GitHub spells them (lower case, punctuation
    other than `-` and `_` dropped, spaces as `-`), outside fenced code."""
    anchors, fenced = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        m = None if fenced else re.match(r"#{1,6}\s+(.+?)\s*#*\s*$", line)
        if m:
            anchors.add(re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-"))
    return anchors


def test_nothing_cites_or_reads_beside_the_repository():
    found = [f"{name}:{n}: {line.strip()}" for name, text in _texts() if name not in MAY_NAME_OUTSIDE
             for n, line in enumerate(text.splitlines(), 1) if OUTSIDE.search(line)]
    assert found == [], "references to files outside the repository:\n" + "\n".join(found)


def test_every_section_citation_resolves():
    broken, cited = [], 0
    for name, text in _texts():
        for m in CITATION.finditer(text):
            page = next((p for p in ((ROOT / name).parent / m["page"], ROOT / m["page"]) if p.is_file()), None)
            sections = [m["first"], *re.findall(r"#([\w-]+)", m["more"])]
            cited += len(sections)
            if page is None:
                broken.append(f"{name}: {m[0]}: no page {m['page']}")
                continue
            broken += [f"{name}: {m[0]}: no section #{s} in {page.relative_to(ROOT)}"
                       for s in sections if s not in _anchors(page)]
    assert broken == []
    assert cited > 50  # the merge kernel's citations of docs/paimon_semantics.md among them


def test_a_copy_with_nothing_beside_it_collects_every_test(tmp_path):
    """The tracked files as they are now, in a folder of their own: pytest collects tests/unit
    and tests/functional there, every module imported, without an error."""
    copy = tmp_path / "alone" / "lakerank"
    for name in _tracked():
        src, dst = ROOT / name, copy / name
        if not (src.is_symlink() or src.is_file()):
            continue  # deleted in the working tree
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), dst)
        else:
            shutil.copy2(src, dst)
    env = {**os.environ, "PYTHONPATH": f"{copy / 'adapter'}{os.pathsep}{copy}",
           "LAKERANK_HOME": str(tmp_path / "home")}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
         "tests/unit", "tests/functional", "tests/adapter_suite"],
        cwd=copy, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert re.search(r"^\d+ tests collected", result.stdout, re.M), result.stdout[-1000:]
