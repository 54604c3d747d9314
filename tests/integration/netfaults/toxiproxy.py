"""Shopify's Toxiproxy, a TCP proxy that injects faults: built at test time, started per scenario, driven
over its HTTP API.

Build: ``go install github.com/Shopify/toxiproxy/v2/cmd/server@<VERSION>`` fetches the released module from
the Go module proxy (checked against the checksum database) and compiles it into
``${RMQ_IT_CACHE:-~/.cache/rocketmq-toolkit-it}/toxiproxy/<VERSION>/toxiproxy-server``; a binary already
there that reports that version is reused. Nothing of Toxiproxy's is in the repository.

Run: :func:`start` launches the server on a loopback port as a process of a :class:`Launch` (stopped by
pid with the rest of the launch) and returns a :class:`Toxiproxy`, the API client (plain ``urllib``, JSON
bodies). A :class:`Proxy` listens on one address and forwards to another; toxics are added to it and
removed again while connections are open: ``latency``, ``bandwidth``, ``timeout``, ``reset_peer``,
``slow_close`` (and the others Toxiproxy knows, through :meth:`Proxy.add_toxic`); :meth:`Proxy.set_enabled`
takes the proxy down (connections closed, nothing listening) and up again.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from tests.integration.apache.cache import cache_root
from tests.integration.clusters.launch import Launch
from tests.integration.clusters.processes import POLL_INTERVAL_S, StartupError, free_port

MODULE = "github.com/Shopify/toxiproxy/v2"
#: The released version built and run (Go module proxy tag); bump it here, and only here.
VERSION = "v2.12.0"
PACKAGE = f"{MODULE}/cmd/server"
PROGRAM_NAME = "toxiproxy-server"
#: One ``go install``: downloading the module and its dependencies and compiling them on two cores, cold,
#: took about two minutes here.
BUILD_TIMEOUT_S = 900.0
#: From the server's start until its API answers.
START_TIMEOUT_S = 15.0
#: Every API call is a loopback round trip to an idle server.
API_TIMEOUT_S = 5.0
#: Toxiproxy shuts down at once on SIGTERM.
GRACE_S = 5.0

Stream = Literal["upstream", "downstream"]
ToxicType = Literal["latency", "bandwidth", "slow_close", "timeout", "reset_peer", "slicer", "limit_data"]


class ToxiproxyUnavailable(RuntimeError):
    """Toxiproxy cannot be built or run here; the message says exactly why."""


class ToxiproxyError(RuntimeError):
    """The API refused a request (or did not answer); the message has Toxiproxy's own words."""


# -- building ---------------------------------------------------------------------------------------------


def program_dir() -> Path:
    """``<cache>/toxiproxy/<VERSION>``."""
    return cache_root() / "toxiproxy" / VERSION


def _go() -> str:
    found = shutil.which("go")
    if found is None:
        raise ToxiproxyUnavailable(
            f"no `go` command on PATH (Toxiproxy {VERSION} is built from the Go module proxy with it)"
        )
    return found


