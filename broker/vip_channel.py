"""Apache's "VIP channel": the same broker on a second remoting port, ``listenPort - 2``.

Every Apache broker listens there too (its ``fastRemotingServer``), with every handler but the pull ones,
and some peers only use that port: an Apache slave fetches its master's topic table (GET_ALL_TOPIC_CONFIG)
through it, and clients configured with ``vipChannelEnabled`` send there. So this broker listens there as
well. A port that cannot be bound costs a log line, not the broker: nothing but those peers needs it.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Mapping

from rocketmq_wire import RequestCode
from rocketmq_wire.transport import ConnectionListener, Handler, RemotingServer
from rocketmq_wire.transport.dispatch import RequestGate
from rocketmq_wire.transport.server import RemotingLimits
from rocketmq_wire.transport.tls import TlsMode

log = logging.getLogger("broker.vip_channel")

#: Apache's fast server has no pull processor: long polling belongs to the main port.
NOT_ON_VIP = frozenset({RequestCode.PULL_MESSAGE, RequestCode.LITE_PULL_MESSAGE})


def vip_port(listen_port_requested: int, listen_port: int) -> int:
    """``listenPort - 2`` as Apache derives it, or any free port when the listen port was any free one."""
    if listen_port_requested == 0:
        return 0
    return max(0, listen_port - 2)


async def start_vip_server(
    host: str,
    port: int,
    handlers: Mapping[int, tuple[Handler, RequestGate | None]],
    on_connection_closed: ConnectionListener,
    tls: tuple[TlsMode, ssl.SSLContext | None],
    limits: RemotingLimits,
) -> RemotingServer | None:
    """The VIP server serving ``handlers`` (but the pull ones), or None if its port cannot be bound; with
    the main port's TLS mode and context and its idle timeout and buffer bounds (a budget of its own)."""
    server = RemotingServer(host, port, ssl=tls[1], tls_mode=tls[0], **limits)
    for code, (handler, gate) in handlers.items():
        if code not in NOT_ON_VIP:
            server.register(code, handler, gate=gate)
    server.on_connection_closed(on_connection_closed)
    try:
        bound = await server.start()
    except OSError as exc:
        log.warning("cannot listen on the VIP channel port %d (%s); serving the main port only", port, exc)
        return None
    log.info("VIP channel listening on %s:%d", host, bound)
    return server
