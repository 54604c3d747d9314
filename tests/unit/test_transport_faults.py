"""Failures over loopback: timeouts, disconnects, reconnects, bad input, refused connects, clean shutdown."""

from __future__ import annotations

import asyncio
import gc
import logging
import socket
import struct
from collections.abc import AsyncIterator, Callable

import pytest

from rocketmq_wire.codes import ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.transport import (
    Connection,
    RemotingClient,
    RemotingClosedError,
    RemotingConnectError,
    RemotingServer,
    RemotingTimeoutError,
)

ECHO = 1001
NEVER = 1002
BOUND = 5.0
SIXTEEN_MIB = 16 * 1024 * 1024


def first_into(future: asyncio.Future[Connection]) -> Callable[[Connection], None]:
    """A listener that resolves ``future`` with the first connection it sees (later ones are ignored)."""

    def listener(conn: Connection) -> None:
        if not future.done():
            future.set_result(conn)

    return listener


async def echo(request: RemotingCommand, conn: Connection) -> RemotingCommand:
    return request.make_response(ResponseCode.SUCCESS, body=request.body)


class Silent:
    """A handler that never answers; counts arrivals so tests can wait for them."""

    def __init__(self, expected: int = 1) -> None:
        self.arrived: list[tuple[RemotingCommand, Connection]] = []
        self.expected = expected
        self.all_arrived = asyncio.Event()
        self.forever = asyncio.Event()

    async def __call__(self, request: RemotingCommand, conn: Connection) -> None:
        self.arrived.append((request, conn))
        if len(self.arrived) >= self.expected:
            self.all_arrived.set()
        await self.forever.wait()


@pytest.fixture
async def server() -> AsyncIterator[RemotingServer]:
    srv = RemotingServer("127.0.0.1", 0, {ECHO: echo})
    await srv.start()
    yield srv
    await srv.close()


@pytest.fixture
async def client() -> AsyncIterator[RemotingClient]:
    cli = RemotingClient()
    yield cli
    await cli.close()


def records(caplog: pytest.LogCaptureFixture, text: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "rocketmq_wire.transport" and text in r.getMessage()]


async def test_timeout_leaves_the_connection_usable(server: RemotingServer, client: RemotingClient) -> None:
    server.register(NEVER, Silent())
    with pytest.raises(RemotingTimeoutError) as info:
        await client.invoke(server.address, RemotingCommand.request(NEVER), 50)
    assert info.value.addr == server.address
    assert info.value.timeout_ms == 50
    conn = client.connections[server.address]
    assert conn.pending_count == 0
    response = await client.invoke(server.address, RemotingCommand.request(ECHO, body=b"still"), 3000)
    assert response.body == b"still"
    assert client.connections[server.address] is conn


async def test_late_answer_after_timeout_is_dropped(
    server: RemotingServer, client: RemotingClient, caplog: pytest.LogCaptureFixture
) -> None:
    release = asyncio.Event()
    sent = asyncio.Event()

    async def late(request: RemotingCommand, conn: Connection) -> None:
        await release.wait()
        await conn.send_response(request.make_response(ResponseCode.SUCCESS, body=b"late"))
        sent.set()

    server.register(NEVER, late)
    caplog.set_level(logging.DEBUG, logger="rocketmq_wire.transport")
    request = RemotingCommand.request(NEVER)
    with pytest.raises(RemotingTimeoutError):
        await client.invoke(server.address, request, 50)
    release.set()
    async with asyncio.timeout(BOUND):
        await sent.wait()
    # the late answer precedes this one on the stream, so it has been handled once this returns
    assert (await client.invoke(server.address, RemotingCommand.request(ECHO, body=b"n"), 3000)).body == b"n"
    dropped = records(caplog, "nobody waits for it")
    assert len(dropped) == 1
    assert f"opaque {request.opaque}" in dropped[0].getMessage()
    assert dropped[0].levelno == logging.DEBUG


async def test_peer_disconnect_fails_every_waiter_promptly(
    server: RemotingServer, client: RemotingClient
) -> None:
    silent = Silent(expected=10)
    server.register(NEVER, silent)
    calls = [
        asyncio.create_task(client.invoke(server.address, RemotingCommand.request(NEVER), 60_000))
        for _ in range(10)
    ]
    async with asyncio.timeout(BOUND):
        await silent.all_arrived.wait()
    silent.arrived[0][1].abort("test drops the client")
    async with asyncio.timeout(BOUND):
        results = await asyncio.gather(*calls, return_exceptions=True)
    assert all(isinstance(r, RemotingClosedError) for r in results), results
    assert server.address not in client.connections


