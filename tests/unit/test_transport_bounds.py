"""Bounds on what a server holds for peers that do not read their answers: past the per-connection bound
(or the server-wide one) the server stops reading from such a peer instead of growing, serves the others
meanwhile, reads again once the peer catches up, and holds nothing of a peer once it is gone."""

from __future__ import annotations

import asyncio
import gc
import socket
import weakref
from collections.abc import Callable

import pytest

from rocketmq_wire.codes import ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.transport import Connection, RemotingClient, RemotingServer
from rocketmq_wire.transport import server as server_module
from rocketmq_wire.transport.dispatch import REQUEST_COST

ECHO = 1001
BLOCK = 1002
BOUND = 10.0
KIB = 1024
#: Per-connection bound in these tests; small, so the kernel's buffers fill first and the rest shows here.
PER_CONNECTION = 256 * KIB
BODY = 32 * KIB
#: One answer's frame: the body plus its header (well under 1 KiB).
FRAME = BODY + KIB
#: The most one read of the socket hands over (asyncio reads up to 256 KiB at a time).
ONE_READ = 256 * KIB


def echo_inline(request: RemotingCommand, conn: Connection) -> RemotingCommand:
    return request.make_response(ResponseCode.SUCCESS, body=request.body)


async def echo(request: RemotingCommand, conn: Connection) -> RemotingCommand:
    return request.make_response(ResponseCode.SUCCESS, body=request.body)


class Blocking:
    """A handler that notes each request's opaque and answers once ``release`` is set."""

    def __init__(self) -> None:
        self.started: list[int] = []
        self.release = asyncio.Event()

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        self.started.append(request.opaque)
        await self.release.wait()
        return request.make_response(ResponseCode.SUCCESS)


