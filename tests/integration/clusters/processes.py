"""Server processes the cluster fixture launches: started in their own session, stopped by pid, verified gone.

Apache's launch scripts do not ``exec`` Java (``mqbroker`` runs ``sh runbroker.sh``, which runs ``java``), so
the pid :mod:`subprocess` knows is a shell and Java is its grandchild. Each server therefore starts as the
leader of a new process group; every member of that group is recorded (pid *and* start time, so a reused pid
is never mistaken for ours), signalled by pid on stop, and checked with ``os.kill(pid, 0)`` afterwards.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import random
import re
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Self

log = logging.getLogger("tests.clusters.processes")

#: How often waiting loops look again at the condition they wait for.
POLL_INTERVAL_S = 0.05
#: How long stopped processes that are not our children may take to be reaped by their new parent.
REAP_WAIT_S = 10.0
#: Characters of a log kept in error messages.
TAIL_CHARS = 4000
_PROC = Path("/proc")


class StartupError(RuntimeError):
    """A server did not come up in time, or exited while starting; the message carries its log tail."""


@dataclasses.dataclass(frozen=True, order=True)
class ProcessId:
    """A process as this module remembers it: the start time tells a reused pid apart."""

    pid: int
    #: ``/proc/<pid>/stat`` field 22 (clock ticks after boot); 0 where there is no ``/proc``.
    start_time: int


def _stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first), or None when it is gone."""
    try:
        text = (_PROC / str(pid) / "stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    return text[text.rindex(")") + 2 :].split()


def identify(pid: int) -> ProcessId:
    fields = _stat_fields(pid)
    return ProcessId(pid, int(fields[19]) if fields else 0)


