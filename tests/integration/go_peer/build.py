"""Building the Go peer (``tests/integration/go``) once per source version, outside the work tree.

The program is built with ``go build`` into ``${RMQ_IT_CACHE:-~/.cache/rocketmq-toolkit-it}/go-peer/<hash>/``
where ``<hash>`` covers the Go sources, ``go.mod``, ``go.sum`` and the ``go version`` that builds them; a
build whose hash matches is reused. Apache's Go client comes from the Go module proxy at build time (into
the usual module cache), never from the repository.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from tests.integration.cpp_peer.runner import REPO_ROOT, PeerClient, PeerResult

GO_MODULE_DIR = REPO_ROOT / "tests" / "integration" / "go"
CLIENT_MODULE = "github.com/apache/rocketmq-client-go/v2"
PROGRAM_NAME = "gopeer"
CACHE_ENV = "RMQ_IT_CACHE"
DEFAULT_CACHE = Path("~/.cache/rocketmq-toolkit-it")
#: Seconds allowed for one ``go build``, module downloads included (two cores, a cold module cache).
BUILD_TIMEOUT_S = 900.0
PROBE_TIMEOUT_S = 60.0


class GoPeerUnavailable(RuntimeError):
    """The Go peer cannot be built or run here; the message says exactly what is missing."""


def client_version() -> str:
    """The Go client version ``go.mod`` pins (``v2.1.2``)."""
    text = (GO_MODULE_DIR / "go.mod").read_text("utf-8")
    found = re.search(rf"^\s*(?:require\s+)?{re.escape(CLIENT_MODULE)}\s+(\S+)", text, re.MULTILINE)
    if found is None:
        raise GoPeerUnavailable(f"{GO_MODULE_DIR / 'go.mod'} does not require {CLIENT_MODULE}")
    return found.group(1)


def cache_root() -> Path:
    """Where built peers are kept: ``$RMQ_IT_CACHE`` or ``~/.cache/rocketmq-toolkit-it``."""
    configured = os.environ.get(CACHE_ENV)
    return (Path(configured) if configured else DEFAULT_CACHE).expanduser() / "go-peer"


def _go() -> str:
    found = shutil.which("go")
    if found is None:
        raise GoPeerUnavailable("no `go` command on PATH (the Go peer needs Go 1.22 or newer)")
    return found


def _go_env() -> dict[str, str]:
    env = dict(os.environ)
    # -mod=mod: go.sum may be completed from the proxy; -buildvcs=false: the module sits inside this
    # repository's git work tree, whose state must not change the binary.
    env["GOFLAGS"] = "-mod=mod -buildvcs=false"
    return env


def _first_error_line(text: str) -> str:
    """The first line of go's complaint, skipping its progress lines."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    meaningful = [line for line in lines if not line.startswith(("go: downloading", "go: finding"))]
    return (meaningful or lines or ["(no output)"])[0]


def go_version(go: str | None = None) -> str:
    go = go or _go()
    try:
        done = subprocess.run(
            [go, "version"], capture_output=True, text=True, timeout=60, env=_go_env(), check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GoPeerUnavailable(f"`go version` failed: {exc}") from exc
    if done.returncode != 0:
        raise GoPeerUnavailable(f"`go version` failed: {_first_error_line(done.stderr + done.stdout)}")
    return done.stdout.strip()


def source_files() -> list[Path]:
    """What the build depends on: the Go sources, go.mod and go.sum."""
    files = [*sorted(GO_MODULE_DIR.glob("*.go")), GO_MODULE_DIR / "go.mod", GO_MODULE_DIR / "go.sum"]
    return [f for f in files if f.is_file() and not f.name.endswith("_test.go")]


def source_hash(toolchain: str) -> str:
    digest = hashlib.sha256(toolchain.encode("utf-8") + b"\0")
    for path in source_files():
        digest.update(path.name.encode("utf-8") + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:20]


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path``, so parallel test processes build once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build(env: Mapping[str, str] | None = None) -> Path:
    """The built program, building it if no build of these sources exists yet."""
    go = _go()
    toolchain = go_version(go)
    target_dir = cache_root() / source_hash(toolchain)
    program = target_dir / PROGRAM_NAME
    if program.is_file() and os.access(program, os.X_OK):
        return program
    with _locked(cache_root() / ".build.lock"):
        if program.is_file() and os.access(program, os.X_OK):
            return program
        target_dir.mkdir(parents=True, exist_ok=True)
        partial = Path(tempfile.mkdtemp(prefix=".build-", dir=target_dir)) / PROGRAM_NAME
        try:
            done = subprocess.run(
                [go, "build", "-trimpath", "-o", str(partial), "."],
                cwd=GO_MODULE_DIR,
                capture_output=True,
                text=True,
                timeout=BUILD_TIMEOUT_S,
                env=dict(env) if env is not None else _go_env(),
                check=False,
            )
            if done.returncode == 0 and partial.is_file():
                partial.replace(program)  # atomic: a reader never sees half a binary
        except subprocess.TimeoutExpired as exc:
            raise GoPeerUnavailable(f"`go build` of the Go peer took over {BUILD_TIMEOUT_S:.0f} s") from exc
        except OSError as exc:
            raise GoPeerUnavailable(f"`go build` could not run: {exc}") from exc
        finally:
            shutil.rmtree(partial.parent, ignore_errors=True)
        if done.returncode != 0 or not program.is_file():
            raise GoPeerUnavailable(
                f"`go build` of the Go peer (with {CLIENT_MODULE} from the module proxy) failed: "
                + _first_error_line(done.stderr + done.stdout)
            )
    return program


@functools.cache
def go_peer_program() -> list[str]:
    """The Go peer's argv before the command (built on first use); raises :class:`GoPeerUnavailable`."""
    return [str(build())]


@functools.cache
def go_peer_unavailable() -> str | None:
    """None when the Go peer builds and runs here, else exactly what is missing (no ``go`` on PATH; the
    module proxy unreachable, as the first line of go's error; a program that does not start)."""
    try:
        program = go_peer_program()
    except GoPeerUnavailable as exc:
        return str(exc)
    result = PeerClient("go peer", program=program).run("probe", timeout=PROBE_TIMEOUT_S)
    library = result.of("library")
    if result.ok and library and library[0].get("module") == CLIENT_MODULE:
        return None
    return "the Go peer was built but its probe failed:\n" + result.describe()


class GoClient(PeerClient):
    """Apache's Go client (``github.com/apache/rocketmq-client-go/v2``) as a peer: ``tests/integration/go``.

    It speaks ``cpp_peer/peer.py``'s protocol and takes its options where they apply, plus ``send-async``,
    ``route``, ``--serialize JSON|ROCKETMQ`` and, for ``push-consume``, ``--consume-from last|first``.
    """

    def __init__(self, program: list[str] | None = None, env: Mapping[str, str] | None = None) -> None:
        super().__init__("go peer", program=program if program is not None else go_peer_program(), env=env)

    def route(
        self, namesrv: str, topic: str, *, extra: Sequence[str] = (), timeout: float = 30.0
    ) -> PeerResult:
        """``route``: the queues the Go client would publish ``topic`` to."""
        return self.run("route", ["--topic", topic, *extra], namesrv=namesrv, timeout=timeout)
