"""What one cluster start-up owns: its folders, its processes and containers, and how to undo each.

Launchers add what they start to a :class:`Launch`; :meth:`Launch.stop` undoes it in reverse order and
returns a description of anything left running, so the fixture can fail loudly instead of leaking servers.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.integration.clusters.processes import ManagedProcess, StartupError

log = logging.getLogger("tests.clusters.launch")


@dataclasses.dataclass(frozen=True)
class NamesrvEndpoint:
    """A started NameServer: ``addr`` is where this host reaches it; ``internal_addr`` where containers on
    its Docker network (``docker_network``, a testcontainers ``Network``) do; both None unless it runs in
    Docker."""

    addr: str
    version: str
    internal_addr: str | None = None
    docker_network: Any = None


class Launch:
    """Folders (``work_dir`` for stores and configs, ``logs_dir`` for output) and the undo list."""

    def __init__(self, work_dir: Path, logs_dir: Path) -> None:
        self.work_dir = work_dir
        self.logs_dir = logs_dir
        self.processes: list[ManagedProcess] = []
        self._undo: list[tuple[str, Callable[[bool], list[str]]]] = []
        self._liveness: list[Callable[[], None]] = []

    def process(
        self,
        name: str,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        grace_s: float = 10.0,
        kill_on_discard: bool = False,
    ) -> ManagedProcess:
        """Start ``argv`` as a managed process logging to ``logs_dir/<name>.log``; stopped by :meth:`stop`.

        ``kill_on_discard``: when the launch is stopped for good (``stop(discard=True)``), SIGKILL at once
        instead of SIGTERM and ``grace_s``. For Apache's servers, whose shutdown hooks spend 10-17 s
        flushing and unregistering for a store that is deleted next; the project's servers keep SIGTERM,
        so every teardown also checks that they stop cleanly.
        """
        process = ManagedProcess(name, argv, self.logs_dir / f"{name}.log", env=env, cwd=cwd).start()
        self.processes.append(process)

        def stop(discard: bool) -> list[str]:
            grace = 0.0 if discard and kill_on_discard else grace_s
            return [f"{name}: pid {p.pid} still exists" for p in process.stop(grace)]

        self.on_stop(name, stop)
        self.on_check(lambda: _check_process(process))
        return process

    def on_stop(self, what: str, undo: Callable[[bool], list[str]]) -> None:
        """``undo(discard)`` runs at stop (last registered first) and returns descriptions of what it left
        behind; ``discard`` is :meth:`stop`'s."""
        self._undo.append((what, undo))

    def on_check(self, check: Callable[[], None]) -> None:
        """``check`` raises :class:`StartupError` when something this launch started has died."""
        self._liveness.append(check)

    def check_alive(self) -> None:
        for check in self._liveness:
            check()

    def stop(self, *, discard: bool = False) -> list[str]:
        """Undo everything started, last first. ``discard``: the caller deletes the stores next, so
        processes that allow it are killed rather than shut down (see :meth:`process`)."""
        leftovers: list[str] = []
        while self._undo:
            what, undo = self._undo.pop()
            try:
                leftovers.extend(undo(discard))
            except Exception as exc:  # keep undoing the rest; report this as a leftover
                log.exception("stopping %s failed", what)
                leftovers.append(f"{what}: stopping failed: {exc!r}")
        return leftovers


def _check_process(process: ManagedProcess) -> None:
    if process.exited():
        raise StartupError(f"{process.name} exited: {process.describe()}")
