"""A copied LAKERANK_HOME is refused before any session starts: its metastore would read and
write the original home's tables (docs/operations.md, "Moving or copying a home")."""

from __future__ import annotations

import shutil

import pytest

from dbt.adapters.lakerank.home_origin import HOME_ORIGIN_FILE, LakerankHomeError, check_home_origin


def test_a_copied_home_is_refused_and_the_original_still_opens(tmp_path):
    original = tmp_path / "home"
    check_home_origin(str(original))  # a new home records where it was created
    assert (original / HOME_ORIGIN_FILE).read_text().strip() == str(original.resolve())
    (original / "metastore_db").mkdir()

    copy = tmp_path / "copy"
    shutil.copytree(original, copy)
    with pytest.raises(LakerankHomeError, match=f"created at {original.resolve()}"):
        check_home_origin(str(copy))
    check_home_origin(str(original))  # the original is untouched


def test_a_home_from_before_the_record_adopts_its_path(tmp_path):
    home = tmp_path / "older"
    (home / "metastore_db").mkdir(parents=True)
    check_home_origin(str(home))
    assert (home / HOME_ORIGIN_FILE).read_text().strip() == str(home.resolve())
