"""The server's idle timeout (Apache's ``serverChannelMaxIdleTimeSeconds``): a peer that sends half a frame
and goes silent is closed after the configured time; a peer that keeps talking is not. Also how the broker
and the NameServer take the setting from their configurations."""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
import time
from pathlib import Path

import pytest

from broker import Broker
from broker.config import BrokerConfig
from nameserver import NameServer, NamesrvConfig
from nameserver.config import parse_properties
from rocketmq_wire.codes import RequestCode, ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.transport import Connection, RemotingClient, RemotingServer

ECHO = 1001
IDLE = 0.3
BOUND = 5.0


async def echo(request: RemotingCommand, conn: Connection) -> RemotingCommand:
    return request.make_response(ResponseCode.SUCCESS, body=request.body)


async def started(idle: float) -> RemotingServer:
    server = RemotingServer("127.0.0.1", 0, {ECHO: echo}, idle_timeout=idle)
    await server.start()
    return server


def half_a_frame() -> bytes:
    """A length prefix announcing 100 bytes, followed by 10 of them."""
    return struct.pack(">I", 100) + b"\0" * 10


async def test_a_peer_that_stalls_mid_frame_is_closed_after_the_idle_time(
    caplog: pytest.LogCaptureFixture,
) -> None:
    server = await started(IDLE)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(half_a_frame())
        await writer.drain()
        began = time.monotonic()
        with caplog.at_level(logging.WARNING, logger="rocketmq_wire.transport"):
            async with asyncio.timeout(BOUND):
                assert await reader.read() == b""  # the server closed it
        waited = time.monotonic() - began
        # not before the idle time; late by at most one sweep interval (idle / 8) plus scheduling
        assert IDLE * 0.9 <= waited < IDLE * 3, waited
        assert any("idle timeout" in r.getMessage() for r in caplog.records), caplog.text
        async with asyncio.timeout(BOUND):
            while server.connections:
                await asyncio.sleep(0.01)
        assert server.buffered_bytes == 0
        writer.close()
    finally:
        await server.close()


async def test_a_silent_peer_is_closed_and_its_close_reason_says_idle() -> None:
    server = await started(IDLE)
    closed: asyncio.Future[Connection] = asyncio.get_running_loop().create_future()
    server.on_connection_closed(lambda conn: None if closed.done() else closed.set_result(conn))
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", server.port)
        async with asyncio.timeout(BOUND):
            conn = await closed
        assert (conn.close_reason or "").startswith("idle for "), conn.close_reason
        writer.close()
    finally:
        await server.close()


async def test_an_active_connection_is_not_closed() -> None:
    server = await started(IDLE)
    try:
        async with RemotingClient() as client:
            deadline = time.monotonic() + IDLE * 5
            answers = 0
            while time.monotonic() < deadline:
                answer = await client.invoke(server.address, RemotingCommand.request(ECHO, body=b"x"), 1000)
                assert answer.code == ResponseCode.SUCCESS
                answers += 1
                await asyncio.sleep(IDLE / 3)
            (conn,) = server.connections
            assert conn.is_open and answers >= 10
    finally:
        await server.close()


async def test_a_peer_reading_a_long_answer_slowly_is_not_idle() -> None:
    """Nothing is read from the peer and nothing new is written, but the peer keeps taking what was
    written: that is activity (Netty counts a completed write), so the connection stays. Like Netty's,
    the server cannot see the kernel's buffers drain, so the peer's receive buffer is kept small.

    Its own, longer idle time: server and reader share this event loop, and on a machine loaded by the
    integration suite one stall of the loop longer than :data:`IDLE` closed the connection (seen in CI)."""
    big = 8 * 1024 * 1024
    idle = 1.0

    async def large(request: RemotingCommand, conn: Connection) -> RemotingCommand:
        return request.make_response(ResponseCode.SUCCESS, body=b"y" * big)

    server = RemotingServer("127.0.0.1", 0, {ECHO: large}, idle_timeout=idle)
    await server.start()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 * 1024)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", server.port))
    try:
        reader, writer = await asyncio.open_connection(sock=sock, limit=1 << 16)
        writer.write(RemotingCommand.request(ECHO).encode())
        await writer.drain()
        received = 0
        started_at = time.monotonic()
        async with asyncio.timeout(BOUND * 4):
            while received < big:
                chunk = await reader.read(64 * 1024)
                assert chunk, f"closed after {received} bytes, {time.monotonic() - started_at:.2f} s"
                received += len(chunk)
                await asyncio.sleep(0.02)
        assert time.monotonic() - started_at > idle * 2
        writer.close()
    finally:
        await server.close()


