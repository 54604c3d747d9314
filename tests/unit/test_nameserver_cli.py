"""``rmq namesrv`` in a real process: it serves, logs readably, and stops cleanly on SIGTERM."""

from __future__ import annotations

import asyncio
import re
import signal
import sys

from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.transport import RemotingClient

# The command function on its own, as the lead will register it in cli/main.py.
_RUN = "import typer; from cli.namesrv_cmd import namesrv; typer.run(namesrv)"


async def _spawn(*args: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable, "-c", _RUN, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )


async def _wait_for_line(proc: asyncio.subprocess.Process, pattern: str) -> tuple[re.Match[str], list[str]]:
    assert proc.stdout is not None
    seen: list[str] = []
    while True:
        raw = await proc.stdout.readline()
        if not raw:
            raise AssertionError(f"process ended before logging {pattern!r}: {seen}")
        line = raw.decode()
        seen.append(line)
        match = re.search(pattern, line)
        if match:
            return match, seen


async def test_serves_until_sigterm() -> None:
    proc = await _spawn("--port", "0", "--host", "127.0.0.1", "--apache-version", "4.9.8")
    try:
        match, _ = await asyncio.wait_for(
            _wait_for_line(proc, r"behaving as Apache 4\.9\.8\) listening on 127\.0\.0\.1:(\d+)"), 30
        )
        address = f"127.0.0.1:{match.group(1)}"
        async with RemotingClient() as client:
            reply = await client.invoke(
                address, RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO), 3000
            )
        assert (reply.code, reply.body) == (
            ResponseCode.SUCCESS,
            b'{"brokerAddrTable":{},"clusterAddrTable":{}}',
        )
        proc.send_signal(signal.SIGTERM)
        await asyncio.wait_for(_wait_for_line(proc, r"nameserver\.server: shutting down"), 30)
        assert await asyncio.wait_for(proc.wait(), 30) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_rejects_an_unknown_apache_version() -> None:
    proc = await _spawn("--apache-version", "3.2")
    assert proc.stdout is not None
    output = (await asyncio.wait_for(proc.stdout.read(), 30)).decode()
    assert await proc.wait() == 2
    assert "unknown Apache NameServer version" in output