async def test_next_call_reconnects_after_a_drop(server: RemotingServer, client: RemotingClient) -> None:
    closed: asyncio.Future[Connection] = asyncio.get_running_loop().create_future()
    client.on_connection_closed(first_into(closed))
    await client.invoke(server.address, RemotingCommand.request(ECHO), 3000)
    first = client.connections[server.address]
    (server_side,) = server.connections
    server_side.abort("test")
    async with asyncio.timeout(BOUND):
        assert await closed is first
    assert first.is_closed
    response = await client.invoke(server.address, RemotingCommand.request(ECHO, body=b"again"), 3000)
    assert response.body == b"again"
    second = client.connections[server.address]
    assert second is not first
    assert second.local_address != first.local_address


async def test_request_on_a_closed_connection_fails_at_once(
    server: RemotingServer, client: RemotingClient
) -> None:
    conn = await client.connection(server.address)
    conn.close()
    with pytest.raises(RemotingClosedError, match="closed locally"):
        await conn.request(RemotingCommand.request(ECHO), 10)
    with pytest.raises(RemotingClosedError):
        await conn.oneway(RemotingCommand.request(ECHO))
    await conn.wait_closed()
    assert conn.is_closed


async def _raw_probe(server: RemotingServer, frame: bytes) -> bytes:
    """Send raw bytes, return whatever comes back until the server closes (b"" when it just closes)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        writer.write(frame)
        async with asyncio.timeout(BOUND):
            try:
                return await reader.read()
            except ConnectionResetError:
                return b""
    finally:
        writer.close()


@pytest.mark.parametrize(
    ("frame", "reason"),
    [
        pytest.param(struct.pack(">I", SIXTEEN_MIB) + b"\x00" * 64, "exceeds the limit", id="oversized"),
        pytest.param(struct.pack(">II", 16, 12) + b"not json!!!!", "malformed input", id="garbage-header"),
        pytest.param(struct.pack(">II", 8, 0x07000000) + b"????", "serialize type", id="bad-serialize-type"),
    ],
)
async def test_bad_input_closes_only_that_connection(
    server: RemotingServer,
    client: RemotingClient,
    caplog: pytest.LogCaptureFixture,
    frame: bytes,
    reason: str,
) -> None:
    closed: asyncio.Future[Connection] = asyncio.get_running_loop().create_future()
    server.on_connection_closed(first_into(closed))
    await client.invoke(server.address, RemotingCommand.request(ECHO), 3000)
    with caplog.at_level(logging.WARNING, logger="rocketmq_wire.transport"):
        answer = await _raw_probe(server, frame)
        async with asyncio.timeout(BOUND):
            bad = await closed
    assert answer == b""
    assert bad.close_reason is not None and reason in bad.close_reason
    logged = records(caplog, "closing connection from")
    assert len(logged) == 1 and reason in logged[0].getMessage()
    assert bad.remote_address in logged[0].getMessage()
    response = await client.invoke(server.address, RemotingCommand.request(ECHO, body=b"alive"), 3000)
    assert response.body == b"alive"
    assert len(server.connections) == 1


async def test_malformed_answer_fails_the_client_waiters(client: RemotingClient) -> None:
    async def reply_garbage(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readexactly(4)
        writer.write(struct.pack(">II", 16, 12) + b"{{{{{{{{{{{{")
        await writer.drain()
        await reader.read()
        writer.close()

    fake = await asyncio.start_server(reply_garbage, "127.0.0.1", 0)
    port = fake.sockets[0].getsockname()[1]
    try:
        with pytest.raises(RemotingClosedError, match="malformed input") as info:
            await client.invoke(f"127.0.0.1:{port}", RemotingCommand.request(ECHO), 3000)
        assert info.value.__cause__ is not None
    finally:
        await client.close()
        fake.close()
        await fake.wait_closed()


async def test_refused_connect_raises_connect_error(client: RemotingClient) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(RemotingConnectError) as info:
        await client.invoke(f"127.0.0.1:{port}", RemotingCommand.request(ECHO), 3000)
    assert info.value.addr == f"127.0.0.1:{port}"


async def test_connect_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    loop = asyncio.get_running_loop()

    async def hang(*args: object, **kwargs: object) -> None:
        await asyncio.Event().wait()

    monkeypatch.setattr(loop, "create_connection", hang)
    async with RemotingClient(connect_timeout_ms=30) as cli:
        with pytest.raises(RemotingConnectError, match="timed out after 30 ms"):
            await cli.invoke("127.0.0.1:1", RemotingCommand.request(ECHO), 3000)


async def test_bad_address_raises_connect_error(client: RemotingClient) -> None:
    with pytest.raises(RemotingConnectError, match="host:port"):
        await client.invoke("no-port-here", RemotingCommand.request(ECHO), 1000)


async def test_client_close_fails_pending_calls(server: RemotingServer) -> None:
    silent = Silent(expected=3)
    server.register(NEVER, silent)
    cli = RemotingClient()
    calls = [
        asyncio.create_task(cli.invoke(server.address, RemotingCommand.request(NEVER), 60_000))
        for _ in range(3)
    ]
    async with asyncio.timeout(BOUND):
        await silent.all_arrived.wait()
        await cli.close()
        results = await asyncio.gather(*calls, return_exceptions=True)
    assert all(isinstance(r, RemotingClosedError) for r in results), results
    assert cli.connections == {}
    with pytest.raises(RemotingClosedError):
        await cli.invoke(server.address, RemotingCommand.request(ECHO), 1000)


async def test_close_leaks_no_tasks() -> None:
    me = asyncio.current_task()
    before = asyncio.all_tasks()
    silent = Silent(expected=4)
    srv = RemotingServer("127.0.0.1", 0, {ECHO: echo, NEVER: silent})
    srv.register(NEVER + 1, silent, ordered=True)
    await srv.start()
    cli = RemotingClient(handlers={ECHO: echo})
    await cli.invoke(srv.address, RemotingCommand.request(ECHO), 3000)
    (conn,) = srv.connections
    await srv.invoke(conn, RemotingCommand.request(ECHO), 3000)
    calls = [
        asyncio.create_task(cli.invoke(srv.address, RemotingCommand.request(NEVER + (i % 2)), 60_000))
        for i in range(6)
    ]
    async with asyncio.timeout(BOUND):
        await silent.all_arrived.wait()  # 3 unordered running, 1 ordered running with 2 queued behind it
        await srv.close()
        results = await asyncio.gather(*calls, return_exceptions=True)
        await cli.close()
    assert all(isinstance(r, RemotingClosedError) for r in results), results
    assert asyncio.all_tasks() == before
    assert me in before
    assert srv.connections == frozenset()


async def test_server_close_is_idempotent_and_stops_accepting() -> None:
    srv = RemotingServer("127.0.0.1", 0, {ECHO: echo})
    port = await srv.start()
    await srv.close()
    await srv.close()
    async with RemotingClient() as cli:
        with pytest.raises(RemotingConnectError):
            await cli.invoke(f"127.0.0.1:{port}", RemotingCommand.request(ECHO), 1000)


async def test_write_backpressure_still_honours_timeouts(client: RemotingClient) -> None:
    """A peer that never reads: writers end up waiting for the buffer to drain, and still time out."""
    accepted: asyncio.Future[asyncio.Transport] = asyncio.get_running_loop().create_future()

    class Deaf(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            assert isinstance(transport, asyncio.Transport)
            transport.pause_reading()
            accepted.set_result(transport)

    loop = asyncio.get_running_loop()
    deaf = await loop.create_server(Deaf, "127.0.0.1", 0)
    addr = f"127.0.0.1:{deaf.sockets[0].getsockname()[1]}"
    try:
        conn = await client.connection(addr)
        body = b"x" * (4 * 1024 * 1024)
        calls = [
            asyncio.create_task(conn.request(RemotingCommand.request(ECHO, body=body), 0.3))
            for _ in range(32)
        ]
        async with asyncio.timeout(BOUND):
            results = await asyncio.gather(*calls, return_exceptions=True)
        assert conn.writing_paused
        assert all(isinstance(r, RemotingTimeoutError) for r in results), results
        assert conn.pending_count == 0
        conn.abort("test done")  # don't spend the close grace on a peer that never reads
    finally:
        await client.close()
        (await accepted).abort()
        deaf.close()
        await deaf.wait_closed()


async def test_a_connect_failing_after_its_caller_gave_up_is_not_reported_as_never_retrieved(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The call timeout ran out while connecting; the connect fails later, with no caller left to see it:
    asyncio must not print it as a "Task exception was never retrieved" traceback (rmq's stderr showed
    one under its one error line)."""
    loop = asyncio.get_running_loop()
    unhandled: list[dict[str, object]] = []
    loop.set_exception_handler(lambda _loop, context: unhandled.append(context))
    refused = asyncio.Event()

    async def slow_refusal(*args: object, **kwargs: object) -> object:
        await asyncio.sleep(0.05)
        refused.set()
        raise ConnectionRefusedError(111, "Connect call failed")

    monkeypatch.setattr(loop, "create_connection", slow_refusal)
    async with RemotingClient() as client:
        with pytest.raises(RemotingTimeoutError, match="took longer than the call timeout"):
            await client.connection("127.0.0.1:9", timeout_ms=5)
        await refused.wait()
        await asyncio.sleep(0)
    gc.collect()
    await asyncio.sleep(0)
    assert unhandled == []
