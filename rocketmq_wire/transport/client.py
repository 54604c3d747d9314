"""The client side: one lazily opened, shared connection per "host:port".

Producers, consumers and admin tools talk to a handful of name servers and brokers, each over a single
connection carrying many concurrent requests (as Java's ``NettyRemotingClient`` does). Connections open on
first use; concurrent first callers share one connect attempt; a connection that drops is forgotten, so the
next call to that address reconnects. Every client has its own opaque counter and connection table.
"""

from __future__ import annotations

import asyncio
import logging
import ssl as ssl_module
from collections.abc import Mapping
from types import TracebackType

from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.framing import MAX_FRAME_SIZE
from rocketmq_wire.transport.address import parse_address
from rocketmq_wire.transport.connection import Connection
from rocketmq_wire.transport.dispatch import DEFAULT_MAX_IN_FLIGHT, Handler, RequestDispatcher
from rocketmq_wire.transport.errors import (
    RemotingClosedError,
    RemotingConnectError,
    RemotingTimeoutError,
)
from rocketmq_wire.transport.listeners import ConnectionListener, ConnectionListeners
from rocketmq_wire.transport.opaque import OpaqueCounter

logger = logging.getLogger("rocketmq_wire.transport")

#: Java's ``NettyClientConfig.connectTimeoutMillis`` default.
DEFAULT_CONNECT_TIMEOUT_MS = 3000


