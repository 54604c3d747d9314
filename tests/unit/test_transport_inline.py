"""Inline handlers: answered as the request arrives, with no task, until the peer stops reading."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from rocketmq_wire.codes import ResponseCode, SerializeType
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.transport import Connection, RemotingClient, RemotingServer

LOOKUP = 2001
BROKEN = 2002
BOUND = 5.0


@pytest.fixture
async def server() -> AsyncIterator[RemotingServer]:
    srv = RemotingServer("127.0.0.1", 0, max_in_flight=8)
    await srv.start()
    yield srv
    await srv.close()


async def _read_frame(reader: asyncio.StreamReader) -> RemotingCommand:
    length = int.from_bytes(await reader.readexactly(4), "big")
    return RemotingCommand.decode(length.to_bytes(4, "big") + await reader.readexactly(length))


async def test_inline_handler_answers_without_a_task(server: RemotingServer) -> None:
    tasks: list[asyncio.Task[object] | None] = []

    def lookup(request: RemotingCommand, conn: Connection) -> RemotingCommand:
        tasks.append(asyncio.current_task())
        return request.make_response(ResponseCode.SUCCESS, remark="found", body=request.body[::-1])

    server.register_inline(LOOKUP, lookup)
    async with RemotingClient() as client:
        for serialize in (SerializeType.JSON, SerializeType.ROCKETMQ):
            request = RemotingCommand.request(LOOKUP, body=b"abc", serialize_type=serialize)
            response = await client.invoke(server.address, request, 3000)
            assert (response.code, response.remark, response.body) == (ResponseCode.SUCCESS, "found", b"cba")
            assert response.opaque == request.opaque
            assert response.serialize_type is serialize
    assert tasks == [None, None]  # ran in the protocol callback, not in a task


async def test_inline_handler_failure_is_answered_system_error(
    server: RemotingServer, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(request: RemotingCommand, conn: Connection) -> RemotingCommand:
        raise RuntimeError("boom")

    server.register_inline(BROKEN, broken)
    server.register_inline(LOOKUP, lambda request, conn: request.make_response(ResponseCode.SUCCESS))
    async with RemotingClient() as client:
        with caplog.at_level("ERROR", logger="rocketmq_wire.transport"):
            response = await client.invoke(server.address, RemotingCommand.request(BROKEN), 3000)
        assert response.code == ResponseCode.SYSTEM_ERROR
        assert response.remark is not None and response.remark.startswith("RuntimeError: boom, broken(")
        assert any(r.exc_info and "request code 2002" in r.getMessage() for r in caplog.records)
        ok = await client.invoke(server.address, RemotingCommand.request(LOOKUP), 3000)
        assert ok.code == ResponseCode.SUCCESS


async def test_inline_oneway_gets_no_answer(server: RemotingServer) -> None:
    seen: list[bytes] = []

    def lookup(request: RemotingCommand, conn: Connection) -> RemotingCommand:
        seen.append(request.body)
        return request.make_response(ResponseCode.SUCCESS, body=request.body)

    server.register_inline(LOOKUP, lookup)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        oneway = RemotingCommand.request(LOOKUP, body=b"ow", opaque=5)
        oneway.mark_oneway()
        writer.write(oneway.encode() + RemotingCommand.request(LOOKUP, body=b"after", opaque=6).encode())
        async with asyncio.timeout(BOUND):
            first = await _read_frame(reader)
    finally:
        writer.close()
    assert seen == [b"ow", b"after"]
    assert (first.opaque, first.body) == (6, b"after")


async def test_a_peer_that_stops_reading_gets_backpressure(server: RemotingServer) -> None:
    """Once the answers back up, inline requests queue as tasks, and reading stops at max_in_flight: the
    server does not read (and answer) without bound for a peer that never reads its answers. The requests
    are many more than one read of the socket takes, as the frames of one read are all dispatched."""
    in_task: list[bool] = []
    body = b"x" * (16 * 1024)

    def lookup(request: RemotingCommand, conn: Connection) -> RemotingCommand:
        in_task.append(asyncio.current_task() is not None)
        return request.make_response(ResponseCode.SUCCESS, body=body)

    server.register_inline(LOOKUP, lookup)
    sent = 20_000
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        writer.write(b"".join(RemotingCommand.request(LOOKUP, opaque=i).encode() for i in range(sent)))
        await writer.drain()
        await asyncio.sleep(0.5)  # the server answers until its writes back up, then stops reading
        answered_unread = len(in_task)
        assert any(in_task), "no request took the task path while the answers were backed up"
        assert answered_unread < sent
        opaques = []
        async with asyncio.timeout(BOUND * 4):
            for _ in range(sent):
                opaques.append((await _read_frame(reader)).opaque)
    finally:
        writer.close()
    assert sorted(opaques) == list(range(sent))
    assert len(in_task) == sent
