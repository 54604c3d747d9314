"""A project broker that can be killed and started again as the same broker (same store, config and port),
for crash and fault scenarios; every process it ever had is remembered, so the test can check them gone."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Mapping, Sequence

from tests.integration.clusters import configs
from tests.integration.clusters.launch import Launch
from tests.integration.clusters.processes import ManagedProcess, ProcessId, free_port, is_gone, wait_until
from tests.integration.clusters.python_servers import GRACE_S, REPO_ROOT, broker_argv, python_env


class RestartableBroker:
    """The broker under test: always the same store, config and port, so a restart is the same broker.

    Not :func:`python_servers.start_broker`, which picks a new port on each call and has no flush setting;
    the processes are still :class:`Launch` processes (own process group, stopped by pid at the end).
    """

    def __init__(
        self,
        launch: Launch,
        namesrv: str,
        *,
        flush: str = "SYNC",
        extra: Mapping[str, str] | None = None,
        store_dir: str | None = None,
        wrapper: Sequence[str] = (),
    ) -> None:
        """``extra``: more broker.conf settings; ``store_dir``: where the store lives (default: in the
        launch's work folder); ``wrapper``: a command the broker runs under (``nsenter`` into a mount
        namespace holding a small file system, say), which must exec the broker so its pid is the broker's."""
        self.launch = launch
        self.port = free_port()
        self.store = store_dir or str(launch.work_dir / "broker-store")
        settings = configs.broker_properties(
            listen_port=self.port,
            namesrv_addr=namesrv,
            store_dir=self.store,
            extra={"listenHost": "127.0.0.1", "flushDiskType": f"{flush}_FLUSH", **(extra or {})},
        )
        self.settings = settings
        config = configs.write_properties(launch.work_dir / "crash-broker.conf", settings)
        self.argv = [
            *wrapper,
            *broker_argv(config, self.store, namesrv, settings, port=self.port, extra=["--flush", flush]),
        ]
        self.starts = 0
        self.current: ManagedProcess | None = None
        #: Every process any incarnation of the broker had (checked gone at the end).
        self.seen: set[ProcessId] = set()

    def start(self) -> ManagedProcess:
        self.starts += 1
        process = self.launch.process(
            f"broker-{self.starts}", self.argv, env=python_env(), cwd=REPO_ROOT, grace_s=GRACE_S
        )
        self.seen.update(process.pids)
        self.current = process
        return process

    def sigkill(self) -> None:
        """SIGKILL every process of the current broker by pid; wait until ``os.kill(pid, 0)`` finds none."""
        process = self.current
        assert process is not None and not process.exited(), "the broker died before it was killed"
        members = process.running()
        self.seen.update(members)
        assert members, "the broker has no running process to kill"
        for member in members:
            os.kill(member.pid, signal.SIGKILL)
        process.popen.wait(timeout=10)
        assert process.popen.returncode == -signal.SIGKILL, f"broker exit {process.popen.returncode}"
        assert wait_until(lambda: all(is_gone(p) for p in members), time.monotonic() + 10), (
            f"killed broker processes still exist: {[p for p in members if not is_gone(p)]}"
        )
        self.current = None

    def check_alive(self) -> None:
        process = self.current
        if process is not None:
            process.track_group()
            self.seen.update(process.pids)
            assert not process.exited(), f"the broker exited by itself: {process.describe()}"
