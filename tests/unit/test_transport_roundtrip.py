"""Client and server over loopback: requests, answers, concurrency, ordering, server-to-client requests."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Callable

import pytest

from rocketmq_wire.codes import ResponseCode, SerializeType
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.transport import Connection, RemotingClient, RemotingServer

ECHO = 1001
SLOW = 1002
PROBE = 1003
CHECK_TRANSACTION_STATE = 39
NOTIFY_CONSUMER_IDS_CHANGED = 40
BOUND = 5.0  # upper bound for waits that should finish at once


def first_into(future: asyncio.Future[Connection]) -> Callable[[Connection], None]:
    """A listener that resolves ``future`` with the first connection it sees (later ones are ignored)."""

    def listener(conn: Connection) -> None:
        if not future.done():
            future.set_result(conn)

    return listener


async def echo(request: RemotingCommand, conn: Connection) -> RemotingCommand:
    return request.make_response(ResponseCode.SUCCESS, remark="echo", body=request.body)


@pytest.fixture
async def server() -> AsyncIterator[RemotingServer]:
    srv = RemotingServer("127.0.0.1", 0, {ECHO: echo, PROBE: echo})
    await srv.start()
    yield srv
    await srv.close()


@pytest.fixture
async def client() -> AsyncIterator[RemotingClient]:
    cli = RemotingClient()
    yield cli
    await cli.close()


async def test_start_returns_the_bound_port(server: RemotingServer) -> None:
    assert server.port > 0
    assert server.address == f"127.0.0.1:{server.port}"


async def test_request_gets_its_response(server: RemotingServer, client: RemotingClient) -> None:
    request = RemotingCommand.request(ECHO, body=b"hello")
    response = await client.invoke(server.address, request, 3000)
    assert response.is_response
    assert response.code == ResponseCode.SUCCESS
    assert response.remark == "echo"
    assert response.body == b"hello"
    assert response.opaque == request.opaque


async def test_response_keeps_the_request_serialization(
    server: RemotingServer, client: RemotingClient
) -> None:
    request = RemotingCommand.request(ECHO, body=b"x", serialize_type=SerializeType.ROCKETMQ)
    response = await client.invoke(server.address, request, 3000)
    assert response.serialize_type == SerializeType.ROCKETMQ
    assert response.body == b"x"


async def test_response_from_a_handler_built_without_make_response(client: RemotingClient) -> None:
    async def bare(request: RemotingCommand, conn: Connection) -> RemotingCommand:
        return RemotingCommand(code=ResponseCode.SUCCESS, remark="bare")  # no opaque, no flag

    async with RemotingServer("127.0.0.1", 0, {ECHO: bare}) as srv:
        request = RemotingCommand.request(ECHO, serialize_type=SerializeType.ROCKETMQ)
        response = await client.invoke(srv.address, request, 3000)
    assert response.is_response
    assert response.opaque == request.opaque
    assert response.serialize_type == SerializeType.ROCKETMQ
    assert response.remark == "bare"


async def test_thousand_requests_in_flight_answered_in_random_order(client: RemotingClient) -> None:
    count = 1000
    arrived: list[tuple[RemotingCommand, asyncio.Future[None]]] = []
    all_arrived = asyncio.Event()

    async def held(request: RemotingCommand, conn: Connection) -> RemotingCommand:
        gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        arrived.append((request, gate))
        if len(arrived) == count:
            all_arrived.set()
        await gate
        return request.make_response(ResponseCode.SUCCESS, body=request.body + b"!")

    async with RemotingServer("127.0.0.1", 0, {SLOW: held}) as srv:
        calls = [
            asyncio.create_task(
                client.invoke(srv.address, RemotingCommand.request(SLOW, body=b"%d" % i), 10_000)
            )
            for i in range(count)
        ]
        async with asyncio.timeout(BOUND):
            await all_arrived.wait()
        assert len(srv.connections) == 1
        order = list(range(count))
        random.Random(7).shuffle(order)
        for index in order:
            arrived[index][1].set_result(None)
        async with asyncio.timeout(BOUND):
            responses = await asyncio.gather(*calls)
    assert [r.body for r in responses] == [b"%d!" % i for i in range(count)]
    assert len({r.opaque for r in responses}) == count


async def test_slow_handler_does_not_block_the_connection(
    server: RemotingServer, client: RemotingClient
) -> None:
    gate = asyncio.Event()

    async def slow(request: RemotingCommand, conn: Connection) -> RemotingCommand:
        await gate.wait()
        return request.make_response()

    server.register(SLOW, slow)
    stuck = asyncio.create_task(client.invoke(server.address, RemotingCommand.request(SLOW), 10_000))
    fast = await client.invoke(server.address, RemotingCommand.request(ECHO, body=b"f"), 3000)
    assert fast.body == b"f"
    assert not stuck.done()
    gate.set()
    async with asyncio.timeout(BOUND):
        assert (await stuck).code == ResponseCode.SUCCESS


@pytest.mark.parametrize("ordered", [True, False])
async def test_ordered_handlers_run_one_at_a_time_in_arrival_order(
    server: RemotingServer, client: RemotingClient, ordered: bool
) -> None:
    started: list[int] = []
    finished: list[int] = []
    gate = asyncio.Event()

    async def handler(request: RemotingCommand, conn: Connection) -> RemotingCommand:
        number = int(request.body)
        started.append(number)
        if number == 0:
            await gate.wait()
        finished.append(number)
        return request.make_response()

    server.register(SLOW, handler, ordered=ordered)
    calls = [
        asyncio.create_task(
            client.invoke(server.address, RemotingCommand.request(SLOW, body=b"%d" % i), 10_000)
        )
        for i in range(10)
    ]
    # Everything written before the probe has been read and dispatched once the probe is answered.
    await client.invoke(server.address, RemotingCommand.request(PROBE), 3000)
    if ordered:
        assert started == [0]
    else:
        assert sorted(started) == list(range(10))
        assert finished == list(range(1, 10))
    gate.set()
    async with asyncio.timeout(BOUND):
        await asyncio.gather(*calls)
    if ordered:
        assert started == finished == list(range(10))


async def test_oneway_reaches_the_handler_and_gets_no_answer(server: RemotingServer) -> None:
    received: asyncio.Future[RemotingCommand] = asyncio.get_running_loop().create_future()

    async def sink(request: RemotingCommand, conn: Connection) -> RemotingCommand:
        received.set_result(request)
        return request.make_response(ResponseCode.SUCCESS)  # must be dropped: the request was oneway

    server.register(SLOW, sink)
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        oneway = RemotingCommand.request(SLOW, body=b"ow", opaque=5)
        oneway.mark_oneway()
        writer.write(oneway.encode() + RemotingCommand.request(ECHO, body=b"after", opaque=6).encode())
        async with asyncio.timeout(BOUND):
            got = await received
            length = int.from_bytes(await reader.readexactly(4), "big")
            first = RemotingCommand.decode(length.to_bytes(4, "big") + await reader.readexactly(length))
    finally:
        writer.close()
    assert got.is_oneway and got.body == b"ow"
    assert first.opaque == 6 and first.body == b"after"  # the first thing back answers the later request


async def test_client_invoke_oneway(server: RemotingServer, client: RemotingClient) -> None:
    received: asyncio.Future[RemotingCommand] = asyncio.get_running_loop().create_future()

    async def sink(request: RemotingCommand, conn: Connection) -> None:
        received.set_result(request)

    server.register(SLOW, sink)
    await client.invoke_oneway(server.address, RemotingCommand.request(SLOW, body=b"one"))
    async with asyncio.timeout(BOUND):
        got = await received
    assert got.is_oneway
    assert got.body == b"one"


async def test_unknown_code_answered_like_java(server: RemotingServer, client: RemotingClient) -> None:
    request = RemotingCommand.request(4242)
    response = await client.invoke(server.address, request, 3000)
    assert response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert response.remark == " request type 4242 not supported"
    assert response.opaque == request.opaque


async def test_handler_exception_answered_system_error(
    server: RemotingServer, client: RemotingClient, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(request: RemotingCommand, conn: Connection) -> RemotingCommand:
        raise RuntimeError("boom")

    server.register(SLOW, broken)
    with caplog.at_level("ERROR", logger="rocketmq_wire.transport"):
        response = await client.invoke(server.address, RemotingCommand.request(SLOW), 3000)
    assert response.code == ResponseCode.SYSTEM_ERROR
    assert response.remark is not None
    assert response.remark.startswith("RuntimeError: boom, broken(")
    assert any(r.exc_info and "request code 1002" in r.getMessage() for r in caplog.records)
    # the connection still serves other requests
    assert (
        await client.invoke(server.address, RemotingCommand.request(ECHO, body=b"ok"), 3000)
    ).body == b"ok"


async def test_handler_may_answer_later_itself(server: RemotingServer, client: RemotingClient) -> None:
    async def deferred(request: RemotingCommand, conn: Connection) -> None:
        async def answer() -> None:
            await conn.send_response(request.make_response(ResponseCode.SUCCESS, body=b"later"))

        later.append(asyncio.create_task(answer()))

    later: list[asyncio.Task[None]] = []
    server.register(SLOW, deferred)
    response = await client.invoke(server.address, RemotingCommand.request(SLOW), 3000)
    assert response.body == b"later"
    await asyncio.gather(*later)


async def test_server_sends_requests_to_a_connected_client(server: RemotingServer) -> None:
    notified: asyncio.Future[RemotingCommand] = asyncio.get_running_loop().create_future()

    async def check_state(request: RemotingCommand, conn: Connection) -> RemotingCommand:
        return request.make_response(ResponseCode.SUCCESS, body=b"committed:" + request.body)

    async def ids_changed(request: RemotingCommand, conn: Connection) -> None:
        notified.set_result(request)

    client = RemotingClient(handlers={CHECK_TRANSACTION_STATE: check_state})
    client.register(NOTIFY_CONSUMER_IDS_CHANGED, ids_changed)
    try:
        await client.invoke(server.address, RemotingCommand.request(ECHO), 3000)
        (conn,) = server.connections
        answer = await server.invoke(
            conn, RemotingCommand.request(CHECK_TRANSACTION_STATE, body=b"tx1"), 3000
        )
        await server.invoke_oneway(conn, RemotingCommand.request(NOTIFY_CONSUMER_IDS_CHANGED, body=b"g"))
        async with asyncio.timeout(BOUND):
            note = await notified
        unknown = await server.invoke(conn, RemotingCommand.request(4243), 3000)
    finally:
        await client.close()
    assert answer.code == ResponseCode.SUCCESS
    assert answer.body == b"committed:tx1"
    assert note.is_oneway and note.body == b"g"
    assert unknown.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED


async def test_concurrent_first_calls_share_one_connection(
    server: RemotingServer, client: RemotingClient
) -> None:
    opened: list[Connection] = []
    server.on_connection_opened(opened.append)
    responses = await asyncio.gather(
        *(
            client.invoke(server.address, RemotingCommand.request(ECHO, body=b"%d" % i), 3000)
            for i in range(50)
        )
    )
    assert [r.body for r in responses] == [b"%d" % i for i in range(50)]
    assert len(opened) == 1
    assert list(client.connections) == [server.address]


async def test_each_client_has_its_own_opaque_counter(server: RemotingServer) -> None:
    async with RemotingClient() as first, RemotingClient() as second:
        a1 = RemotingCommand.request(ECHO)
        a2 = RemotingCommand.request(ECHO)
        b1 = RemotingCommand.request(ECHO)
        await first.invoke(server.address, a1, 3000)
        await first.invoke(server.address, a2, 3000)
        await second.invoke(server.address, b1, 3000)
        assert first.connections[server.address] is not second.connections[server.address]
    assert (a1.opaque, a2.opaque, b1.opaque) == (0, 1, 0)


async def test_server_reports_peer_address_and_close(server: RemotingServer, client: RemotingClient) -> None:
    closed: asyncio.Future[Connection] = asyncio.get_running_loop().create_future()
    server.on_connection_closed(first_into(closed))
    await client.invoke(server.address, RemotingCommand.request(ECHO), 3000)
    client_conn = client.connections[server.address]
    (server_conn,) = server.connections
    assert server_conn.remote_address == client_conn.local_address
    assert server.find_connection(client_conn.local_address) is server_conn
    await client.close_connection(server.address)
    async with asyncio.timeout(BOUND):
        gone = await closed
    assert gone is server_conn
    assert gone.remote_address == client_conn.local_address
    assert server.connections == frozenset()


async def test_async_close_listener_runs_to_completion(server: RemotingServer) -> None:
    done: list[str] = []

    async def expire_routes(conn: Connection) -> None:
        await asyncio.sleep(0)
        done.append(conn.remote_address)

    server.on_connection_closed(expire_routes)
    client = RemotingClient()
    await client.invoke(server.address, RemotingCommand.request(ECHO), 3000)
    local = client.connections[server.address].local_address
    await client.close()
    await server.close()  # waits for listener coroutines
    assert done == [local]
