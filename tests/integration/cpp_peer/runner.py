"""Starting ``peer.py`` from tests: feeding it, parsing its JSON lines, timing it out, always killing it.

Every peer runs in a new session (so its own process group, whose id is its pid), with ``HOME`` pointed at a
scratch folder (the C++ client writes its logs under ``$HOME/logs/rocketmq-cpp``; the tail of them is kept
in the result for failure messages). Whatever happens, :meth:`PeerProcess.finish` ends with SIGKILL to that
group *before* the leader is reaped, so the group id cannot have been reused by then, and then reaps it.

The peer has its own deadline too (it reports a ``timeout`` event and exits 3); the runner's deadline is
that plus :data:`KILL_GRACE_S`, a backstop for a peer that cannot even do that.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import importlib.metadata
import json
import os
import platform
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.integration.cpp_peer.peer import CPP_LOCK_TIMEOUT

REPO_ROOT = Path(__file__).resolve().parents[3]
PEER_MODULE = "tests.integration.cpp_peer.peer"
BINDING_DIST = "rocketmq"
BINDING_VERSION = "0.4.4"
INSTALL_HINT = "run scripts/install-cpp-client.sh"

#: Seconds the runner waits past the peer's own ``--timeout`` before killing it: more than the peer may
#: take past it (2 s margin for a push consumer, then its 5 s shutdown allowance plus 2 s).
KILL_GRACE_S = 15.0
#: Characters of stderr and of the native log kept for failure messages.
TAIL_CHARS = 8000

# Exit codes of peer.py (kept here too so that importing the runner never imports the peer's binding).
EXIT_OK = 0
EXIT_USAGE = 2
EXIT_TIMEOUT = 3
EXIT_CLIENT_ERROR = 4
EXIT_NO_LIBRARY = 5
EXIT_INCOMPLETE = 6
EXIT_ORPHANED = 7
PARENT_PID_ENV = "CPP_PEER_PARENT_PID"


class PeerFailed(AssertionError):
    """A peer run did not end with exit code 0 and a ``done`` line; the message says what happened."""


class PeerClientContention(PeerFailed):
    """The C++ client tripped over one of its own faults during the run (:func:`failure_cause`), which no
    server answer causes: rocketmq-client-cpp 1.2.x then gives up on a request whose answer may still come
    (and resends it elsewhere), so what the run reports says nothing about the servers. The suite reruns
    such a test once (``--only-rerun`` in scripts/test.sh); every other peer failure fails at once."""


#: What it logs when a synchronous request ended without an answer ...
CPP_NO_ANSWER = "wait response timeout or get NULL response"
#: ... and, before that, only when the wait really timed out.
CPP_WAIT_TIMED_OUT = re.compile(r"waitResponse of code:\d+ with opaque:\d+ timeout")


def client_fault(native_log: str) -> str | None:
    """The C++ client's own fault that makes a run's outcome meaningless, if its log shows one.

    ``ResponseFuture::waitResponse`` waits on a condition variable once, without a predicate: a spurious
    wake-up returns "no answer" at once although the request went out (and may be stored), and the client
    then closes the connection and resends elsewhere -- a duplicate, or an ordered message out of its queue,
    whatever the servers did. Such a wake-up shows as a no-answer line without the timeout line a real
    timeout logs first.
    """
    if native_log.count(CPP_NO_ANSWER) > len(CPP_WAIT_TIMED_OUT.findall(native_log)):
        return "a request ended without an answer before its timeout (a spurious wake-up)"
    return None


def failure_cause(native_log: str) -> str | None:
    """Why the C++ client may have failed a run by itself: :func:`client_fault`, or its connection-table
    lock "timing out" -- in this build that happens at once on any contention (the client logs it in
    runs that succeed too), and the request then fails without reaching a server."""
    fault = client_fault(native_log)
    if fault is None and CPP_LOCK_TIMEOUT in native_log:
        return "its connection-table lock timed out"
    return fault


@dataclasses.dataclass(frozen=True)
class SendOutcome:
    """One ``send_result`` line: a SendResult as the C API reports it (no queue id: the C struct has none)."""

    index: int
    status: str
    msg_id: str
    offset: int
    selected_queue: int | None = None
    queue_count: int | None = None
    batch_size: int | None = None

    @classmethod
    def from_event(cls, event: Mapping[str, Any]) -> SendOutcome:
        return cls(
            index=int(event["index"]),
            status=str(event["status"]),
            msg_id=str(event["msg_id"]),
            offset=int(event["offset"]),
            selected_queue=event.get("selected_queue"),
            queue_count=event.get("queue_count"),
            batch_size=event.get("batch_size"),
        )


@dataclasses.dataclass(frozen=True)
class ReceivedMessage:
    """One ``message`` line: what the C++ consumer saw. ``body_exact`` is False when a body with NUL bytes
    could only be read up to its first NUL (see ``peer.read_body``)."""

    topic: str
    queue_id: int
    queue_offset: int
    msg_id: str
    tags: str | None
    keys: str | None
    properties: dict[str, str]
    body: bytes
    body_exact: bool
    reconsume_times: int
    delay_time_level: int
    store_size: int
    born_timestamp: int
    store_timestamp: int
    commit_log_offset: int
    consume_status: str | None

    @classmethod
    def from_event(cls, event: Mapping[str, Any]) -> ReceivedMessage:
        return cls(
            topic=str(event["topic"]),
            queue_id=int(event["queue_id"]),
            queue_offset=int(event["queue_offset"]),
            msg_id=str(event["msg_id"]),
            tags=event.get("tags"),
            keys=event.get("keys"),
            properties=dict(event.get("properties") or {}),
            body=base64.b64decode(event["body_b64"]),
            body_exact=bool(event.get("body_exact", True)),
            reconsume_times=int(event["reconsume_times"]),
            delay_time_level=int(event["delay_time_level"]),
            store_size=int(event["store_size"]),
            born_timestamp=int(event["born_timestamp"]),
            store_timestamp=int(event["store_timestamp"]),
            commit_log_offset=int(event["commit_log_offset"]),
            consume_status=event.get("consume_status"),
        )


@dataclasses.dataclass
class PeerResult:
    """How one peer run ended and everything it printed."""

    command: str
    argv: list[str]
    pid: int
    returncode: int
    events: list[dict[str, Any]]
    noise: list[str]
    stderr: str
    native_log: str
    killed: bool
    elapsed_s: float
    #: Which peer ran ("cpp peer", "java peer", "go peer"), for messages.
    name: str = "cpp peer"
    #: The whole native log (``native_log`` is its tail), written out when a check fails.
    native_log_whole: str = dataclasses.field(default="", repr=False)
    #: The C++ client's own fault that makes this run's outcome meaningless (:func:`client_fault`).
    fault: str | None = None
    #: What may have made the C++ client fail this run by itself (:func:`failure_cause`).
    own_failure_cause: str | None = None

    def of(self, event: str) -> list[dict[str, Any]]:
        return [e for e in self.events if e.get("event") == event]

    @property
    def done(self) -> dict[str, Any] | None:
        found = self.of("done")
        return found[-1] if found else None

    @property
    def errors(self) -> list[dict[str, Any]]:
        """``error`` and ``timeout`` lines, in order."""
        return [e for e in self.events if e.get("event") in ("error", "timeout")]

    @property
    def ok(self) -> bool:
        return self.returncode == EXIT_OK and self.done is not None and not self.killed

    def send_results(self) -> list[SendOutcome]:
        return [SendOutcome.from_event(e) for e in self.of("send_result")]

    def messages(self, *, acknowledged_only: bool = True) -> list[ReceivedMessage]:
        """Received messages; push deliveries answered RECONSUME_LATER are left out unless asked for."""
        found = [ReceivedMessage.from_event(e) for e in self.of("message")]
        if acknowledged_only:
            found = [m for m in found if m.consume_status in (None, "CONSUME_SUCCESS")]
        return found

    def describe(self) -> str:
        """A readable account for assertion messages: exit, errors, stderr and native log tails."""
        if self.killed:
            how = f"killed by the runner after {self.elapsed_s:.1f}s"
        elif self.returncode < 0:
            how = f"died of signal {signal.Signals(-self.returncode).name}"
        else:
            how = f"exited {self.returncode}"
        lines = [f"{self.name} {self.command} (pid {self.pid}) {how}: {' '.join(self.argv)}"]
        lines += [f"  {e.get('event')}: {json.dumps(e, ensure_ascii=False)}" for e in self.errors]
        if self.done is None:
            lines.append("  no 'done' line")
        if self.noise:
            lines.append("  non-JSON stdout: " + " | ".join(self.noise[-5:]))
        if self.stderr.strip():
            lines.append("  stderr (tail):\n" + _indent(self.stderr[-2000:]))
        if self.native_log.strip() and not self.ok:
            lines.append("  native log (tail):\n" + _indent(self.native_log[-2000:]))
        if self.own_failure_cause is not None:
            lines.append(f"  the C++ client's own trouble: {self.own_failure_cause}")
        return "\n".join(lines)

    def check(self) -> PeerResult:
        """Returns self if the run succeeded, else raises :class:`PeerFailed` with :meth:`describe`."""
        if not self.ok:
            failure = PeerClientContention if self.own_failure_cause is not None else PeerFailed
            raise failure(self.describe() + self.keep_native_log())
        return self

    def keep_native_log(self) -> str:
        """Writes the whole native log to a file of its own (its tail rarely shows the first error);
        returns a line naming it, for a failure message."""
        if not self.native_log_whole:
            return ""
        handle, name = tempfile.mkstemp(prefix=f"{self.name.replace(' ', '-')}-{self.pid}-", suffix=".log")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(self.native_log_whole)
        return f"\n  whole native log: {name}"


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.rstrip().splitlines())


def process_gone(pid: int) -> bool:
    """True when no process has this pid (a zombie still counts as present)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def group_gone(pgid: int) -> bool:
    """True when no process is left in this process group."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


_registry_lock = threading.Lock()
_running: dict[int, PeerProcess] = {}
_started_pids: list[int] = []


def started_pids() -> list[int]:
    """Pids of every peer started in this process, in order (for leak checks)."""
    with _registry_lock:
        return list(_started_pids)


def kill_all(since: int = 0) -> list[int]:
    """Finishes (kills and reaps) every peer not finished yet; returns the pids, among the peers started
    from number ``since`` on (see :func:`started_pids`), whose process or group is still there."""
    with _registry_lock:
        peers = list(_running.values())
    for peer in peers:
        peer.kill()
    return [pid for pid in started_pids()[since:] if not (process_gone(pid) and group_gone(pid))]


class PeerProcess:
    """One running peer. Use as a context manager, or call :meth:`finish` (which always kills and reaps).

    ``wait_for`` lets a test synchronise with a background consumer (``ready``) before it sends.
    """

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        namesrv: str | None = None,
        stdin: str | bytes | None = None,
        timeout: float = 30.0,
        python: str | None = None,
        log_dir: Path | None = None,
        env: Mapping[str, str] | None = None,
        program: Sequence[str] | None = None,
        name: str = "cpp peer",
    ) -> None:
        self.command = command
        self.timeout = timeout
        self.name = name
        # Any peer program speaking this protocol (the Java and Go peers too); the C++ one by default.
        self._program = (
            list(program) if program is not None else [python or sys.executable, "-m", PEER_MODULE]
        )
        self.argv = [*self._program, command]
        if namesrv is not None:
            self.argv += ["--namesrv", namesrv]
        self.argv += [*args, "--timeout", str(timeout)]
        self._stdin = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
        self._own_log_dir = log_dir is None
        self.log_dir = log_dir or Path(tempfile.mkdtemp(prefix="cpp-peer-"))
        self._env = dict(os.environ if env is None else env)
        self._env["HOME"] = str(self.log_dir)
        self._env["PYTHONUNBUFFERED"] = "1"
        self._env[PARENT_PID_ENV] = str(os.getpid())  # the peer exits if this process goes away
        self._events: list[dict[str, Any]] = []
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._noise: list[str] = []
        self._stderr = bytearray()
        self._threads: list[threading.Thread] = []
        self._proc: subprocess.Popen[bytes] | None = None
        self._started = 0.0
        self._result: PeerResult | None = None

    @property
    def pid(self) -> int:
        if self._proc is None:
            raise RuntimeError("peer not started")
        return self._proc.pid

    def start(self) -> PeerProcess:
        self._started = time.monotonic()
        self._proc = subprocess.Popen(
            self.argv,
            cwd=REPO_ROOT,
            env=self._env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group, so the whole group can be killed
        )
        with _registry_lock:
            _running[self._proc.pid] = self
            _started_pids.append(self._proc.pid)
        self._spawn(self._feed, "stdin")
        self._spawn(self._read_stdout, "stdout")
        self._spawn(self._read_stderr, "stderr")
        return self

    def _spawn(self, target: Any, name: str) -> None:
        thread = threading.Thread(target=target, name=f"peer-{self.pid}-{name}", daemon=True)
        thread.start()
        self._threads.append(thread)

    def _feed(self) -> None:
        assert self._proc is not None and self._proc.stdin is not None
        with contextlib.suppress(OSError):  # the peer may exit without reading: a broken pipe is fine
            if self._stdin:
                self._proc.stdin.write(self._stdin)
            self._proc.stdin.close()

    def _read_stdout(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None
        try:
            for raw in self._proc.stdout:
                line = raw.decode("utf-8", "replace").strip()
                if not line:
                    continue
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:
                    self._noise.append(line)
                    continue
                if isinstance(event, dict) and "event" in event:
                    self._events.append(event)
                    self._queue.put(event)
                else:
                    self._noise.append(line)
        finally:
            self._queue.put(None)  # end of stream

    def _read_stderr(self) -> None:
        assert self._proc is not None and self._proc.stderr is not None
        fd = self._proc.stderr.fileno()
        for chunk in iter(lambda: os.read(fd, 65536), b""):
            self._stderr += chunk
            if len(self._stderr) > 4 * TAIL_CHARS:
                del self._stderr[: -2 * TAIL_CHARS]

    def _deadline(self) -> float:
        return self._started + self.timeout + KILL_GRACE_S

    def events(self, timeout: float | None = None) -> Iterator[dict[str, Any]]:
        """Yields events as they arrive until the stream ends or ``timeout`` seconds pass."""
        end = min(self._deadline(), time.monotonic() + timeout) if timeout is not None else self._deadline()
        while True:
            remaining = end - time.monotonic()
            if remaining <= 0:
                return
            try:
                event = self._queue.get(timeout=remaining)
            except queue.Empty:
                return
            if event is None:
                self._queue.put(None)  # keep the end marker for later readers
                return
            yield event

    def wait_for(self, event: str, timeout: float = 30.0) -> dict[str, Any]:
        """The next ``event`` line; raises :class:`PeerFailed` if the peer ends or errs first."""
        for found in self.events(timeout):
            if found.get("event") == event:
                return found
            if found.get("event") in ("error", "timeout", "done"):
                break
        raise PeerFailed(f"no {event!r} line within {timeout}s\n" + self.finish().describe())

    def _exited(self) -> bool:
        """Whether the leader has exited, without reaping it (so its pid and group id stay reserved)."""
        assert self._proc is not None
        if self._proc.returncode is not None:
            return True
        try:
            info = os.waitid(os.P_PID, self._proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return info is not None

    def _kill_group(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)

    def finish(self, timeout: float | None = None) -> PeerResult:
        """Waits for the peer to exit (at most ``timeout`` seconds, else until its deadline), then kills its
        process group, reaps it and returns what it printed. Safe to call more than once."""
        if self._result is not None:
            return self._result
        if self._proc is None:
            raise RuntimeError("peer not started")
        end = self._deadline() if timeout is None else min(self._deadline(), time.monotonic() + timeout)
        killed = False
        while not self._exited():
            if time.monotonic() >= end:
                killed = True
                break
            time.sleep(0.02)
        self._kill_group()
        returncode = self._proc.wait()
        for thread in self._threads:
            thread.join(timeout=5.0)
        for stream in (self._proc.stdin, self._proc.stdout, self._proc.stderr):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        native_log = _native_log(self.log_dir)
        self._result = PeerResult(
            command=self.command,
            argv=self.argv[len(self._program) :],
            name=self.name,
            pid=self._proc.pid,
            returncode=returncode,
            events=list(self._events),
            noise=list(self._noise),
            stderr=self._stderr.decode("utf-8", "replace")[-TAIL_CHARS:],
            native_log=native_log[-TAIL_CHARS:],
            native_log_whole=native_log,
            fault=client_fault(native_log),
            own_failure_cause=failure_cause(native_log),
            killed=killed,
            elapsed_s=time.monotonic() - self._started,
        )
        if self._own_log_dir:
            shutil.rmtree(self.log_dir, ignore_errors=True)
        with _registry_lock:
            _running.pop(self._proc.pid, None)
        return self._result

    def kill(self) -> PeerResult:
        """Ends the peer now."""
        return self.finish(timeout=0)

    def __enter__(self) -> PeerProcess:
        if self._proc is None:
            self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.kill()


def _native_log(log_dir: Path) -> str:
    """The C++ client's log of this run (its last two files: it rolls them)."""
    logs = sorted((log_dir / "logs" / "rocketmq-cpp").glob("*.log*"), key=lambda p: p.stat().st_mtime)
    return "".join(p.read_text("utf-8", "replace") for p in logs[-2:])