async def test_no_idle_timeout_when_disabled() -> None:
    server = await started(0)
    try:
        _reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        writer.write(half_a_frame())
        await asyncio.sleep(IDLE * 3)
        (conn,) = server.connections
        assert conn.is_open
        writer.close()
    finally:
        await server.close()


async def test_shortening_the_idle_timeout_applies_to_open_connections() -> None:
    server = await started(60)
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        await asyncio.sleep(IDLE)
        assert len(server.connections) == 1
        server.idle_timeout = IDLE
        async with asyncio.timeout(BOUND):
            assert await reader.read() == b""
        writer.close()
    finally:
        await server.close()


# -- configuration ------------------------------------------------------------------------------------


def test_broker_conf_sets_the_idle_timeout_and_the_bounds(tmp_path: Path) -> None:
    default = BrokerConfig(store_path_root_dir=str(tmp_path))
    assert default.remoting_limits() == {
        "idle_timeout": 120.0,
        "max_buffered_per_connection": 4 * 1024 * 1024,
        "max_buffered": 32 * 1024 * 1024,
    }
    text = (
        f"storePathRootDir={tmp_path}\nserverChannelMaxIdleTimeSeconds=7\n"
        "serverChannelMaxBufferedBytes=1048576\nserverMaxBufferedBytes=8388608\n"
    )
    config = BrokerConfig.from_properties(text)
    broker = Broker(config)
    assert broker.server.idle_timeout == 7.0
    assert broker.server._max_buffered_per_connection == 1024 * 1024
    assert broker.server._budget.limit == 8 * 1024 * 1024
    shown = parse_properties(config.to_properties())
    assert shown["serverChannelMaxIdleTimeSeconds"] == "7"


async def test_broker_applies_an_updated_idle_timeout(tmp_path: Path) -> None:
    config = BrokerConfig(store_path_root_dir=str(tmp_path), listen_host="127.0.0.1", listen_port=0)
    async with Broker(config) as broker:
        changed = config.update({"serverChannelMaxIdleTimeSeconds": "9"})
        broker.config_changed(changed)
        assert broker.server.idle_timeout == 9.0


async def test_nameserver_takes_the_idle_timeout_from_its_settings() -> None:
    config = NamesrvConfig(server_channel_max_idle_time_seconds=1)
    server = NameServer("127.0.0.1", 0, config=config)
    assert server.remoting.idle_timeout == 1.0
    shown = parse_properties(config.to_properties_text())
    assert shown["serverChannelMaxIdleTimeSeconds"] == "1"
    assert config.update({"serverChannelMaxIdleTimeSeconds": "0"}) == ["serverChannelMaxIdleTimeSeconds"]
    assert config.server_channel_max_idle_time_seconds == 0


async def test_nameserver_closes_an_idle_connection() -> None:
    config = NamesrvConfig(server_channel_max_idle_time_seconds=1)
    async with NameServer("127.0.0.1", 0, config=config) as server:
        reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
        # a whole request first: a connection that was served is closed all the same once silent
        writer.write(RemotingCommand.request(RequestCode.GET_NAMESRV_CONFIG).encode())
        assert len(await reader.read(4)) == 4
        async with asyncio.timeout(BOUND):
            while await reader.read(65536):
                pass
        writer.close()
