"""JVMs that run Apache's mqadmin for one command after another (``rmqit.AdminHost``).

A fresh ``java … MQAdminStartup`` spends about a second of CPU before its command does anything, and the
suite runs mqadmin several hundred times on two cores the servers under test need too. A host JVM runs
``MQAdminStartup.main(args)`` itself, per command, with stdout and stderr written to files of the call:
the command, its output and its exit status are what a fresh mqadmin's would be (see
``tests/integration/java/src/rmqit/AdminHost.java`` for the protocol).

Hosts are kept per argv (release, serialization, JVM options): a command takes an idle one or starts
one, and gives it back when done. A host that exited (mqadmin called ``System.exit``) or timed out is
dropped; one that has run :data:`COMMANDS_PER_HOST` commands retires, so nothing a command leaves behind
piles up. Every host is stopped by pid: its stdin is closed (it exits, writing its class-data archive),
then it is killed if it lingers. ``RMQ_IT_MQADMIN_HOST=0`` starts a JVM per command instead.
"""

from __future__ import annotations

import atexit
import base64
import logging
import os
import select
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from tests.integration.apache.cache import turned_off

log = logging.getLogger("tests.apache.mqadmin_host")

DISABLE_ENV = "RMQ_IT_MQADMIN_HOST"
HOST_MAIN = "rmqit.AdminHost"
COMMANDS_PER_HOST = 200
#: How long a closed host may take to exit (and write its class-data archive) before it is killed.
EXIT_GRACE_S = 20.0
#: Characters of a host's own log added to the stderr of a command that ended it.
LOG_TAIL_CHARS = 4000


def enabled() -> bool:
    return not turned_off(DISABLE_ENV)


class Host:
    """One ``rmqit.AdminHost`` JVM; used by one caller at a time."""

    def __init__(
        self, key: tuple[str, ...], argv: Sequence[str], env: Mapping[str, str], folder: Path
    ) -> None:
        self.key = key
        self.argv = list(argv)
        self.folder = folder
        self.commands = 0
        self._log = (folder / "host.log").open("wb")
        self.process = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=dict(env),
            cwd=folder,
            start_new_session=True,
        )
        self._pending = b""

    def run(self, args: Sequence[str], timeout: float) -> tuple[int, str, str]:
        """(exit status, stdout, stderr) of ``mqadmin ARGS``. Exit status 0 means the command returned;
        otherwise it ended the host. Raises :class:`subprocess.TimeoutExpired` (the host is then killed)."""
        self.commands += 1
        out, err = self.folder / f"{self.commands}.out", self.folder / f"{self.commands}.err"
        fields = [str(out), str(err), *args]
        line = " ".join(base64.b64encode(field.encode()).decode("ascii") for field in fields) + "\n"
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.write(line.encode("ascii"))
            self.process.stdin.flush()
        except (BrokenPipeError, OSError):
            pass  # it exited already: reported below through its status
        finished = self._wait_done(time.monotonic() + timeout)
        if finished is None:
            self.kill()
            stdout, stderr = _read(out), _read(err)
            raise subprocess.TimeoutExpired(self.argv + list(args), timeout, stdout, stderr)
        stdout, stderr = _read(out), _read(err)
        out.unlink(missing_ok=True)
        err.unlink(missing_ok=True)
        if finished:
            return 0, stdout, stderr
        code = self.process.wait()
        self._log.flush()
        stderr += _read(self.folder / "host.log")[-LOG_TAIL_CHARS:]
        return code, stdout, stderr

    def _wait_done(self, deadline: float) -> bool | None:
        """True on the ``done`` line, False when the host exited, None at ``deadline``."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        while b"\n" not in self._pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                continue
            chunk = os.read(fd, 4096)
            if not chunk:
                return False
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        if line != b"done":
            raise RuntimeError(f"mqadmin host {self.process.pid} wrote {line!r}, not 'done'")
        return True

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def close(self) -> None:
        """Ends the host: stdin closed, so it exits (dumping its class-data archive), else SIGKILL."""
        if self.alive and self.process.stdin is not None:
            try:
                self.process.stdin.close()
            except OSError:
                pass
            try:
                self.process.wait(EXIT_GRACE_S)
            except subprocess.TimeoutExpired:
                log.warning(
                    "mqadmin host %d did not exit within %.0f s: killed", self.process.pid, EXIT_GRACE_S
                )
        self.kill()

    def kill(self) -> None:
        if self.alive:
            try:
                os.kill(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        self._log.close()
        shutil.rmtree(self.folder, ignore_errors=True)


def _read(path: Path) -> str:
    try:
        return path.read_text("utf-8", errors="replace")
    except FileNotFoundError:
        return ""


class Pool:
    """Idle hosts by argv; any thread may take one."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: dict[tuple[str, ...], list[Host]] = {}
        self._busy: set[Host] = set()

    def take(self, key: tuple[str, ...], start: Callable[[], Sequence[str]], env: Mapping[str, str]) -> Host:
        """An idle host of ``key``, or a new one running ``start()``'s argv."""
        with self._lock:
            idle = self._idle.get(key, [])
            while idle:
                host = idle.pop()
                if host.alive:
                    self._busy.add(host)
                    return host
                host.kill()
        folder = Path(tempfile.mkdtemp(prefix="mqadmin-host-"))
        host = Host(key, start(), env, folder)
        log.debug("mqadmin host %d started for %s", host.process.pid, key)
        with self._lock:
            self._busy.add(host)
        return host

    def give_back(self, host: Host) -> None:
        with self._lock:
            self._busy.discard(host)
            keep = host.alive and host.commands < COMMANDS_PER_HOST
            if keep:
                self._idle.setdefault(host.key, []).append(host)
        if not keep:
            host.close()

    def drop(self, host: Host) -> None:
        with self._lock:
            self._busy.discard(host)
        host.kill()

    def _every_host(self) -> list[Host]:
        """Idle and busy; the caller holds the lock."""
        return [h for hosts in self._idle.values() for h in hosts] + list(self._busy)

    def pids(self) -> set[int]:
        """The pids of the hosts running for this process, idle or busy."""
        with self._lock:
            return {h.process.pid for h in self._every_host()}

    def close(self) -> None:
        """Stops every host, idle or busy (a busy one's caller then sees it exit)."""
        with self._lock:
            hosts = self._every_host()
            self._idle.clear()
            self._busy.clear()
        for host in hosts:
            host.close()


POOL = Pool()
atexit.register(POOL.close)


def run(
    key: tuple[str, ...],
    start: Callable[[], Sequence[str]],
    env: Mapping[str, str],
    args: Sequence[str],
    timeout: float,
) -> tuple[int, str, str]:
    """``mqadmin ARGS`` in a host of ``key``; ``start()`` gives the ``java … rmqit.AdminHost`` argv of a
    new one (built per start: it may carry a class-data dump of its own)."""
    host = POOL.take(key, start, env)
    try:
        result = host.run(args, timeout)
    except BaseException:
        POOL.drop(host)
        raise
    POOL.give_back(host)
    return result
