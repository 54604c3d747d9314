"""``rmq namesrv`` in a real process: it serves, logs readably, and stops cleanly on SIGTERM."""

from __future__ import annotations

import asyncio
import re
import signal
import sys
from pathlib import Path

import pytest

from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.transport import RemotingClient, RemotingError
from rocketmq_wire.transport.tls import TlsConfig

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


async def test_tls_modes_from_the_options_and_a_refusing_enforcing_server(tmp_path: Path) -> None:
    """``--tls-mode enforcing`` serves TLS clients only; without a certificate (test mode off in the
    ``--tls-config`` file) it does not start, and says so in one line."""
    pytest.importorskip("cryptography", reason="TLS test mode's certificate needs the cryptography package")
    proc = await _spawn("--port", "0", "--host", "127.0.0.1", "--tls-mode", "enforcing")
    try:
        match, _ = await asyncio.wait_for(
            _wait_for_line(proc, r"listening on 127\.0\.0\.1:(\d+) \(TLS enforcing\)"), 30
        )
        address = f"127.0.0.1:{match.group(1)}"
        request = RemotingCommand.request(RequestCode.GET_BROKER_CLUSTER_INFO)
        async with RemotingClient(ssl=TlsConfig(enable=True).client_context()) as client:
            assert (await client.invoke(address, request, 3000)).code == ResponseCode.SUCCESS
        async with RemotingClient() as client:
            with pytest.raises(RemotingError):
                await client.invoke(address, request, 3000)
        await asyncio.wait_for(_wait_for_line(proc, r"plain connection from 127\.0\.0\.1:\d+ closed"), 30)
    finally:
        proc.send_signal(signal.SIGTERM)
        await proc.wait()

    properties = tmp_path / "tls.properties"
    properties.write_text("tls.test.mode.enable=false\n")
    refused = await _spawn("--port", "0", "--tls-mode", "enforcing", "--tls-config", str(properties))
    output, _ = await asyncio.wait_for(refused.communicate(), 30)
    assert refused.returncode != 0
    lines = output.decode().strip().splitlines()
    assert len(lines) == 1 and "tls.server.certPath" in lines[0], lines
