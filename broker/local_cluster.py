"""A NameServer and one or more Brokers in this process, on one event loop: what ``rmq quickstart`` runs,
what the pytest plugin (``rocketmq_testing``) hands to users' tests, and what this project's tests drive the
admin client and the commands against.

It lives beside the broker (which may import the NameServer) so that the command line and the test plugin,
which sit at opposite ends of the import layering, start the very same servers.

Each broker registers with the NameServer when it starts and again after every topic change, but that
second registration runs in the background; :meth:`LocalCluster.wait_for_route` waits on those
registrations (not on a clock) until the NameServer's answer about a topic is what the caller expects.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import string
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from broker.broker import Broker
from broker.config import BrokerConfig
from broker.registration import RegistrationResult
from nameserver import NameServer

logger = logging.getLogger("broker.local_cluster")

#: Store file sizes small enough for a throw-away store (files are sparse, but keep them modest).
_COMMIT_LOG_SEGMENT = 64 * 1024 * 1024
_CONSUME_QUEUE_ENTRIES = 100_000


def broker_names(first: str, count: int) -> list[str]:
    """The names of ``count`` brokers whose first is ``first``.

    Apache's sample configurations call a cluster's brokers ``broker-a``, ``broker-b``, ...: a first name
    ending in ``-<letter>`` goes on through the alphabet; any other gets ``-2``, ``-3``, ... appended.
    """
    if count < 1:
        raise ValueError(f"a cluster needs at least one broker, not {count}")
    stem, dash, letter = first.rpartition("-")
    letters = string.ascii_lowercase
    if dash and len(letter) == 1 and letter in letters and letters.index(letter) + count <= len(letters):
        start = letters.index(letter)
        return [f"{stem}-{letters[start + i]}" for i in range(count)]
    return [first, *(f"{first}-{i}" for i in range(2, count + 1))]


@dataclasses.dataclass(frozen=True, slots=True)
class LocalClusterSettings:
    store_dir: Path
    host: str = "127.0.0.1"
    namesrv_port: int = 0
    #: The first broker's port (0: any free one); further brokers always take free ones.
    broker_port: int = 0
    cluster_name: str = "DefaultCluster"
    broker_name: str = "broker-a"
    #: The broker's ``traceTopicEnable``: it creates ``RMQ_SYS_TRACE_TOPIC`` (message traces) at start.
    trace_topic_enable: bool = False
    #: How many brokers (masters, one per name of :func:`broker_names`) register with the NameServer. With
    #: more than one, each keeps its store in ``store_dir/<broker name>``.
    brokers: int = 1
    #: Further :class:`~broker.BrokerConfig` fields for every broker, by their Python names.
    broker_settings: Mapping[str, Any] = dataclasses.field(default_factory=dict)


class LocalCluster:
    """``async with LocalCluster(LocalClusterSettings(store_dir)) as local:`` -- the servers up, then down.

    Ports 0 pick free ones; :attr:`namesrv_address` and :attr:`broker_addresses` say which.
    """

    def __init__(self, settings: LocalClusterSettings) -> None:
        self.settings = settings
        self.namesrv = NameServer(settings.host, settings.namesrv_port)
        self._brokers: list[Broker] = []
        self._registered = asyncio.Event()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    @property
    def brokers(self) -> list[Broker]:
        if not self._brokers:
            raise RuntimeError("the local cluster is not started")
        return list(self._brokers)

    @property
    def broker(self) -> Broker:
        """The first broker (the only one unless ``brokers`` asked for more)."""
        return self.brokers[0]

    @property
    def namesrv_address(self) -> str:
        return self.namesrv.address

    @property
    def broker_address(self) -> str:
        return self.broker.address

    @property
    def broker_addresses(self) -> dict[str, str]:
        """Broker name -> the address it serves (and registered) on."""
        return {broker.config.broker_name: broker.address for broker in self.brokers}

    def _config(self, name: str, port: int, store: Path) -> BrokerConfig:
        settings = self.settings
        return BrokerConfig(
            **{
                "broker_name": name,
                "broker_cluster_name": settings.cluster_name,
                "listen_host": settings.host,
                "listen_port": port,
                # Apache's fixed 10912 would let only one broker on this host replicate: listenPort + 1,
                # or any free port when the listen port is any free one.
                "ha_listen_port": 0,
                "broker_ip1": settings.host,
                "broker_ip2": settings.host,
                "namesrv_addr": self.namesrv.address,
                "store_path_root_dir": str(store),
                "mapped_file_size_commit_log": _COMMIT_LOG_SEGMENT,
                "mapped_file_size_consume_queue": _CONSUME_QUEUE_ENTRIES * 20,
                "trace_topic_enable": settings.trace_topic_enable,
                **settings.broker_settings,
            }
        )

    async def start(self) -> None:
        """Start the NameServer, then each broker (each registers before its ``start`` returns); whatever
        started is stopped again when a later start fails."""
        settings = self.settings
        names = broker_names(settings.broker_name, settings.brokers)
        await self.namesrv.start()
        try:
            for index, name in enumerate(names):
                store = settings.store_dir if len(names) == 1 else settings.store_dir / name
                broker = Broker(self._config(name, settings.broker_port if index == 0 else 0, store))
                broker.registration.on_registered(self._on_registered)
                try:
                    await broker.start()
                except BaseException:
                    await broker.close()
                    raise
                self._brokers.append(broker)
        except BaseException:
            await self.close()
            raise
        logger.info(
            "local cluster up: NameServer %s, brokers %s", self.namesrv_address, self.broker_addresses
        )

    async def close(self) -> None:
        """Stop the brokers, last first (each unregisters and closes its store cleanly), then the
        NameServer."""
        brokers, self._brokers = self._brokers, []
        try:
            for broker in reversed(brokers):
                await broker.close()
        finally:
            await self.namesrv.close()

    def _on_registered(self, results: list[RegistrationResult]) -> None:
        self._registered.set()

    async def wait_for_route(self, check: Callable[[], Awaitable[bool]], timeout_s: float = 10.0) -> None:
        """Wait until ``check()`` holds, re-checking after each registration of a broker.

        Raises :class:`TimeoutError` when it still does not hold after ``timeout_s``.
        """
        async with asyncio.timeout(timeout_s):
            while True:
                self._registered.clear()
                if await check():
                    return
                await self._registered.wait()