def run_peer(
    command: str,
    args: Sequence[str] = (),
    *,
    namesrv: str | None = None,
    stdin: str | bytes | None = None,
    timeout: float = 30.0,
    log_dir: Path | None = None,
) -> PeerResult:
    """Runs one peer command to the end and returns its result (never raises for a failed run)."""
    with PeerProcess(command, args, namesrv=namesrv, stdin=stdin, timeout=timeout, log_dir=log_dir) as peer:
        return peer.finish()


# ----------------------------------------------------------------------------------------- message specs


def message(
    body: str | bytes = "",
    *,
    topic: str | None = None,
    tags: str | None = None,
    keys: str | Sequence[str] | None = None,
    properties: Mapping[str, str] | None = None,
    delay_level: int | None = None,
    sharding_key: int | None = None,
) -> dict[str, Any]:
    """A message spec for ``send-*`` commands; bytes bodies travel as base64 (any bytes, NULs included)."""
    spec: dict[str, Any] = {}
    if topic is not None:
        spec["topic"] = topic
    if isinstance(body, bytes):
        spec["body_b64"] = base64.b64encode(body).decode("ascii")
    else:
        spec["body"] = body
    if tags is not None:
        spec["tags"] = tags
    if keys is not None:
        spec["keys"] = keys if isinstance(keys, str) else list(keys)
    if properties:
        spec["properties"] = dict(properties)
    if delay_level is not None:
        spec["delay_level"] = delay_level
    if sharding_key is not None:
        spec["sharding_key"] = sharding_key
    return spec


