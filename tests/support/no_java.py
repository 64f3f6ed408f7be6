"""A machine without Java, simulated for a subprocess: the machine's Java stays installed."""

from __future__ import annotations

import os
import pathlib


def path_without_java(tmp: pathlib.Path) -> str:
    """PATH with every folder that holds a `java` replaced by a folder (under ``tmp``) of links
    to all of its other entries, so sh, dirname and the rest are still found."""
    out = []
    for i, folder in enumerate(os.environ["PATH"].split(os.pathsep)):
        if folder and os.path.exists(os.path.join(folder, "java")):
            shadow = tmp / f"path{i}"
            shadow.mkdir(parents=True)
            for name in os.listdir(folder):
                if name != "java":
                    (shadow / name).symlink_to(os.path.join(folder, name))
            folder = str(shadow)
        out.append(folder)
    return os.pathsep.join(out)


def env_without_java(tmp: pathlib.Path, **extra: str) -> dict:
    """This process's environment with no JAVA_HOME and :func:`path_without_java`, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "PYSPARK_SUBMIT_ARGS")}
    env["PATH"] = path_without_java(tmp)
    env.update(extra)
    return env
