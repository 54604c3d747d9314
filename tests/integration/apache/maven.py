"""Classpaths of Apache RocketMQ modules, resolved by Maven from Maven Central into the suite's cache.

``classpath(role, version)`` runs ``mvn dependency:build-classpath`` on the project's own
``tests/integration/java/pom.xml`` (profile ``servers`` or ``tools``) with a local repository under the cache,
and remembers the result in a small file, so later runs start Java without Maven (they only check that every
jar is still there). Resolution is serialised with a file lock: two test processes may ask at once.
"""

from __future__ import annotations

import fcntl
import functools
import logging
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Literal

from tests.integration.apache.cache import cache_root
from tests.integration.clusters.model import ProviderUnavailable

log = logging.getLogger("tests.apache.maven")

POM = Path(__file__).resolve().parents[1] / "java" / "pom.xml"
Role = Literal["servers", "tools", "proxy", "grpc-client"]
#: First resolution of a 5.x broker downloads ~150 jars.
RESOLVE_TIMEOUT_S = 900.0
_ERROR_LINE = re.compile(r"\[ERROR\] (\S.+)$", re.MULTILINE)


def maven_repo() -> Path:
    return cache_root() / "m2"


def _maven() -> str:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise ProviderUnavailable("Maven (mvn) not on PATH: it resolves Apache RocketMQ from Maven Central")
    return mvn


def _read(path: Path) -> list[Path] | None:
    """The remembered classpath, or None when it is missing or a jar of it is gone."""
    try:
        jars = [Path(p) for p in path.read_text("utf-8").strip().split(os.pathsep) if p]
    except FileNotFoundError:
        return None
    return jars if jars and all(jar.is_file() for jar in jars) else None


def _first_error(output: str) -> str:
    found = _ERROR_LINE.search(output)
    line = found.group(1) if found else (output.strip().splitlines() or ["no output"])[-1]
    return line if len(line) < 400 else line[:400] + "…"


@functools.cache
def classpath(role: Role, version: str) -> tuple[Path, ...]:
    """The jars of ``role`` at ``version``, resolving them on first use; :class:`ProviderUnavailable` names
    what went wrong (no Maven, an unknown version, no route to Maven Central)."""
    folder = cache_root() / "classpath"
    folder.mkdir(parents=True, exist_ok=True)
    remembered = folder / f"{role}-{version}.txt"
    jars = _read(remembered)
    if jars is not None:
        return tuple(jars)
    mvn = _maven()
    with (folder / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        jars = _read(remembered)  # another process may have resolved it while we waited
        if jars is not None:
            return tuple(jars)
        output_file = remembered.with_suffix(".tmp")
        argv = [
            mvn,
            "-B",
            "-q",
            "-Dstyle.color=never",
            "-f",
            str(POM),
            "-P",
            role,
            f"-Drocketmq.version={version}",
            f"-Dmaven.repo.local={maven_repo()}",
            "dependency:build-classpath",
            f"-Dmdep.outputFile={output_file}",
        ]
        log.info("resolving Apache RocketMQ %s %s: %s", role, version, " ".join(argv))
        try:
            result = subprocess.run(
                argv, capture_output=True, text=True, timeout=RESOLVE_TIMEOUT_S, check=False
            )
        except subprocess.TimeoutExpired as exc:
            raise ProviderUnavailable(
                f"Maven did not resolve Apache RocketMQ {role} {version} within {RESOLVE_TIMEOUT_S:.0f} s"
            ) from exc
        if result.returncode != 0:
            raise ProviderUnavailable(
                f"Maven could not resolve Apache RocketMQ {role} {version} from Maven Central: "
                + _first_error(result.stdout + result.stderr)
            )
        output_file.replace(remembered)
    jars = _read(remembered)
    if jars is None:
        raise ProviderUnavailable(f"Maven resolved {role} {version} but left no usable classpath")
    return tuple(jars)