def _reported_version(program: Path) -> str | None:
    """What ``program -version`` says its version is, or None when it does not run."""
    try:
        done = subprocess.run(
            [str(program), "-version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r"version (\S+)", done.stdout)
    return found.group(1) if done.returncode == 0 and found else None


@contextlib.contextmanager
def _exclusive(lock_file: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``lock_file``: two test processes must not build into one folder at once."""
    lock_file.parent.mkdir(parents=True, exist_ok=True)
    with lock_file.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _first_complaint(output: str) -> str:
    """go's first line that is not download progress."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    useful = [line for line in lines if not line.startswith(("go: downloading", "go: finding"))]
    return (useful or lines or ["(no output)"])[0]


def build() -> Path:
    """The Toxiproxy server binary of :data:`VERSION`, built on first use; raises
    :class:`ToxiproxyUnavailable` with go's own complaint when it cannot be built."""
    target = program_dir() / PROGRAM_NAME
    if _reported_version(target) == VERSION:
        return target
    go = _go()
    with _exclusive(program_dir() / ".build.lock"):
        if _reported_version(target) == VERSION:  # built by another process while this one waited
            return target
        scratch = Path(tempfile.mkdtemp(prefix=".build-", dir=program_dir()))
        env = dict(os.environ)
        env["GOBIN"] = str(scratch)
        # go install pkg@version builds the released module as published, outside any work tree: no
        # -mod setting applies to it, and the flags a developer keeps in GOFLAGS must not change the binary.
        env.pop("GOFLAGS", None)
        env["GO111MODULE"] = "on"
        argv = [
            go,
            "install",
            "-trimpath",
            "-ldflags",
            f"-s -w -X {MODULE}.Version={VERSION}",
            f"{PACKAGE}@{VERSION}",
        ]
        try:
            done = subprocess.run(
                argv,
                cwd=scratch,
                env=env,
                capture_output=True,
                text=True,
                timeout=BUILD_TIMEOUT_S,
                check=False,
            )
            built = scratch / "server"
            if done.returncode == 0 and built.is_file():
                built.replace(target)  # atomic: nobody ever runs half a binary
        except subprocess.TimeoutExpired as exc:
            raise ToxiproxyUnavailable(
                f"`go install {PACKAGE}@{VERSION}` took over {BUILD_TIMEOUT_S:.0f} s"
            ) from exc
        except OSError as exc:
            raise ToxiproxyUnavailable(f"`go install {PACKAGE}@{VERSION}` could not run: {exc}") from exc
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        if done.returncode != 0:
            raise ToxiproxyUnavailable(
                f"`go install {PACKAGE}@{VERSION}` (from the Go module proxy) failed: "
                + _first_complaint(done.stderr + done.stdout)
            )
    reported = _reported_version(target)
    if reported != VERSION:
        raise ToxiproxyUnavailable(
            f"the Toxiproxy built into {target} reports version {reported}, not {VERSION}"
        )
    return target


@functools.cache
def toxiproxy_unavailable() -> str | None:
    """None when Toxiproxy builds (or is built) here, else why not; computed once per process."""
    try:
        build()
    except ToxiproxyUnavailable as exc:
        return str(exc)
    return None


# -- the API ----------------------------------------------------------------------------------------------


class Toxiproxy:
    """The HTTP API of one running Toxiproxy server at ``api`` (``host:port``)."""

    def __init__(self, api: str) -> None:
        self.api = api

    def call(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        """One API request; the decoded JSON answer (None for an empty one). Raises :class:`ToxiproxyError`
        when Toxiproxy answers with an error status or cannot be reached."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(
            f"http://{self.api}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=API_TIMEOUT_S) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace").strip()
            raise ToxiproxyError(f"{method} {path}: HTTP {exc.code}: {detail}") from exc
        except (urllib.error.URLError, OSError) as exc:
            raise ToxiproxyError(f"{method} {path}: Toxiproxy at {self.api} did not answer: {exc}") from exc
        return json.loads(raw) if raw.strip() else None

    def version(self) -> str:
        """The server's version (``GET /version``)."""
        answer = self.call("GET", "/version")
        return str(answer.get("version") if isinstance(answer, dict) else answer)

    def create_proxy(self, name: str, listen: str, upstream: str) -> Proxy:
        """A new enabled proxy accepting on ``listen`` (``host:port``) and forwarding to ``upstream``."""
        self.call("POST", "/proxies", {"name": name, "listen": listen, "upstream": upstream, "enabled": True})
        return Proxy(self, name)

    def proxies(self) -> dict[str, Any]:
        """Every proxy with its toxics, by name (``GET /proxies``)."""
        answer = self.call("GET", "/proxies")
        return dict(answer) if isinstance(answer, dict) else {}

    def reset(self) -> None:
        """Every proxy enabled again and every toxic removed (``POST /reset``)."""
        self.call("POST", "/reset")


class Proxy:
    """One proxy of a :class:`Toxiproxy`, by name."""

    def __init__(self, server: Toxiproxy, name: str) -> None:
        self.server = server
        self.name = name

    def info(self) -> dict[str, Any]:
        """The proxy's fields (``listen``, ``upstream``, ``enabled``) and its ``toxics``."""
        answer = self.server.call("GET", f"/proxies/{self.name}")
        return dict(answer) if isinstance(answer, dict) else {}

    def set_enabled(self, enabled: bool) -> None:
        """Disabled: its connections are closed and nothing listens on its address; enabled: it listens
        again."""
        self.server.call("POST", f"/proxies/{self.name}", {"enabled": enabled})

    def add_toxic(
        self,
        kind: ToxicType,
        attributes: Mapping[str, int | float],
        *,
        stream: Stream = "downstream",
        name: str | None = None,
        toxicity: float = 1.0,
    ) -> str:
        """Add a toxic of type ``kind`` on one direction (``upstream``: client to server) and return its
        name (default ``<kind>_<stream>``, Toxiproxy's own); it applies to open connections too."""
        toxic_name = name or f"{kind}_{stream}"
        self.server.call(
            "POST",
            f"/proxies/{self.name}/toxics",
            {
                "name": toxic_name,
                "type": kind,
                "stream": stream,
                "toxicity": toxicity,
                "attributes": dict(attributes),
            },
        )
        return toxic_name

    def remove_toxic(self, name: str) -> None:
        self.server.call("DELETE", f"/proxies/{self.name}/toxics/{name}")

    def toxic_names(self) -> list[str]:
        answer = self.server.call("GET", f"/proxies/{self.name}/toxics")
        return [str(toxic["name"]) for toxic in answer or []]

    def clear(self) -> None:
        """Remove every toxic and enable the proxy: the link as if nothing had happened."""
        for name in self.toxic_names():
            self.remove_toxic(name)
        self.set_enabled(True)

    # The toxics the scenarios use, with Toxiproxy's attribute names.

    def latency(self, ms: int, *, jitter_ms: int = 0, stream: Stream = "downstream") -> str:
        """Delay every chunk of data by ``ms`` (+/- ``jitter_ms``)."""
        return self.add_toxic("latency", {"latency": ms, "jitter": jitter_ms}, stream=stream)

    def bandwidth(self, kb_per_s: int, *, stream: Stream = "downstream") -> str:
        """At most ``kb_per_s`` KB a second."""
        return self.add_toxic("bandwidth", {"rate": kb_per_s}, stream=stream)

    def timeout(self, ms: int, *, stream: Stream = "upstream") -> str:
        """Let nothing through; close a connection after ``ms`` without data (never when 0)."""
        return self.add_toxic("timeout", {"timeout": ms}, stream=stream)

    def reset_peer(self, ms: int = 0, *, stream: Stream = "upstream") -> str:
        """Reset (TCP RST) a connection ``ms`` after its next data, which is dropped."""
        return self.add_toxic("reset_peer", {"timeout": ms}, stream=stream)

    def slow_close(self, ms: int, *, stream: Stream = "downstream") -> str:
        """Close a connection only ``ms`` after the other side did."""
        return self.add_toxic("slow_close", {"delay": ms}, stream=stream)


def start(launch: Launch, program: Path, *, host: str = "127.0.0.1", name: str = "toxiproxy") -> Toxiproxy:
    """Run ``program`` (see :func:`build`) with its API on ``host`` and a free port, as a process of
    ``launch`` (stopped by pid with it); returns once the API answers."""
    port = free_port()
    process = launch.process(name, [str(program), "-host", host, "-port", str(port)], grace_s=GRACE_S)
    server = Toxiproxy(f"{host}:{port}")
    deadline = time.monotonic() + START_TIMEOUT_S
    while True:
        if process.exited():
            raise StartupError(f"Toxiproxy exited while starting: {process.describe()}")
        try:
            server.version()
        except ToxiproxyError as exc:
            if time.monotonic() >= deadline:
                raise StartupError(
                    f"Toxiproxy's API did not answer within {START_TIMEOUT_S:.0f} s: {exc}"
                ) from exc
            time.sleep(POLL_INTERVAL_S)
        else:
            return server
