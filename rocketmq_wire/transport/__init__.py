"""asyncio transport for the remoting protocol: connections, a client, a server.

Everything here is bound to one event loop and owns its own state (opaque counters, connection tables), so
several clients and servers can live in one process without interfering.

The names below are loaded on first use, so that ``rocketmq_wire.transport.address`` and
``rocketmq_wire.transport.errors`` can be imported without the client and the server (and asyncio).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rocketmq_wire.transport.client import DEFAULT_CONNECT_TIMEOUT_MS, RemotingClient
    from rocketmq_wire.transport.connection import Connection
    from rocketmq_wire.transport.deferred import DeferredAnswer
    from rocketmq_wire.transport.dispatch import (
        Handler,
        InlineHandler,
        Outcome,
        RequestDispatcher,
        RequestGate,
    )
    from rocketmq_wire.transport.errors import (
        RemotingClosedError,
        RemotingConnectError,
        RemotingError,
        RemotingTimeoutError,
    )
    from rocketmq_wire.transport.listeners import ConnectionListener
    from rocketmq_wire.transport.opaque import OpaqueCounter
    from rocketmq_wire.transport.server import RemotingServer
    from rocketmq_wire.transport.tls import TlsConfig, TlsError, TlsMode

#: Each exported name -> the submodule defining it.
_EXPORTS = {
    "DEFAULT_CONNECT_TIMEOUT_MS": "rocketmq_wire.transport.client",
    "RemotingClient": "rocketmq_wire.transport.client",
    "Connection": "rocketmq_wire.transport.connection",
    "DeferredAnswer": "rocketmq_wire.transport.deferred",
    "Handler": "rocketmq_wire.transport.dispatch",
    "InlineHandler": "rocketmq_wire.transport.dispatch",
    "Outcome": "rocketmq_wire.transport.dispatch",
    "RequestDispatcher": "rocketmq_wire.transport.dispatch",
    "RequestGate": "rocketmq_wire.transport.dispatch",
    "RemotingClosedError": "rocketmq_wire.transport.errors",
    "RemotingConnectError": "rocketmq_wire.transport.errors",
    "RemotingError": "rocketmq_wire.transport.errors",
    "RemotingTimeoutError": "rocketmq_wire.transport.errors",
    "ConnectionListener": "rocketmq_wire.transport.listeners",
    "OpaqueCounter": "rocketmq_wire.transport.opaque",
    "RemotingServer": "rocketmq_wire.transport.server",
    "TlsConfig": "rocketmq_wire.transport.tls",
    "TlsError": "rocketmq_wire.transport.tls",
    "TlsMode": "rocketmq_wire.transport.tls",
}

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT_MS",
    "Connection",
    "ConnectionListener",
    "DeferredAnswer",
    "Handler",
    "InlineHandler",
    "OpaqueCounter",
    "Outcome",
    "RemotingClient",
    "RemotingClosedError",
    "RemotingConnectError",
    "RemotingError",
    "RemotingServer",
    "RemotingTimeoutError",
    "RequestDispatcher",
    "RequestGate",
    "TlsConfig",
    "TlsError",
    "TlsMode",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
