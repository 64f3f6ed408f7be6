"""Where a LAKERANK_HOME was created, so that a copy of it is refused: the home's metastore
records every table by the absolute path of the home it was created in."""

from __future__ import annotations

import os

from dbt_common.exceptions import DbtRuntimeError

__all__ = ["HOME_ORIGIN_FILE", "LakerankHomeError", "check_home_origin"]


class LakerankHomeError(DbtRuntimeError):
    """LAKERANK_HOME is a copy of another home (:func:`check_home_origin`)."""


HOME_ORIGIN_FILE = "home_origin"


def check_home_origin(home: str) -> None:
    """Refuse a home that is a copy of another: its metastore records every table by the
    absolute path of the home it was created in, so a copy would read and write that
    home's warehouse. The path a home was created at is kept in ``home_origin`` beside its
    metastore (written by its first session; a home made before the file existed adopts
    its present path)."""
    origin_file = os.path.join(home, HOME_ORIGIN_FILE)
    here = os.path.realpath(home)
    try:
        with open(origin_file, encoding="utf-8") as fh:
            origin = fh.read().strip()
    except FileNotFoundError:
        os.makedirs(home, exist_ok=True)
        with open(origin_file + ".tmp", "w", encoding="utf-8") as fh:  # a kill leaves no half record
            fh.write(here + "\n")
        os.replace(origin_file + ".tmp", origin_file)
        return
    if origin != here:
        raise LakerankHomeError(
            f"lakerank: LAKERANK_HOME={home} was created at {origin}; its metastore still points at "
            f"that home's tables, so building here would write into {origin}. Rebuild it here instead: "
            "copy its landing/ folder into a new home and run `dbt build` (docs/operations.md, "
            "'Moving or copying a home').")
