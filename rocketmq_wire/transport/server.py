"""The server side: accepts connections and serves requests through handlers registered per request code.

A role (NameServer, Broker) is a set of handlers on one :class:`RemotingServer`. Roles also need to know when
a peer goes away (the NameServer expires a broker's routes when its channel closes; a broker forgets a
client's subscriptions), and brokers send requests *to* connected clients over the same connection
(CHECK_TRANSACTION_STATE, NOTIFY_CONSUMER_IDS_CHANGED): :meth:`RemotingServer.invoke` does that.

A server must also outlive slow and hostile peers, so it closes connections idle for ``idle_timeout``
seconds (Apache's ``serverChannelMaxIdleTimeSeconds``: a peer that sent half a frame and went silent would
otherwise be kept forever), and bounds what it holds for peers that do not read their answers, per
connection and in total (see :class:`~rocketmq_wire.transport.connection.BufferBudget`): past a bound it
stops reading from them rather than growing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl as ssl_module
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import TypedDict

from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.framing import MAX_FRAME_SIZE
from rocketmq_wire.transport.connection import BufferBudget, Connection
from rocketmq_wire.transport.dispatch import (
    DEFAULT_MAX_IN_FLIGHT,
    Handler,
    InlineHandler,
    RequestDispatcher,
    RequestGate,
)
from rocketmq_wire.transport.listeners import ConnectionListener, ConnectionListeners
from rocketmq_wire.transport.memory import release_freed_memory
from rocketmq_wire.transport.opaque import OpaqueCounter
from rocketmq_wire.transport.tls import TLS_HANDSHAKE_BYTE, TlsMode

logger = logging.getLogger("rocketmq_wire.transport")

#: Apache's ``serverChannelMaxIdleTimeSeconds`` default: a connection with no read and no write for this
#: long is closed (0 or less: never).
DEFAULT_IDLE_TIMEOUT_S = 120.0
#: Unsent bytes (answers its peer has not read) past which a connection is no longer read, until they are
#: below half of it; the same for the requests it has being handled (about 2,000 small ones). Four of the
#: transport's 1 MiB high-water marks: a peer that keeps up never gets near.
DEFAULT_MAX_BUFFERED_PER_CONNECTION = 4 * 1024 * 1024
#: The same over all of a server's connections, for each of the two.
DEFAULT_MAX_BUFFERED = 32 * 1024 * 1024
#: The idle sweep looks at every connection this often, at most (a connection idle for the timeout is closed
#: up to this late), and at least eight times per timeout.
_SWEEP_MAX_INTERVAL_S = 5.0


class RemotingLimits(TypedDict):
    """The idle timeout and buffer bounds a :class:`RemotingServer` is built with, by keyword name; a
    server role's configuration gives them (``BrokerConfig.remoting_limits()``, and the NameServer's)."""

    idle_timeout: float
    max_buffered_per_connection: int
    max_buffered: int


class RemotingServer:
    """A listening socket, its connections, and the dispatcher serving their requests.

    ``port=0`` binds an ephemeral port; :meth:`start` returns the one bound. ``tls_mode`` is Apache's
    (:mod:`rocketmq_wire.transport.tls`): ``ssl`` answers the TLS handshakes of a permissive or enforcing
    server (a permissive one without ``ssl`` closes them); a disabled one (the default) serves plain
    connections only. See :class:`~rocketmq_wire.transport.dispatch.RequestDispatcher` for how requests
    become answers.

    ``idle_timeout`` (seconds, 0 or less: none) closes connections that neither read nor wrote for that
    long; one sweep per server looks at them, no timer per connection. ``max_buffered_per_connection`` and
    ``max_buffered`` (bytes, 0 or less: none) bound, per connection and over all of them, each of: the
    requests being handled (the dispatcher's count of them, besides ``max_in_flight``) and what is held for
    peers that do not read their answers (unsent answers, partial frames). Past a bound, the connections
    concerned are not read until they are back below half of it.
    """

    def __init__(
        self,
        host: str = "0.0.0.0",
        port: int = 0,
        handlers: Mapping[int, Handler] | None = None,
        *,
        ssl: ssl_module.SSLContext | None = None,
        tls_mode: TlsMode | None = None,
        max_frame_size: int = MAX_FRAME_SIZE,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        backlog: int = 1024,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT_S,
        max_buffered_per_connection: int = DEFAULT_MAX_BUFFERED_PER_CONNECTION,
        max_buffered: int = DEFAULT_MAX_BUFFERED,
        response_version: int | None = None,
    ) -> None:
        self.host = host
        #: ``MQVersion`` ordinal stamped on every answer (Apache's servers send their own release there).
        self.response_version = response_version
        self._requested_port = port
        self._ssl = ssl
        #: Without a mode, a context means TLS only (what ``ssl=`` always meant here).
        self.tls_mode = tls_mode or (TlsMode.ENFORCING if ssl is not None else TlsMode.DISABLED)
        self._max_frame_size = max_frame_size
        self._backlog = backlog
        self._opaques = OpaqueCounter()
        self._dispatcher = RequestDispatcher(
            handlers,
            max_in_flight=max_in_flight,
            max_in_flight_bytes=max_buffered_per_connection,
            max_total_bytes=max_buffered,
        )
        self._server: asyncio.Server | _SniffingListener | None = None
        self._connections: set[Connection] = set()
        self._opened = ConnectionListeners()
        self._closed_listeners = ConnectionListeners()
        self._port: int | None = None
        self._closing = False
        self._idle_timeout = float(idle_timeout)
        self._sweep_handle: asyncio.TimerHandle | None = None
        self._max_buffered_per_connection = max_buffered_per_connection
        self._budget = BufferBudget(max_buffered)
        self._pressure_seen = 0  # times a bound was reached, as of the last memory release

    async def __aenter__(self) -> RemotingServer:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # -- configuration ---------------------------------------------------------------------------------

    def register(
        self,
        code: int,
        handler: Handler,
        *,
        ordered: bool = False,
        gate: RequestGate | None = None,
        eager: bool = False,
    ) -> None:
        """Serve ``code`` with ``handler``; ``ordered`` ones run one at a time per connection, in order.

        ``gate`` (see :class:`~rocketmq_wire.transport.dispatch.RequestGate`) may refuse a request as it
        arrives or, instead of running ``handler``, when its turn comes. ``eager`` handlers run without a
        task until they first wait (see :mod:`~rocketmq_wire.transport.dispatch`)."""
        self._dispatcher.register(code, handler, ordered=ordered, gate=gate, eager=eager)

    def register_inline(self, code: int, handler: InlineHandler) -> None:
        """Serve ``code`` with a plain function that answers without waiting, run as each request arrives
        (no task per request); see :mod:`~rocketmq_wire.transport.dispatch`."""
        self._dispatcher.register_inline(code, handler)

    def register_default(self, handler: Handler | None, *, ordered: bool = False) -> None:
        """Serve every code without its own handler (instead of answering REQUEST_CODE_NOT_SUPPORTED)."""
        self._dispatcher.register_default(handler, ordered=ordered)

    def on_connection_opened(self, listener: ConnectionListener) -> None:
        self._opened.add(listener)

    def on_connection_closed(self, listener: ConnectionListener) -> None:
        """``listener(conn)`` runs once per connection that goes away, whoever closed it; may be async."""
        self._closed_listeners.add(listener)

    # -- lifecycle -------------------------------------------------------------------------------------

    async def start(self) -> int:
        """Bind and start accepting; returns the bound port."""
        if self._server is not None:
            raise RuntimeError("server already started")
        self._closing = False
        loop = asyncio.get_running_loop()

        def factory() -> asyncio.Protocol:
            return Connection(
                opaques=self._opaques,
                on_request=self._dispatcher,
                on_open=self._accepted,
                max_frame_size=self._max_frame_size,
                max_buffered=self._max_buffered_per_connection,
                budget=self._budget,
                response_version=self.response_version,
            ).protocol

        if self.tls_mode is TlsMode.DISABLED:
            self._server = await loop.create_server(
                factory, self.host, self._requested_port, backlog=self._backlog, reuse_address=True
            )
        else:
            self._server = await _SniffingListener.start(
                self.host,
                self._requested_port,
                self._backlog,
                factory,
                self._ssl,
                self.tls_mode,
                self._first_byte_timeout,
            )
        self._port = self._server.sockets[0].getsockname()[1]
        self._arm_sweep()
        logger.info(
            "remoting server listening on %s:%d (TLS %s), idle timeout %s",
            self.host,
            self._port,
            self.tls_mode.value,
            f"{self._idle_timeout:g} s" if self._idle_timeout > 0 else "none",
        )
        return self._port

    @property
    def port(self) -> int:
        if self._port is None:
            raise RuntimeError("server not started")
        return self._port

    @property
    def address(self) -> str:
        """The listening socket as "host:port", for handing to clients."""
        return f"{self.host}:{self.port}"

    @property
    def idle_timeout(self) -> float:
        """Seconds without a read or a write after which a connection is closed (0 or less: never)."""
        return self._idle_timeout

    @idle_timeout.setter
    def idle_timeout(self, seconds: float) -> None:
        """Takes effect at once, for every connection (an operator's update of the setting)."""
        self._idle_timeout = float(seconds)
        if self._sweep_handle is not None:
            self._sweep_handle.cancel()
            self._sweep_handle = None
        self._arm_sweep()

    @property
    def buffered_bytes(self) -> int:
        """What the connections hold for their peers, as last measured: unsent answers of peers that fell
        behind, partial frames, withheld requests. 0 when every peer keeps up."""
        return self._budget.total

    @property
    def requests_bytes(self) -> int:
        """What the requests being handled are counted as (see ``dispatch.REQUEST_COST``)."""
        return self._dispatcher.in_flight_bytes

    @property
    def connections(self) -> frozenset[Connection]:
        """The connections currently open (a snapshot)."""
        return frozenset(self._connections)

    def find_connection(self, remote_address: str) -> Connection | None:
        """The open connection whose peer is ``remote_address`` ("ip:port"), if any."""
        for conn in self._connections:
            if conn.remote_address == remote_address and conn.is_open:
                return conn
        return None

    async def close(self, grace: float = 1.0) -> None:
        """Stop accepting, close every connection (aborting those that don't close within ``grace`` s),
        cancel handlers still running and wait for connection listeners; idempotent."""
        self._closing = True
        if self._sweep_handle is not None:
            self._sweep_handle.cancel()
            self._sweep_handle = None
        server, self._server = self._server, None
        if server is not None:
            server.close()
        conns = list(self._connections)
        if conns:
            await asyncio.gather(*(conn.aclose(grace) for conn in conns))
        await self._dispatcher.close()
        await self._opened.wait()
        await self._closed_listeners.wait()
        if server is not None:
            await server.wait_closed()
            logger.info("remoting server on %s:%s closed", self.host, self._port)

    # -- requests to clients ---------------------------------------------------------------------------

    async def invoke(self, conn: Connection, cmd: RemotingCommand, timeout_ms: float) -> RemotingCommand:
        """Send a request to a connected client over its own connection and wait for the answer."""
        return await conn.request(cmd, timeout_ms / 1000)

    async def invoke_oneway(self, conn: Connection, cmd: RemotingCommand) -> None:
        """Send a oneway request (e.g. NOTIFY_CONSUMER_IDS_CHANGED) to a connected client."""
        await conn.oneway(cmd)

    # -- internals -------------------------------------------------------------------------------------

    def _accepted(self, conn: Connection) -> None:
        if self._closing:
            conn.abort("server closing")
            return
        logger.debug("accepted connection from %s", conn.remote_address)
        self._connections.add(conn)
        conn.add_close_callback(self._connection_closed)
        self._opened.fire(conn)

    def _connection_closed(self, conn: Connection) -> None:
        self._connections.discard(conn)
        logger.debug("connection from %s closed: %s", conn.remote_address, conn.close_reason)
        self._closed_listeners.fire(conn)

    def _release_memory_after_pressure(self) -> None:
        """Once a bound was reached and nothing is over one any more, give what the burst left to the system
        (see :mod:`rocketmq_wire.transport.memory`): a server that outlived stalled peers should not keep
        their footprint."""
        seen = self._budget.times_over + self._dispatcher.times_over
        if seen == self._pressure_seen or self._budget.over or self._dispatcher.over_total:
            return
        self._pressure_seen = seen
        release_freed_memory()

    def _first_byte_timeout(self) -> float | None:
        return self._idle_timeout if self._idle_timeout > 0 else None

    def _arm_sweep(self) -> None:
        idle = self._idle_timeout
        if idle <= 0 or self._server is None or self._sweep_handle is not None:
            return
        interval = min(idle / 8, _SWEEP_MAX_INTERVAL_S)
        self._sweep_handle = asyncio.get_running_loop().call_later(interval, self._sweep)

    def _sweep(self) -> None:
        """Close the connections that neither read nor wrote for the idle timeout, as Apache's all-idle
        ``IdleStateHandler`` does; one pass over the connections per interval, nothing per read or write
        but a flag (see :meth:`Connection.idle_for`)."""
        self._sweep_handle = None
        idle = self._idle_timeout
        if idle <= 0 or self._closing:
            return
        self._release_memory_after_pressure()
        now = asyncio.get_running_loop().time()
        stale = [(conn, quiet) for conn in self._connections if (quiet := conn.idle_for(now)) >= idle]
        for conn, quiet in stale:
            logger.warning(
                "closing connection from %s: nothing read or written for %.1f s (idle timeout %g s)",
                conn.remote_address,
                quiet,
                idle,
            )
            # Aborted, not closed: an orderly close would wait for a peer that may never read.
            conn.abort(f"idle for {quiet:.1f} s")
        self._arm_sweep()


#: How long a new connection may stay silent before its first byte tells TLS from plain, when no idle timeout
#: is given: the server's own idle timeout applies otherwise (Apache's idle handler covers that wait too).
FIRST_BYTE_TIMEOUT_S = DEFAULT_IDLE_TIMEOUT_S


class _SniffingListener:
    """A listening socket whose connections are told apart by their first byte, as Apache's
    ``HandshakeHandler`` does: a TLS handshake (0x16) gets ``ssl``, anything else a plain connection, each
    refused where the mode refuses it. The byte is peeked, not read, so the protocol sees it again."""

    def __init__(
        self,
        sock: socket.socket,
        factory: Callable[[], asyncio.Protocol],
        ssl: ssl_module.SSLContext | None,
        mode: TlsMode,
        first_byte_timeout: Callable[[], float | None] = lambda: FIRST_BYTE_TIMEOUT_S,
    ) -> None:
        self.sockets = [sock]
        self._factory = factory
        self._ssl = ssl
        self._mode = mode
        self._first_byte_timeout = first_byte_timeout
        self._pending: set[asyncio.Task[None]] = set()
        self._accepting = asyncio.get_running_loop().create_task(self._accept_loop(), name="remoting-accept")

    @classmethod
    async def start(
        cls,
        host: str,
        port: int,
        backlog: int,
        factory: Callable[[], asyncio.Protocol],
        ssl: ssl_module.SSLContext | None,
        mode: TlsMode,
        first_byte_timeout: Callable[[], float | None] = lambda: FIRST_BYTE_TIMEOUT_S,
    ) -> _SniffingListener:
        loop = asyncio.get_running_loop()
        infos = await loop.getaddrinfo(host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, _, _, _, address = infos[0]
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(address)
            except OSError as exc:  # worded as asyncio's create_server words it: the address included
                reason = (exc.strerror or str(exc)).lower()
                raise OSError(
                    exc.errno, f"error while attempting to bind on address {address!r}: {reason}"
                ) from None
            sock.listen(backlog)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        return cls(sock, factory, ssl, mode, first_byte_timeout)

    async def _accept_loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                conn, _ = await loop.sock_accept(self.sockets[0])
            except OSError as exc:  # e.g. out of file descriptors: keep listening
                logger.warning("accepting a connection failed: %s", exc)
                await asyncio.sleep(0.1)
                continue
            task = loop.create_task(self._serve(conn))
            self._pending.add(task)
            task.add_done_callback(self._pending.discard)

    async def _serve(self, conn: socket.socket) -> None:
        loop = asyncio.get_running_loop()
        peer = _peer_name(conn)
        try:
            first = await asyncio.wait_for(_peek_first_byte(conn), self._first_byte_timeout())
        except (TimeoutError, OSError) as exc:
            logger.info("connection from %s closed before its first byte: %s", peer, exc or "timed out")
            conn.close()
            return
        if first is None:
            conn.close()
            return
        handshake = first == TLS_HANDSHAKE_BYTE
        if handshake and self._ssl is None:
            logger.warning("TLS connection from %s closed: this server has no TLS context", peer)
            conn.close()
            return
        if not handshake and self._mode is TlsMode.ENFORCING:
            logger.warning("plain connection from %s closed: this server enforces TLS", peer)
            conn.close()
            return
        try:
            await loop.connect_accepted_socket(self._factory, conn, ssl=self._ssl if handshake else None)
        except (OSError, ssl_module.SSLError, TimeoutError) as exc:
            logger.warning("TLS handshake with %s failed: %s", peer, exc)
            conn.close()

    def close(self) -> None:
        self._accepting.cancel()
        for task in self._pending:
            task.cancel()
        self.sockets[0].close()

    async def wait_closed(self) -> None:
        tasks = [self._accepting, *self._pending]
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*tasks, return_exceptions=True)


async def _peek_first_byte(conn: socket.socket) -> int | None:
    """The connection's first byte, left unread; None when the peer closed without sending one."""
    loop = asyncio.get_running_loop()
    while True:
        try:
            data = conn.recv(1, socket.MSG_PEEK)
        except BlockingIOError:
            readable: asyncio.Future[None] = loop.create_future()
            loop.add_reader(conn.fileno(), _set_once, readable)
            try:
                await readable
            finally:
                loop.remove_reader(conn.fileno())
            continue
        return data[0] if data else None


def _set_once(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _peer_name(conn: socket.socket) -> str:
    try:
        host, port = conn.getpeername()[:2]
    except OSError:
        return "an unknown peer"
    return f"{host}:{port}"
