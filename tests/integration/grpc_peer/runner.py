"""Runs :mod:`tests.integration.grpc_peer.peer` in a virtual environment holding Apache's Python gRPC SDK.

The environment is made once under the suite's cache (``grpc-sdk-<version>``) from PyPI, under a file lock
(two test processes may ask at once), and reused by later runs. Why an environment of its own: the SDK's
import name is ``rocketmq``, which PyPI's C++ client (installed in the project's environment as another
peer) takes too.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.integration.apache.cache import cache_root
from tests.integration.clusters.model import ProviderUnavailable

#: The SDK release the suite runs (PyPI ``rocketmq-python-client``).
SDK_VERSION = "5.1.2"
PEER = Path(__file__).with_name("peer.py")
INSTALL_TIMEOUT_S = 600.0


@functools.cache
def sdk_python() -> Path:
    """The interpreter of the SDK's environment, made on first use; :class:`ProviderUnavailable` says why
    it could not be (no venv module, no route to PyPI)."""
    folder = cache_root() / f"grpc-sdk-{SDK_VERSION}"
    python = folder / "bin" / "python"
    marker = folder / ".installed"
    if marker.exists():
        return python
    cache_root().mkdir(parents=True, exist_ok=True)
    with (cache_root() / ".grpc-sdk.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if marker.exists():
            return python
        steps = [
            [sys.executable, "-m", "venv", "--clear", str(folder)],
            [str(python), "-m", "pip", "install", "-q", f"rocketmq-python-client=={SDK_VERSION}"],
        ]
        for step in steps:
            try:
                result = subprocess.run(step, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S)
            except subprocess.TimeoutExpired as exc:
                raise ProviderUnavailable(f"installing the gRPC SDK timed out: {' '.join(step)}") from exc
            if result.returncode != 0:
                last = (result.stderr or result.stdout).strip().splitlines()[-1:] or ["no output"]
                raise ProviderUnavailable(
                    f"could not install rocketmq-python-client {SDK_VERSION} from PyPI: {last[0]}"
                )
        marker.write_text(SDK_VERSION, "utf-8")
    return python


@dataclass
class PeerRun:
    """What one run printed: its events in order, and how it ended."""

    argv: list[str]
    returncode: int
    events: list[dict[str, Any]] = field(default_factory=list)
    stderr: str = ""

    def of(self, event: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("event") == event]

    def describe(self) -> str:
        return f"{' '.join(self.argv[-8:])} -> rc {self.returncode}; stderr tail: {self.stderr[-1500:]}"


def run(command: str, args: list[str], timeout: float) -> PeerRun:
    """One peer command to its end (killed ``timeout`` + 30 s after it started)."""
    argv = [str(sdk_python()), str(PEER), command, *args]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return run_argv(argv, timeout, env)


def run_argv(argv: list[str], timeout: float, env: dict[str, str]) -> PeerRun:
    """Any JSON-lines peer (this SDK's, the Java gRPC client's) to its end: killed ``timeout`` + 30 s after
    it started, its JSON lines kept either way."""
    try:
        result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout + 30.0, env=env)
    except subprocess.TimeoutExpired as exc:
        out = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        return PeerRun(argv, -9, _events(out), "killed: it ran past its time")
    return PeerRun(argv, result.returncode, _events(result.stdout), result.stderr)


def _events(text: str) -> list[dict[str, Any]]:
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                found.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return found
