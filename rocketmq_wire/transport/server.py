"""The server side: accepts connections and serves requests through handlers registered per request code.

A role (NameServer, Broker) is a set of handlers on one :class:`RemotingServer`. Roles also need to know when
a peer goes away (the NameServer expires a broker's routes when its channel closes; a broker forgets a
client's subscriptions), and brokers send requests *to* connected clients over the same connection
(CHECK_TRANSACTION_STATE, NOTIFY_CONSUMER_IDS_CHANGED): :meth:`RemotingServer.invoke` does that.
"""

from __future__ import annotations

import asyncio
import logging
import ssl as ssl_module
from collections.abc import Mapping
from types import TracebackType

from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.framing import MAX_FRAME_SIZE
from rocketmq_wire.transport.connection import Connection
from rocketmq_wire.transport.dispatch import DEFAULT_MAX_IN_FLIGHT, Handler, RequestDispatcher, RequestGate
from rocketmq_wire.transport.listeners import ConnectionListener, ConnectionListeners
from rocketmq_wire.transport.opaque import OpaqueCounter

logger = logging.getLogger("rocketmq_wire.transport")


class RemotingServer:
    """A listening socket, its connections, and the dispatcher serving their requests.

    ``port=0`` binds an ephemeral port; :meth:`start` returns the one bound. ``ssl`` makes it a TLS server.
    See :class:`~rocketmq_wire.transport.dispatch.RequestDispatcher` for how requests become answers.
    """

    def __init__(
        self,
        host: str = "0.0.0.0",
        port: int = 0,
        handlers: Mapping[int, Handler] | None = None,
        *,
        ssl: ssl_module.SSLContext | None = None,
        max_frame_size: int = MAX_FRAME_SIZE,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        backlog: int = 1024,
    ) -> None:
        self.host = host
        self._requested_port = port
        self._ssl = ssl
        self._max_frame_size = max_frame_size
        self._backlog = backlog
        self._opaques = OpaqueCounter()
        self._dispatcher = RequestDispatcher(handlers, max_in_flight=max_in_flight)
        self._server: asyncio.Server | None = None
        self._connections: set[Connection] = set()
        self._opened = ConnectionListeners()
        self._closed_listeners = ConnectionListeners()
        self._port: int | None = None
        self._closing = False

    async def __aenter__(self) -> RemotingServer:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    # -- configuration ---------------------------------------------------------------------------------

    def register(
        self, code: int, handler: Handler, *, ordered: bool = False, gate: RequestGate | None = None
    ) -> None:
        """Serve ``code`` with ``handler``; ``ordered`` ones run one at a time per connection, in order.

        ``gate`` (see :class:`~rocketmq_wire.transport.dispatch.RequestGate`) may refuse a request as it
        arrives or, instead of running ``handler``, when its turn comes."""
        self._dispatcher.register(code, handler, ordered=ordered, gate=gate)

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
            ).protocol

        self._server = await loop.create_server(
            factory, self.host, self._requested_port, ssl=self._ssl, backlog=self._backlog, reuse_address=True
        )
        self._port = self._server.sockets[0].getsockname()[1]
        logger.info("remoting server listening on %s:%d", self.host, self._port)
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
