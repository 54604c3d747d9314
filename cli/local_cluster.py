"""A NameServer and one Broker in this process, on loopback: what ``rmq quickstart`` runs, and what tests
drive the admin client and the commands against.

The broker registers with the NameServer when it starts and again after every topic change, but that
second registration runs in the background; :meth:`LocalCluster.wait_for_route` waits on those
registrations (not on a clock) until the NameServer's answer about a topic is what the caller expects.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import TracebackType
from typing import Self

from broker import Broker, BrokerConfig
from broker.registration import RegistrationResult
from nameserver import NameServer

logger = logging.getLogger("cli.local_cluster")

#: Store file sizes small enough for a throw-away store (files are sparse, but keep them modest).
_COMMIT_LOG_SEGMENT = 64 * 1024 * 1024
_CONSUME_QUEUE_ENTRIES = 100_000


@dataclasses.dataclass(frozen=True, slots=True)
class LocalClusterSettings:
    store_dir: Path
    host: str = "127.0.0.1"
    namesrv_port: int = 0
    broker_port: int = 0
    cluster_name: str = "DefaultCluster"
    broker_name: str = "broker-a"
    #: The broker's ``traceTopicEnable``: it creates ``RMQ_SYS_TRACE_TOPIC`` (message traces) at start.
    trace_topic_enable: bool = False


class LocalCluster:
    """``async with LocalCluster(LocalClusterSettings(store_dir)) as local:`` -- both servers up, then down.

    Ports 0 pick free ones; :attr:`namesrv_address` and :attr:`broker_address` say which.
    """

    def __init__(self, settings: LocalClusterSettings) -> None:
        self.settings = settings
        self.namesrv = NameServer(settings.host, settings.namesrv_port)
        self._broker: Broker | None = None
        self._registered = asyncio.Event()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    @property
    def broker(self) -> Broker:
        if self._broker is None:
            raise RuntimeError("the local cluster is not started")
        return self._broker

    @property
    def namesrv_address(self) -> str:
        return self.namesrv.address

    @property
    def broker_address(self) -> str:
        return self.broker.address

    async def start(self) -> None:
        """Start the NameServer, then the broker (which registers before ``start`` returns)."""
        settings = self.settings
        await self.namesrv.start()
        config = BrokerConfig(
            broker_name=settings.broker_name,
            broker_cluster_name=settings.cluster_name,
            listen_host=settings.host,
            listen_port=settings.broker_port,
            broker_ip1=settings.host,
            broker_ip2=settings.host,
            namesrv_addr=self.namesrv.address,
            store_path_root_dir=str(settings.store_dir),
            mapped_file_size_commit_log=_COMMIT_LOG_SEGMENT,
            mapped_file_size_consume_queue=_CONSUME_QUEUE_ENTRIES * 20,
            trace_topic_enable=settings.trace_topic_enable,
        )
        broker = Broker(config)
        broker.registration.on_registered(self._on_registered)
        try:
            await broker.start()
        except BaseException:
            await broker.close()
            await self.namesrv.close()
            raise
        self._broker = broker
        logger.info("local cluster up: NameServer %s, broker %s", self.namesrv_address, broker.address)

    async def close(self) -> None:
        """Stop the broker (it unregisters and closes its store cleanly), then the NameServer."""
        broker, self._broker = self._broker, None
        try:
            if broker is not None:
                await broker.close()
        finally:
            await self.namesrv.close()

    def _on_registered(self, results: list[RegistrationResult]) -> None:
        self._registered.set()

    async def wait_for_route(self, check: Callable[[], Awaitable[bool]], timeout_s: float = 10.0) -> None:
        """Wait until ``check()`` holds, re-checking after each registration of the broker.

        Raises :class:`TimeoutError` when it still does not hold after ``timeout_s``.
        """
        async with asyncio.timeout(timeout_s):
            while True:
                self._registered.clear()
                if await check():
                    return
                await self._registered.wait()