def is_running(process: ProcessId) -> bool:
    """True while ``process`` exists and has not exited; a zombie (exited, not yet reaped by its parent) and
    a different process that got the same pid both count as gone."""
    try:
        os.kill(process.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else: certainly not a reused pid of ours, but alive
    if not _PROC.is_dir():
        return True
    fields = _stat_fields(process.pid)
    if fields is None or fields[0] in ("Z", "X"):
        return False
    return process.start_time == 0 or int(fields[19]) == process.start_time


def is_gone(process: ProcessId) -> bool:
    """True once ``os.kill(pid, 0)`` finds no such process (exited *and* reaped), or the pid now belongs to
    a different process."""
    try:
        os.kill(process.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    fields = _stat_fields(process.pid)
    if fields is None:
        return True
    return process.start_time != 0 and int(fields[19]) != process.start_time


def group_members(pgid: int) -> list[ProcessId]:
    """Every live process of process group ``pgid`` (empty where there is no ``/proc``)."""
    if not _PROC.is_dir():
        return []
    members = []
    for entry in _PROC.iterdir():
        if not entry.name.isdigit():
            continue
        fields = _stat_fields(int(entry.name))
        if fields is not None and fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
            members.append(ProcessId(int(entry.name), int(fields[19])))
    return members


def wait_until(condition: Callable[[], bool], deadline: float) -> bool:
    """Poll ``condition`` until it holds or ``deadline`` (a ``time.monotonic()`` value) passes."""
    while True:
        if condition():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(POLL_INTERVAL_S)


def tail(path: Path, chars: int = TAIL_CHARS) -> str:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return f"<{path} does not exist>"
    return data[-chars:].decode("utf-8", "replace")


class ManagedProcess:
    """One server process (and whatever it starts) in its own process group, output into ``log_path``."""

    def __init__(
        self,
        name: str,
        argv: Sequence[str],
        log_path: Path,
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.name = name
        self.argv = list(argv)
        self.log_path = log_path
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self._popen: subprocess.Popen[bytes] | None = None
        self._known: set[ProcessId] = set()

    def start(self) -> Self:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as out:
            out.write(f"$ {' '.join(self.argv)}\n".encode())
            out.flush()
            self._popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env,
                cwd=self.cwd,
                start_new_session=True,
            )
        self._known.add(identify(self._popen.pid))
        log.info("%s started as pid %d: %s", self.name, self._popen.pid, " ".join(self.argv))
        return self

    @property
    def popen(self) -> subprocess.Popen[bytes]:
        if self._popen is None:
            raise RuntimeError(f"{self.name} was never started")
        return self._popen

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def pids(self) -> list[ProcessId]:
        """Every process of this server seen so far (the leader and the members of its group)."""
        self.track_group()
        return sorted(self._known)

    def exited(self) -> bool:
        """True once the leader has exited (it is reaped here)."""
        return self.popen.poll() is not None

    def track_group(self) -> None:
        """Remember the group's current members; only while the leader is unreaped, so that its pid (the
        group id) cannot belong to anyone else yet."""
        if self._popen is not None and self._popen.returncode is None:
            self._known.update(group_members(self._popen.pid))

    def running(self) -> list[ProcessId]:
        self.track_group()
        return [p for p in sorted(self._known) if is_running(p)]

    def log_text(self) -> str:
        try:
            return self.log_path.read_text("utf-8", "replace")
        except FileNotFoundError:
            return ""

    def describe(self) -> str:
        code = self.popen.returncode
        state = "running" if code is None else f"exited with {code}"
        return f"{self.name} (pid {self.pid}, {state}); log {self.log_path}:\n{tail(self.log_path)}"

    def wait_for_output(
        self, pattern: re.Pattern[str], deadline: float, also: Sequence[Path] = ()
    ) -> re.Match[str]:
        """The first match of ``pattern`` in the process's output (or in the files ``also``), polled until
        ``deadline``; raises :class:`StartupError` when the process exits first or time runs out."""
        while True:
            self.track_group()
            # Whether it had exited is settled before its output is read: a process that prints and exits
            # between the read and the check would otherwise be taken for one that never printed.
            gone = self.exited()
            for text in [self.log_text(), *(p.read_text("utf-8", "replace") for p in also if p.exists())]:
                found = pattern.search(text)
                if found:
                    return found
            if gone:
                raise StartupError(
                    f"{self.name} exited before printing {pattern.pattern!r}: {self.describe()}"
                )
            if time.monotonic() >= deadline:
                raise StartupError(
                    f"{self.name} did not print {pattern.pattern!r} in time: {self.describe()}"
                )
            time.sleep(POLL_INTERVAL_S)

    def _signal(self, sig: signal.Signals) -> None:
        self.track_group()
        if self._popen is not None and self._popen.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._popen.pid, sig)
        for process in sorted(self._known):
            if is_running(process):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, sig)

    def stop(self, grace_s: float) -> list[ProcessId]:
        """SIGTERM to every process of this server, SIGKILL to those still there after ``grace_s`` (at once
        when it is 0); reaps the leader, waits for the others to be reaped, and returns every process
        ``os.kill(pid, 0)`` still finds (an empty list is success)."""
        if self._popen is None:
            return []
        if grace_s <= 0:
            self._signal(signal.SIGKILL)
        else:
            self._signal(signal.SIGTERM)
        if grace_s > 0 and not wait_until(lambda: not self.running(), time.monotonic() + grace_s):
            log.warning("%s did not stop within %.0f s of SIGTERM; killing it", self.name, grace_s)
            self._signal(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._popen.wait(timeout=10)
        # Grandchildren orphaned by their shell are reaped by init, a moment after they exit.
        wait_until(lambda: all(is_gone(p) for p in self._known), time.monotonic() + REAP_WAIT_S)
        survivors = [p for p in sorted(self._known) if not is_gone(p)]
        log.info("%s stopped (exit %s); survivors: %s", self.name, self._popen.returncode, survivors)
        return survivors


#: Test servers listen on ports below the kernel's ephemeral range: every outgoing connection of a client
#: takes a port from that range, the suite's clients make hundreds a minute, and a port picked there could
#: be taken by one of them between the pick and the server's bind (seen in CI: an Apache NameServer and an
#: Apache broker failing to start with "Address already in use").
SERVER_PORTS_FLOOR = 20000
_EPHEMERAL_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
#: Ports this process handed out: a server may not have bound its port yet when the next one is picked.
_handed_out: set[int] = set()
_handed_out_lock = threading.Lock()
#: The operating system's randomness: tests that seed ``random`` must not make two workers pick alike.
_pick = random.SystemRandom()


def _ephemeral_floor() -> int:
    try:
        return int(_EPHEMERAL_RANGE.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def _kernel_pick() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def free_port_block(offsets: Sequence[int] = (-2, 0, 1), attempts: int = 500) -> int:
    """A port ``p`` such that ``p + o`` is free for every offset ``o`` (for an Apache broker: ``listenPort``,
    ``listenPort - 2`` for the VIP channel and ``listenPort + 1`` for HA), below the ephemeral range
    (:data:`SERVER_PORTS_FLOOR`) and not handed out before by this process."""
    low, high = SERVER_PORTS_FLOOR - min(offsets), _ephemeral_floor() - max(offsets)
    for _ in range(attempts):
        base = _pick.randrange(low, high) if high - low > 1000 else _kernel_pick()
        ports = [base + offset for offset in offsets]
        if not all(1024 < port < 65536 for port in ports):
            continue
        with _handed_out_lock:
            if _handed_out.intersection(ports) or not all(port_is_free(port) for port in ports):
                continue
            _handed_out.update(ports)
        return base
    raise RuntimeError(f"found no free port p with p{offsets} all free after {attempts} attempts")


def free_port() -> int:
    """A port free right now on every interface, below the ephemeral range (see :func:`free_port_block`)."""
    return free_port_block((0,))


def port_is_free(port: int) -> bool:
    """True when nothing listens on ``port`` on any interface (Apache 4.x servers bind the wildcard)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True
