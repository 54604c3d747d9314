"""The NameServer on the network: the request handlers on a :class:`RemotingServer`, plus broker liveness.

Brokers are forgotten the two ways Apache forgets them: at once when the connection they registered over
closes, and by a periodic scan when they have not re-registered within their timeout (the scan also
closes that connection). Time comes from an injected clock so expiry can be tested without waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from types import TracebackType

from nameserver.config import NamesrvConfig
from nameserver.kvconfig import KVConfigManager
from nameserver.metrics import start_metrics
from nameserver.metrics_http import MetricsEndpoint
from nameserver.processor import NamesrvProcessor
from nameserver.profile import DEFAULT_PROFILE, ApacheProfile
from nameserver.route_table import RouteInfoManager
from rocketmq_wire.transport.connection import Connection
from rocketmq_wire.transport.server import RemotingServer
from rocketmq_wire.transport.tls import TlsConfig, TlsMode

logger = logging.getLogger("nameserver.server")

#: Default listening port of an Apache NameServer.
DEFAULT_PORT = 9876


class NameServer:
    """A NameServer listening on ``host:port`` (``port=0``: any free port, see :meth:`start`).

    ``clock`` returns seconds and only needs to be monotonic; ``profile`` picks the Apache version whose
    answers are reproduced (5.3.3 unless told otherwise); ``config`` holds Apache's ``NamesrvConfig``
    settings, among them where KV config is persisted; ``tls`` Apache's TLS settings (without them, plain
    connections only).
    """

    def __init__(
        self,
        host: str = "0.0.0.0",
        port: int = DEFAULT_PORT,
        *,
        clock: Callable[[], float] = time.monotonic,
        config: NamesrvConfig | None = None,
        profile: ApacheProfile = DEFAULT_PROFILE,
        tls: TlsConfig | None = None,
    ) -> None:
        self.config = config or NamesrvConfig()
        self.profile = profile
        self.clock = clock
        self.routes = RouteInfoManager(self.config, profile)
        self.kv = KVConfigManager(self.config.kv_config_path)
        self.processor = NamesrvProcessor(self.routes, self.kv, clock, self.config, profile)
        # Apache's TLS settings; None serves plain connections only (what tests and embedding want).
        mode, context = tls.listener() if tls is not None else (TlsMode.DISABLED, None)
        self.remoting = RemotingServer(
            host,
            port,
            ssl=context,
            tls_mode=mode,
            **self.config.remoting_limits(),
        )
        # Every NameServer request is a table lookup or update that never waits: answered inline.
        for code in self.processor.handlers:
            self.remoting.register_inline(code, self.processor.process)
        self.remoting.on_connection_closed(self._connection_closed)
        self._scanner: asyncio.Task[None] | None = None
        #: ``/metrics`` while running with ``metricsExporterType=PROM`` (nameserver/metrics.py).
        self.metrics: MetricsEndpoint | None = None

    async def __aenter__(self) -> NameServer:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def start(self) -> int:
        """Load persisted KV config, start listening and scanning; returns the bound port."""
        self.kv.load()
        port = await self.remoting.start()
        self._scanner = asyncio.get_running_loop().create_task(self._scan_periodically())
        try:
            self.metrics = start_metrics(self.config, self.routes, f"{self.remoting.host}:{port}")
        except BaseException:
            await self.close()
            raise
        logger.info(
            "NameServer (behaving as Apache %s) listening on %s:%d",
            self.profile.name,
            self.remoting.host,
            port,
        )
        return port

    async def close(self) -> None:
        """Stop scanning and serving; idempotent."""
        scanner, self._scanner = self._scanner, None
        if self.metrics is not None:
            self.metrics.close()
            self.metrics = None
        if scanner is not None:
            scanner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await scanner
        await self.remoting.close()

    @property
    def port(self) -> int:
        return self.remoting.port

    @property
    def address(self) -> str:
        """``host:port`` a local client can connect to (a wildcard host is given as 127.0.0.1)."""
        host = self.remoting.host
        if host in ("", "0.0.0.0", "::"):
            host = "127.0.0.1"
        return f"{host}:{self.port}"

    def scan_not_active_brokers(self) -> int:
        """Drop brokers past their heartbeat timeout by the clock now and close their connections;
        returns how many went. Runs periodically on its own; tests call it after moving their clock."""
        channels = self.routes.scan_not_active_brokers(self.clock())
        for channel in channels:
            if isinstance(channel, Connection):
                channel.close("broker registration expired")
        return len(channels)

    def _connection_closed(self, conn: Connection) -> None:
        if self.routes.on_channel_destroy(conn):
            logger.info("broker connection %s closed: its routes are gone", conn.remote_address)

    async def _scan_periodically(self) -> None:
        while True:
            await asyncio.sleep(max(self.config.scan_not_active_broker_interval, 100) / 1000)
            # UPDATE_NAMESRV_CONFIG may have changed the idle timeout: it applies from the next sweep on.
            idle = float(self.config.server_channel_max_idle_time_seconds)
            if idle != self.remoting.idle_timeout:
                logger.info("connections idle for %g s are closed from now on", idle)
                self.remoting.idle_timeout = idle
            try:
                self.scan_not_active_brokers()
            except Exception:
                logger.exception("scanning for inactive brokers failed")