class DeafPeer:
    """A raw socket that sends requests and does not read (until told to): a small receive buffer, so the
    kernel holds little of what the server sends it."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def connect(self) -> DeafPeer:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * KIB)
        sock.setblocking(False)
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", self.port))
        self.reader, self.writer = await asyncio.open_connection(sock=sock, limit=1 << 20)
        return self

    def send(self, count: int, code: int = ECHO, body: bytes = b"x" * BODY) -> None:
        """Queue ``count`` requests (the peer's own transport buffers what the server does not read)."""
        assert self.writer is not None
        for opaque in range(count):
            self.writer.write(RemotingCommand(code=code, opaque=opaque, body=body).encode())

    async def read_answers(self, count: int) -> set[int]:
        """Read ``count`` answers; their opaques."""
        assert self.reader is not None
        opaques: set[int] = set()
        for _ in range(count):
            length = int.from_bytes(await self.reader.readexactly(4), "big")
            frame = await self.reader.readexactly(length)
            opaques.add(RemotingCommand.decode(length.to_bytes(4, "big") + frame).opaque)
        return opaques

    def abort(self) -> None:
        assert self.writer is not None
        self.writer.transport.abort()


async def until(condition: Callable[[], bool], what: str, timeout: float = BOUND) -> None:
    try:
        async with asyncio.timeout(timeout):
            while not condition():
                await asyncio.sleep(0.005)
    except TimeoutError:
        raise AssertionError(f"not within {timeout} s: {what}") from None


async def settled(conn: Connection) -> int:
    """The connection's unsent bytes once reading has paused and nothing moves any more."""
    await until(lambda: conn.reading_paused, "reading paused")
    last = -1
    while conn.unsent_bytes != last:
        last = conn.unsent_bytes
        await asyncio.sleep(0.1)
    return last


async def the_connection(server: RemotingServer, count: int = 1) -> Connection:
    await until(lambda: len(server.connections) >= count, "accepted")
    return next(iter(server.connections))


async def served_normally(server: RemotingServer) -> None:
    async with RemotingClient() as client:
        for _ in range(20):
            answer = await client.invoke(
                server.address, RemotingCommand.request(ECHO, body=b"y" * BODY), 2000
            )
            assert answer.code == ResponseCode.SUCCESS and len(answer.body) == BODY


async def gone(server: RemotingServer, peer: DeafPeer, ref: weakref.ref[Connection]) -> None:
    """The peer closes: the server forgets it entirely (the caller dropped its own reference)."""
    peer.abort()
    await until(lambda: not server.connections, "connection gone")
    await asyncio.sleep(0.05)  # handler tasks finish, close listeners run
    assert server.buffered_bytes == 0
    gc.collect()
    assert ref() is None, gc.get_referrers(ref())


@pytest.mark.parametrize("inline", [True, False], ids=["inline", "task"])
async def test_a_peer_that_does_not_read_stops_being_read_at_the_bound(inline: bool) -> None:
    server = RemotingServer("127.0.0.1", 0, max_buffered_per_connection=PER_CONNECTION, max_buffered=0)
    if inline:
        server.register_inline(ECHO, echo_inline)
    else:
        server.register(ECHO, echo)
    await server.start()
    try:
        peer = await DeafPeer(server.port).connect()
        peer.send(600)  # ~19 MiB of answers: far more than the kernel's buffers and the bound
        conn = await the_connection(server)
        unsent = await settled(conn)
        # Answers written as requests are delivered (inline) stop at the bound plus the answer that passed
        # it; answers of task handlers come after a whole read's requests were handed over, so those of
        # one read may pass it too.
        allowance = FRAME if inline else ONE_READ + FRAME
        assert PER_CONNECTION <= unsent < PER_CONNECTION + allowance, unsent
        assert conn.buffered_bytes < PER_CONNECTION + allowance + ONE_READ + FRAME, conn.buffered_bytes
        await served_normally(server)  # another connection meanwhile
        assert conn.reading_paused and await settled(conn) == unsent  # still nothing more read
        ref = weakref.ref(conn)
        del conn
        await gone(server, peer, ref)
    finally:
        await server.close()


async def test_reading_resumes_once_the_peer_catches_up() -> None:
    server = RemotingServer("127.0.0.1", 0, max_buffered_per_connection=PER_CONNECTION, max_buffered=0)
    server.register_inline(ECHO, echo_inline)
    await server.start()
    try:
        peer = await DeafPeer(server.port).connect()
        peer.send(600)
        conn = await the_connection(server)
        await settled(conn)
        async with asyncio.timeout(BOUND * 2):
            assert await peer.read_answers(600) == set(range(600))  # every request answered, once
        assert not conn.reading_paused and conn.unsent_bytes == 0
        ref = weakref.ref(conn)
        del conn
        await gone(server, peer, ref)
    finally:
        await server.close()


async def test_the_server_wide_bound_stops_reading_from_peers_whose_answers_wait() -> None:
    total = 512 * KIB
    own = 8 * 1024 * KIB  # out of reach here: only the server's bound acts
    server = RemotingServer("127.0.0.1", 0, max_buffered_per_connection=own, max_buffered=total)
    server.register_inline(ECHO, echo_inline)
    await server.start()
    try:
        peers: list[DeafPeer] = []
        conns: list[Connection] = []
        for index in range(3):  # one after the other
            peer = await DeafPeer(server.port).connect()
            peer.send(600)
            peers.append(peer)
            await until(lambda n=index + 1: len(server.connections) == n, "accepted")
            conn = next(c for c in server.connections if c not in conns)
            conns.append(conn)
            await settled(conn)
        first, *later = (c.unsent_bytes for c in conns)
        # the first filled its transport's buffer (high-water mark 1 MiB, reached by a turn's coalesced
        # answers, up to 256 KiB) before anything was counted, and passed the server's bound then; the later
        # ones were not read once anything of theirs waited
        assert total <= first < 1024 * KIB + 256 * KIB + FRAME, first
        assert all(unsent < 2 * FRAME for unsent in later), later
        assert server.buffered_bytes == sum(c.buffered_bytes for c in conns)
        assert server._budget.over
        await served_normally(server)  # a peer that reads is served throughout
        assert all(c.reading_paused for c in conns)
        refs = [weakref.ref(c) for c in conns]
        del conns, conn
        for peer in peers:
            peer.abort()
        await until(lambda: not server.connections, "connections gone")
        assert server.buffered_bytes == 0 and not server._budget.over
        await asyncio.sleep(0.05)
        gc.collect()
        assert all(ref() is None for ref in refs)
    finally:
        await server.close()


async def test_dispatcher_pause_withholds_the_rest_of_a_read() -> None:
    """The in-flight bound pauses reading in the middle of a read's requests: the rest wait as the bytes
    they arrived as (not as decoded requests), and are delivered in order once it resumes."""
    block = Blocking()
    started, release = block.started, block.release

    server = RemotingServer("127.0.0.1", 0, {BLOCK: block}, max_in_flight=4)
    await server.start()
    try:
        peer = await DeafPeer(server.port).connect()
        peer.send(20, code=BLOCK, body=b"")  # all in one read
        conn = await the_connection(server)
        await until(lambda: len(started) == 4, "four started")
        await asyncio.sleep(0.1)
        assert started == [0, 1, 2, 3] and conn.reading_paused
        # the 16 requests not handed over, still as their frames (an empty request's frame is under 100 B)
        assert 0 < conn.buffered_bytes < 16 * 100
        release.set()
        assert await peer.read_answers(20) == set(range(20))
        assert started == list(range(20))
        assert conn.buffered_bytes == 0 and not conn.reading_paused
        ref = weakref.ref(conn)
        del conn
        await gone(server, peer, ref)
    finally:
        await server.close()


async def test_the_bytes_of_unfinished_requests_are_bounded_per_connection() -> None:
    """Requests whose handlers have not finished count as their body plus REQUEST_COST: past the
    per-connection bound the peer is not read, whatever the request count bound allows."""
    block = Blocking()
    started, release = block.started, block.release

    body = b"z" * 1000
    server = RemotingServer(
        "127.0.0.1",
        0,
        {BLOCK: block},
        max_in_flight=1000,
        max_buffered_per_connection=3 * (1000 + REQUEST_COST),
    )
    await server.start()
    try:
        peer = await DeafPeer(server.port).connect()
        peer.send(10, code=BLOCK, body=body)
        conn = await the_connection(server)
        await until(lambda: len(started) == 3, "three started")
        await asyncio.sleep(0.1)
        assert started == [0, 1, 2] and conn.reading_paused
        assert server.requests_bytes == 3 * (len(body) + REQUEST_COST)
        release.set()
        assert await peer.read_answers(10) == set(range(10))
        assert server.requests_bytes == 0 and not conn.reading_paused
    finally:
        await server.close()


async def test_a_flooding_peer_does_not_starve_the_others_past_the_server_wide_bound() -> None:
    """Past the server-wide bound on unfinished requests, a connection with more than one unfinished is not
    read, so a peer flooding requests that wait cannot take the server's memory, while a peer asking one
    question at a time is answered throughout."""
    block = Blocking()
    started, release = block.started, block.release

    server = RemotingServer(
        "127.0.0.1",
        0,
        {BLOCK: block, ECHO: echo},
        max_in_flight=1000,
        max_buffered_per_connection=0,
        max_buffered=10 * REQUEST_COST,
    )
    await server.start()
    try:
        flood = await DeafPeer(server.port).connect()
        flood.send(200, code=BLOCK, body=b"")
        await until(lambda: len(started) == 10, "ten started")
        await asyncio.sleep(0.1)
        assert len(started) == 10, "the flooding peer is not read past the bound"
        await served_normally(server)
        release.set()
        assert await flood.read_answers(200) == set(range(200))
        assert server.requests_bytes == 0
    finally:
        await server.close()


async def test_freed_memory_goes_back_to_the_system_once_the_pressure_is_over(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The idle sweep returns the heap's free memory (malloc_trim) once after a bound was reached and
    nothing is over one any more: never while a bound holds, never without a burst."""
    released: list[bool] = []
    monkeypatch.setattr(server_module, "release_freed_memory", lambda: released.append(True) or True)
    server = RemotingServer("127.0.0.1", 0, {ECHO: echo}, idle_timeout=0.4, max_buffered=10 * REQUEST_COST)
    await server.start()
    try:
        await asyncio.sleep(0.3)  # a few sweeps: no burst, nothing released
        assert released == []
        server._dispatcher.times_over += 1  # as a burst past the bound leaves it
        server._dispatcher._over_total = True
        await asyncio.sleep(0.2)
        assert released == [], "not while the bound still holds"
        server._dispatcher._over_total = False
        await until(lambda: released == [True], "released after the burst")
        await asyncio.sleep(0.3)
        assert released == [True], "once per burst"
    finally:
        await server.close()
