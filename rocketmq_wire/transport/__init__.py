"""asyncio transport for the remoting protocol: connections, a client, a server.

Everything here is bound to one event loop and owns its own state (opaque counters, connection tables), so
several clients and servers can live in one process without interfering.
"""

from rocketmq_wire.transport.client import DEFAULT_CONNECT_TIMEOUT_MS, RemotingClient
from rocketmq_wire.transport.connection import Connection
from rocketmq_wire.transport.dispatch import Handler, RequestDispatcher, RequestGate
from rocketmq_wire.transport.errors import (
    RemotingClosedError,
    RemotingConnectError,
    RemotingError,
    RemotingTimeoutError,
)
from rocketmq_wire.transport.listeners import ConnectionListener
from rocketmq_wire.transport.opaque import OpaqueCounter
from rocketmq_wire.transport.server import RemotingServer

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT_MS",
    "Connection",
    "ConnectionListener",
    "Handler",
    "OpaqueCounter",
    "RemotingClient",
    "RemotingClosedError",
    "RemotingConnectError",
    "RemotingError",
    "RemotingServer",
    "RemotingTimeoutError",
    "RequestDispatcher",
    "RequestGate",
]