# --------------------------------------------------------------------------------------------- availability


def binding_unavailable_reason(timeout: float = 60.0) -> str | None:
    """None when the pinned C++ client can be used from this interpreter, else exactly what is missing.

    The package is looked up here; the native library is loaded only in a peer process (``probe``), so a
    broken library cannot take the test process down.
    """
    try:
        version = importlib.metadata.version(BINDING_DIST)
    except importlib.metadata.PackageNotFoundError:
        return f"PyPI package {BINDING_DIST}=={BINDING_VERSION} not installed ({INSTALL_HINT})"
    if version != BINDING_VERSION:
        return f"PyPI package {BINDING_DIST} is {version}, the tests need {BINDING_VERSION} ({INSTALL_HINT})"
    if sys.platform != "linux" or platform.machine() != "x86_64":
        return f"{BINDING_DIST}=={BINDING_VERSION} ships librocketmq.so for Linux x86_64 only"
    result = run_peer("probe", timeout=timeout)
    if result.ok and result.of("library"):
        return None
    first = result.errors[0] if result.errors else None
    detail = f"{first.get('error_type')}: {first.get('message')}" if first else result.describe()
    return f"{BINDING_DIST}=={BINDING_VERSION} is installed but its native library does not load: {detail}"


# ------------------------------------------------------------------------------------------------ clients


