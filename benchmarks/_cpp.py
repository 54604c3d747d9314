"""What ``producer.py`` and ``broker.py`` share to put Apache's C++ client next to the project's: the
project's NameServer and Broker as child processes (``rmq namesrv`` / ``rmq broker``, stopped by pid), a
topic routed through them, and timed sends of the C++ producer through the ``tests/integration/cpp_peer``
runner.

The C++ peer prints one JSON line per SendResult; a run is timed from its first result to its last, as seen
by this process, so start-up, the route lookup and the first connection are left out (as the project's
producer leaves them out with a warm-up send). Each result still crosses the peer's Python ctypes binding
and a JSON line, which the figures include.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import json
import os
import re
import signal
import sys
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path

from admin import Admin, TopicNotFoundError
from tests.integration.cpp_peer import runner

REPO_ROOT = Path(__file__).resolve().parents[1]

_NAMESRV_UP = re.compile(r"NameServer .*listening on (\S+:\d+)")
_BROKER_UP = re.compile(r"serving on (\S+:\d+)")


@contextlib.asynccontextmanager
async def server_process(command: Sequence[str], ready: re.Pattern[str]) -> AsyncIterator[str]:
    """``rmq <command>`` in a child process; yields the address its log line ``ready`` names, and stops it
    by pid (SIGTERM, then SIGKILL after 30 s) however the block ends."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "from cli.main import app; app()",
        *command,
        stderr=asyncio.subprocess.PIPE,
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    drain: asyncio.Task[None] | None = None
    try:
        stderr = process.stderr
        assert stderr is not None
        address = None
        async with asyncio.timeout(30):
            while address is None:
                line = (await stderr.readline()).decode()
                if not line:
                    raise RuntimeError(f"rmq {command[0]} exited before serving")
                found = ready.search(line)
                address = found.group(1) if found else None

        async def discard_log() -> None:  # a full pipe would stall the server
            while await stderr.readline():
                pass

        drain = asyncio.create_task(discard_log())
        yield address
    finally:
        if process.returncode is None:
            os.kill(process.pid, signal.SIGTERM)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(30):
                    await process.wait()
            if process.returncode is None:
                os.kill(process.pid, signal.SIGKILL)
                await process.wait()
        if drain is not None:
            drain.cancel()


def namesrv_process() -> contextlib.AbstractAsyncContextManager[str]:
    return server_process(
        ["namesrv", "--host", "127.0.0.1", "--port", "0", "--log-level", "INFO"], _NAMESRV_UP
    )


def broker_process(
    store: Path, flush: str = "ASYNC", namesrv: str | None = None, extra: Sequence[str] = ()
) -> contextlib.AbstractAsyncContextManager[str]:
    """``extra``: more ``rmq broker`` options (e.g. ``--metrics-port``)."""
    command = ["broker", "--store", str(store), "--host", "127.0.0.1", "--port", "0", "--flush", flush]
    if namesrv is not None:
        command += ["--namesrv", namesrv]
    command += extra
    return server_process([*command, "--log-level", "INFO"], _BROKER_UP)


@contextlib.asynccontextmanager
async def cluster_processes(store: Path, flush: str = "ASYNC") -> AsyncIterator[tuple[str, str]]:
    """A NameServer and a Broker registered with it, each in its own process; yields their addresses."""
    async with namesrv_process() as namesrv, broker_process(store, flush, namesrv) as broker:
        yield namesrv, broker


async def create_topic(namesrv: str, broker: str, topic: str, queues: int) -> None:
    """Creates ``topic`` on the broker at ``broker`` and waits until the NameServer routes it."""
    async with Admin(namesrv) as admin:
        await admin.create_topic(topic, broker_addr=broker, read_queue_nums=queues, write_queue_nums=queues)
        await wait_for_route(admin, topic)


async def wait_for_route(admin: Admin, topic: str, timeout_s: float = 30.0) -> None:
    async with asyncio.timeout(timeout_s):
        while True:
            with contextlib.suppress(TopicNotFoundError):
                await admin.topic_route(topic)
                return
            await asyncio.sleep(0.1)


def unavailable() -> str | None:
    """None when the pinned C++ client runs here, else why not."""
    return runner.binding_unavailable_reason()


def stop_peers() -> list[int]:
    """Kills (by pid, as their process groups) the C++ peers still running, e.g. after Ctrl-C; returns any
    pid still alive."""
    return runner.kill_all()


@dataclasses.dataclass(frozen=True)
class CppRun:
    messages: int  # timed messages (the first result's are left out)
    seconds: float

    @property
    def rate(self) -> float:
        return self.messages / self.seconds


def send_rate(
    namesrv: str, topic: str, count: int, size: int, batch: int = 0, timeout: float = 300.0
) -> CppRun:
    """The C++ producer sends ``count`` messages of ``size`` bytes one by one (``send-sync``), or in batches
    of ``batch`` (``send-batch``); blocks until the peer is done. Raises RuntimeError if any send fails."""
    spec = {"topic": topic, "body_b64": base64.b64encode(b"x" * size).decode("ascii")}
    args = ["--topic", topic, "--spec", "-", "--count", str(count), "--send-timeout-ms", "10000"]
    command = "send-batch" if batch else "send-sync"
    if batch:
        args += ["--batch-size", str(batch)]
    peer = runner.PeerProcess(command, args, namesrv=namesrv, stdin=json.dumps(spec), timeout=timeout).start()
    first: float | None = None
    last = 0.0
    after_first = 0
    try:
        for event in peer.events(timeout):
            kind = event.get("event")
            if kind == "send_result":
                if event.get("status") != "SEND_OK":
                    raise RuntimeError(f"C++ {command}: {event}")
                now = time.perf_counter()
                if first is None:
                    first = now
                else:
                    last = now
                    after_first += int(event.get("batch_size") or 1)
            elif kind in ("error", "timeout", "done"):
                break
    finally:
        result = peer.finish()
    if not result.ok:
        raise RuntimeError(result.describe())
    if first is None or after_first == 0:
        raise RuntimeError(f"C++ {command}: too few results to time")
    return CppRun(after_first, last - first)
