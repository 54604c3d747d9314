"""``rmq broker`` as a process: it serves, registers, and on SIGTERM unregisters and exits cleanly."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sys
from pathlib import Path

from broker.testing import BrokerClient
from nameserver.server import NameServer
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.headers.namesrv import GetRouteInfoRequestHeader
from rocketmq_wire.transport import RemotingClient

LIMIT_S = 30
_RUN = "import typer; from cli.broker_cmd import broker; typer.run(broker)"
_SERVING = re.compile(r"serving on (\S+:\d+)")


async def _route_code(namesrv: NameServer, topic: str) -> int:
    async with RemotingClient() as client:
        request = RemotingCommand.request(
            RequestCode.GET_ROUTEINFO_BY_TOPIC, GetRouteInfoRequestHeader(topic=topic)
        )
        return (await client.invoke(namesrv.address, request, 3000)).code


async def test_broker_command_serves_registers_and_stops_on_sigterm(tmp_path: Path) -> None:
    async with NameServer("127.0.0.1", 0) as namesrv:
        repo = Path(__file__).resolve().parents[2]
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _RUN,
            "--store",
            str(tmp_path / "store"),
            "--port",
            "0",
            "--host",
            "127.0.0.1",
            "--namesrv",
            namesrv.address,
            "--broker-name",
            "broker-cli",
            stderr=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.DEVNULL,
            cwd=repo,
            env={**os.environ, "PYTHONPATH": str(repo)},
        )
        log: list[str] = []
        try:
            assert process.stderr is not None
            address = None
            async with asyncio.timeout(LIMIT_S):
                while address is None:
                    line = (await process.stderr.readline()).decode()
                    assert line, "the broker exited early:\n" + "".join(log)
                    log.append(line)
                    found = _SERVING.search(line)
                    address = found.group(1) if found else None
                while not any("NameServer" in entry and "registered" in entry for entry in log):
                    line = (await process.stderr.readline()).decode()
                    assert line, "the broker exited early:\n" + "".join(log)
                    log.append(line)
            assert await _route_code(namesrv, "broker-cli") == ResponseCode.SUCCESS
            async with BrokerClient(address) as client:
                assert (await client.send("CliTopic", b"hello")).code == ResponseCode.SUCCESS

            os.kill(process.pid, signal.SIGTERM)
            async with asyncio.timeout(LIMIT_S):
                rest = (await process.stderr.read()).decode()
                code = await process.wait()
            assert code == 0, rest
            assert "shutting down" in rest and "broker broker-cli stopped" in rest
            assert await _route_code(namesrv, "broker-cli") == ResponseCode.TOPIC_NOT_EXIST
        finally:
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(process.pid, signal.SIGKILL)
                await process.wait()