def _consume_args(
    group: str, topic: str, expression: str, properties: Sequence[str], extra: Sequence[str]
) -> list[str]:
    args = ["--group", group, "--topic", topic, "--expression", expression]
    for name in properties:
        args += ["--property", name]
    return [*args, *extra]


class PeerClient:
    """One peer program speaking this protocol, as tests use it; every method starts its own process.

    ``program`` is the peer's argv before the command (None: the C++ peer, ``python -m ...peer``); the Java
    and Go peers speak the same protocol from another program. ``close`` kills whatever is still running
    from this client and reports any pid still alive.
    """

    def __init__(
        self,
        name: str = "cpp peer",
        program: Sequence[str] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.name = name
        self.program = list(program) if program is not None else None
        self.env = dict(env) if env is not None else None
        self._mark = len(started_pids())

    message = staticmethod(message)

    def program_argv(self) -> list[str] | None:
        """The argv before the command, for the next process started (the Java peer's varies by run)."""
        return self.program

    def process(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        namesrv: str | None = None,
        stdin: str | bytes | None = None,
        timeout: float = 30.0,
        log_dir: Path | None = None,
    ) -> PeerProcess:
        """A peer not started yet (``start()`` it, or use it as a context manager)."""
        return PeerProcess(
            command,
            args,
            namesrv=namesrv,
            stdin=stdin,
            timeout=timeout,
            log_dir=log_dir,
            env=self.env,
            program=self.program_argv(),
            name=self.name,
        )

    def run(
        self,
        command: str,
        args: Sequence[str] = (),
        *,
        namesrv: str | None = None,
        stdin: str | bytes | None = None,
        timeout: float = 30.0,
        log_dir: Path | None = None,
    ) -> PeerResult:
        """Runs one command to the end and returns its result (never raises for a failed run)."""
        peer = self.process(command, args, namesrv=namesrv, stdin=stdin, timeout=timeout, log_dir=log_dir)
        with peer:
            return peer.finish()

    def send(
        self,
        command: str,
        namesrv: str,
        topic: str,
        messages: Sequence[Mapping[str, Any]],
        *,
        group: str | None = None,
        extra: Sequence[str] = (),
        timeout: float = 30.0,
    ) -> PeerResult:
        """``send-sync`` / ``send-oneway`` / ``send-orderly`` / ``send-batch`` (the Java and Go peers also
        ``send-async`` and ``send-transaction``) of ``messages`` (specs from :func:`message`), in order,
        through one producer."""
        args = ["--topic", topic, "--spec", "-"]
        if group is not None:
            args += ["--group", group]
        stdin = json.dumps(list(messages))
        result = self.run(command, [*args, *extra], namesrv=namesrv, stdin=stdin, timeout=timeout)
        if result.fault is not None:
            # The client resent what may already be stored: duplicates and order say nothing of the servers.
            raise PeerClientContention(result.describe() + result.keep_native_log())
        return result

    def send_sync(
        self, namesrv: str, topic: str, messages: Sequence[Mapping[str, Any]], **kw: Any
    ) -> PeerResult:
        return self.send("send-sync", namesrv, topic, messages, **kw)

    def send_oneway(
        self, namesrv: str, topic: str, messages: Sequence[Mapping[str, Any]], **kw: Any
    ) -> PeerResult:
        return self.send("send-oneway", namesrv, topic, messages, **kw)

    def send_orderly(
        self,
        namesrv: str,
        topic: str,
        messages: Sequence[Mapping[str, Any]],
        sharding_key: int = 0,
        **kw: Any,
    ) -> PeerResult:
        """Orderly sends: each message goes to queue ``sharding_key % queue count`` (a spec's own
        ``sharding_key`` wins)."""
        extra = ["--sharding-key", str(sharding_key), *kw.pop("extra", ())]
        return self.send("send-orderly", namesrv, topic, messages, extra=extra, **kw)

    def send_batch(
        self,
        namesrv: str,
        topic: str,
        messages: Sequence[Mapping[str, Any]],
        batch_size: int = 0,
        **kw: Any,
    ) -> PeerResult:
        extra = ["--batch-size", str(batch_size), *kw.pop("extra", ())]
        return self.send("send-batch", namesrv, topic, messages, extra=extra, **kw)

    def start_push_consumer(
        self,
        namesrv: str,
        group: str,
        topic: str,
        count: int,
        *,
        expression: str = "*",
        properties: Sequence[str] = (),
        extra: Sequence[str] = (),
        timeout: float = 60.0,
        log_dir: Path | None = None,
    ) -> PeerProcess:
        """A push consumer in the background: ``wait_for("ready")``, produce, then ``finish()``."""
        args = _consume_args(group, topic, expression, properties, ["--count", str(count), *extra])
        return self.process("push-consume", args, namesrv=namesrv, timeout=timeout, log_dir=log_dir).start()

    def push_consume(self, namesrv: str, group: str, topic: str, count: int, **kw: Any) -> PeerResult:
        with self.start_push_consumer(namesrv, group, topic, count, **kw) as peer:
            return peer.finish()

    def pull_consume(
        self,
        namesrv: str,
        group: str,
        topic: str,
        *,
        count: int = 0,
        expression: str = "*",
        properties: Sequence[str] = (),
        extra: Sequence[str] = (),
        timeout: float = 30.0,
    ) -> PeerResult:
        """Pulls every queue of ``topic`` from offset 0 until each says NO_NEW_MSG (or ``count`` messages)."""
        args = _consume_args(group, topic, expression, properties, ["--count", str(count), *extra])
        return self.run("pull-consume", args, namesrv=namesrv, timeout=timeout)

    def pids(self) -> list[int]:
        """Pids of the peers started since this client was made."""
        return started_pids()[self._mark :]

    def close(self) -> list[int]:
        """Kills this client's unfinished peers; returns the pids that are somehow still alive."""
        return kill_all(self._mark)


class CppClient(PeerClient):
    """Apache's C++ client: ``peer.py`` over PyPI's ``rocketmq`` 0.4.4."""

    def __init__(self) -> None:
        super().__init__("cpp peer")