class RemotingClient:
    """Requests to many servers over shared connections; also answers requests the servers send back.

    ``handlers`` (or :meth:`register`) serve server-initiated requests, e.g. CHECK_TRANSACTION_STATE.
    ``ssl`` enables TLS for every connection; ``server_hostname`` overrides the name checked against the
    certificate (by default the host part of the address).
    """

    def __init__(
        self,
        *,
        connect_timeout_ms: float = DEFAULT_CONNECT_TIMEOUT_MS,
        ssl: ssl_module.SSLContext | None = None,
        server_hostname: str | None = None,
        handlers: Mapping[int, Handler] | None = None,
        max_frame_size: int = MAX_FRAME_SIZE,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
    ) -> None:
        self.connect_timeout_ms = connect_timeout_ms
        self._ssl = ssl
        self._server_hostname = server_hostname
        self._max_frame_size = max_frame_size
        self._opaques = OpaqueCounter()
        self._dispatcher = RequestDispatcher(handlers, max_in_flight=max_in_flight)
        self._connections: dict[str, Connection] = {}
        self._connecting: dict[str, asyncio.Task[Connection]] = {}
        self._opened = ConnectionListeners()
        self._closed_listeners = ConnectionListeners()
        self._closed = False

    async def __aenter__(self) -> RemotingClient:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # -- configuration ---------------------------------------------------------------------------------

    def register(self, code: int, handler: Handler, *, ordered: bool = False) -> None:
        """Serve requests with ``code`` that servers send to this client."""
        self._dispatcher.register(code, handler, ordered=ordered)

    def unregister(self, code: int) -> None:
        """Stop serving ``code``; servers sending it are told it is not supported, as before registering."""
        self._dispatcher.unregister(code)

    def on_connection_opened(self, listener: ConnectionListener) -> None:
        self._opened.add(listener)

    def on_connection_closed(self, listener: ConnectionListener) -> None:
        """``listener(conn)`` runs when a connection of this client goes away; ``conn.address`` says which."""
        self._closed_listeners.add(listener)

    # -- calls -----------------------------------------------------------------------------------------

    @property
    def connections(self) -> dict[str, Connection]:
        """The open connections by address (a snapshot)."""
        return {addr: conn for addr, conn in self._connections.items() if conn.is_open}

    async def connection(self, addr: str, timeout_ms: float | None = None) -> Connection:
        """The open connection to ``addr``, opening it if needed; waits at most ``timeout_ms`` for that.

        Raises :class:`RemotingConnectError` if the connect fails or exceeds the connect timeout, and
        :class:`RemotingTimeoutError` if ``timeout_ms`` runs out first.
        """
        conn = self._connections.get(addr)
        if conn is not None and conn.is_open:
            return conn
        if self._closed:
            raise RemotingClosedError("the client is closed", addr, "client closed")
        task = self._connecting.get(addr)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._open(addr))
            self._connecting[addr] = task
            task.add_done_callback(lambda done: self._connect_finished(addr, done))
        try:
            async with asyncio.timeout(None if timeout_ms is None else timeout_ms / 1000):
                return await asyncio.shield(task)
        except TimeoutError:
            raise RemotingTimeoutError(
                f"connecting to {addr} took longer than the call timeout of {timeout_ms:.0f} ms",
                addr,
                timeout_ms,
            ) from None
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if task.cancelled() and self._closed and (current is None or current.cancelling() == 0):
                # the connect was abandoned by close(), not this caller: say so rather than look cancelled
                raise RemotingClosedError(
                    "the client closed while connecting", addr, "client closed"
                ) from None
            raise

    async def invoke(self, addr: str, cmd: RemotingCommand, timeout_ms: float) -> RemotingCommand:
        """Send ``cmd`` to ``addr``, return the response; ``timeout_ms`` covers connecting too, as in Java."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000
        conn = await self.connection(addr, timeout_ms)
        remaining = deadline - loop.time()
        if remaining <= 0:
            raise RemotingTimeoutError(
                f"connecting to {addr} used up the call timeout of {timeout_ms:.0f} ms", addr, timeout_ms
            )
        try:
            return await conn.request(cmd, remaining)
        except RemotingTimeoutError as exc:
            raise RemotingTimeoutError(
                f"no response from {addr} to request code {cmd.code} within {timeout_ms:.0f} ms",
                addr,
                timeout_ms,
            ) from exc

    async def invoke_oneway(self, addr: str, cmd: RemotingCommand, timeout_ms: float | None = None) -> None:
        """Send ``cmd`` to ``addr`` without waiting for any answer (the oneway flag is set)."""
        conn = await self.connection(addr, timeout_ms)
        await conn.oneway(cmd)

    # -- closing ---------------------------------------------------------------------------------------

    async def close_connection(self, addr: str) -> None:
        """Close the connection to ``addr`` (e.g. after a peer misbehaved); the next call reopens it."""
        conn = self._connections.pop(addr, None)
        if conn is not None:
            await conn.aclose()

    async def close(self) -> None:
        """Fail pending calls, close every connection, stop server-initiated handlers; idempotent."""
        self._closed = True
        connecting = list(self._connecting.values())
        for task in connecting:
            task.cancel()
        if connecting:
            await asyncio.gather(*connecting, return_exceptions=True)
        conns = list(self._connections.values())
        self._connections.clear()
        if conns:
            await asyncio.gather(*(conn.aclose() for conn in conns))
        await self._dispatcher.close()
        await self._opened.wait()
        await self._closed_listeners.wait()

    # -- internals -------------------------------------------------------------------------------------

    def _connect_finished(self, addr: str, task: asyncio.Task[Connection]) -> None:
        if self._connecting.get(addr) is task:
            del self._connecting[addr]
        # Every caller may have stopped waiting (its call timeout ran out first): the failure is then
        # nobody's to see, and asyncio would print it as a "never retrieved" traceback when the task goes.
        failure = None if task.cancelled() else task.exception()
        if failure is not None:
            logger.debug("connect to %s failed: %s", addr, failure)

    async def _open(self, addr: str) -> Connection:
        try:
            host, port = parse_address(addr)
        except ValueError as exc:
            raise RemotingConnectError(str(exc), addr) from None
        loop = asyncio.get_running_loop()
        server_hostname = (self._server_hostname or host) if self._ssl is not None else None

        def factory() -> asyncio.Protocol:
            return Connection(
                opaques=self._opaques,
                on_request=self._dispatcher,
                max_frame_size=self._max_frame_size,
                target=addr,
            ).protocol

        try:
            async with asyncio.timeout(self.connect_timeout_ms / 1000):
                _transport, protocol = await loop.create_connection(
                    factory, host, port, ssl=self._ssl, server_hostname=server_hostname
                )
        except TimeoutError:
            raise RemotingConnectError(
                f"connect to {addr} timed out after {self.connect_timeout_ms:.0f} ms", addr
            ) from None
        except OSError as exc:
            raise RemotingConnectError(f"connect to {addr} failed: {exc}", addr) from exc
        conn: Connection = protocol.connection  # type: ignore[attr-defined]
        if self._closed:
            conn.abort("client closed while connecting")
            raise RemotingClosedError("the client is closed", addr, "client closed")
        logger.debug("connected to %s (%s -> %s)", addr, conn.local_address, conn.remote_address)
        self._connections[addr] = conn
        conn.add_close_callback(self._connection_closed)
        self._opened.fire(conn)
        return conn

    def _connection_closed(self, conn: Connection) -> None:
        if self._connections.get(conn.address) is conn:
            del self._connections[conn.address]
        logger.debug("connection to %s closed: %s", conn.address, conn.close_reason)
        self._closed_listeners.fire(conn)
