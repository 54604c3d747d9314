"""One consumer's link to the cluster (the part of Java's ``MQClientInstance`` a consumer uses).

It owns the consumer's remoting client (so its connections, opaque counter and handlers for what brokers
ask it), its identity, its NameServer client and route table, and the two background rounds every client
runs: fetching the routes of the subscribed topics again, and heartbeating every broker. Nothing here is
shared between consumers: each has its own client id, so two consumers in one process are two members of
their groups, as two processes would be.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from consumer.broker_api import BrokerApi
from consumer.config import ConsumerConfig
from consumer.errors import BrokerNotFoundError
from consumer.routes import ConsumerRoutes
from producer.config import ProducerConfig
from producer.identity import check_ip, client_id, default_instance_name, local_ip
from producer.namesrv import NameServerClient
from producer.rpc import ProducerRpc
from producer.timers import run_periodically
from rocketmq_wire.bodies.heartbeat import ConsumerData
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.transport import Handler, RemotingClient

logger = logging.getLogger("consumer.client")


def rpc_settings(config: ConsumerConfig) -> ProducerConfig:
    """The settings the shared request stamper (``ProducerRpc``) reads: serialization, version, ACL."""
    return ProducerConfig(
        access_key=config.access_key,
        secret_key=config.secret_key,
        security_token=config.security_token,
        serialize_type=config.serialize_type,
        version=config.version,
    )


class ConsumerClient:
    """Connections, identity, routes and heartbeats of one consumer; ``start()`` before use."""

    def __init__(
        self,
        config: ConsumerConfig,
        namesrv_addrs: list[str],
        *,
        rng: random.Random,
        handlers: Mapping[int, Handler],
        consumer_data: Callable[[], ConsumerData | None],
        topics: Callable[[], list[str]],
        default_instance: str | None = None,
    ) -> None:
        self.config = config
        self.namesrv_addrs = namesrv_addrs
        self._rng = rng
        self._handlers = handlers
        self._consumer_data = consumer_data
        self._topics = topics
        self._default_instance = default_instance
        self.client_id = ""
        self._remoting: RemotingClient | None = None
        self._api: BrokerApi | None = None
        self._routes: ConsumerRoutes | None = None
        self._stop = asyncio.Event()
        self._timers: list[asyncio.Task[None]] = []
        self._background: set[asyncio.Task[Any]] = set()

    # -- lifecycle -----------------------------------------------------------------------------------------

    def start(self) -> None:
        """Create the client and start its timers; connections open lazily."""
        config = self.config
        ip = check_ip(config.client_ip) if config.client_ip else local_ip()
        instance = config.instance_name or self._default_instance or default_instance_name()
        self.client_id = client_id(ip, instance)
        self._remoting = RemotingClient(ssl=config.ssl, handlers=self._handlers)
        rpc = ProducerRpc(self._remoting, rpc_settings(config))
        namesrv = NameServerClient(rpc, self.namesrv_addrs, config.request_timeout_ms, self._rng)
        self._routes = ConsumerRoutes(namesrv, self._rng, on_new_broker=self._on_new_broker)
        self._api = BrokerApi(rpc, timeout_ms=config.request_timeout_ms, version=config.version)
        self._stop.clear()
        loop = asyncio.get_running_loop()
        self._timers = [
            loop.create_task(
                run_periodically(
                    config.poll_namesrv_interval_ms, self.refresh_routes, "route refresh", self._stop
                )
            ),
            loop.create_task(
                run_periodically(config.heartbeat_interval_ms, self.heartbeat_all, "heartbeat", self._stop)
            ),
        ]

    async def close(self) -> None:
        """Stop the timers and close every connection (after the consumer has said goodbye)."""
        self._stop.set()
        await asyncio.gather(*self._timers, return_exceptions=True)
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        if self._remoting is not None:
            await self._remoting.close()

    # -- parts ---------------------------------------------------------------------------------------------

    @property
    def api(self) -> BrokerApi:
        assert self._api is not None, "the consumer client is not started"
        return self._api

    @property
    def routes(self) -> ConsumerRoutes:
        assert self._routes is not None, "the consumer client is not started"
        return self._routes

    @property
    def remoting(self) -> RemotingClient:
        assert self._remoting is not None, "the consumer client is not started"
        return self._remoting

    def spawn(self, coro: Awaitable[Any], name: str) -> asyncio.Task[Any]:
        """Run ``coro`` in the background until it ends or the client closes."""

        async def run() -> Any:
            return await coro

        task = asyncio.get_running_loop().create_task(run(), name=name)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    # -- routes and brokers --------------------------------------------------------------------------------

    async def refresh_routes(self) -> None:
        """One round of the periodic refresh: the route of every subscribed topic."""
        for topic in self._topics():
            try:
                await self.routes.refresh(topic)
            except Exception as exc:  # one bad topic or a NameServer outage must not stop the round
                logger.warning("route refresh of topic %s failed: %s", topic, exc)

    async def queues_of(self, topic: str, *, refresh_if_missing: bool = True) -> list[MessageQueue] | None:
        """The readable queues of ``topic``, fetching its route first if it was never fetched."""
        queues = self.routes.queues(topic)
        if queues is None and refresh_if_missing:
            queues = await self.routes.refresh(topic)
        return queues

    async def master_of(self, queue: MessageQueue) -> str:
        """The address offset requests about ``queue`` go to: its broker's master (else any of its brokers),
        fetching the topic's route once if the broker is unknown."""
        found = self.routes.master_or_any(queue.broker_name or "")
        if found is None and queue.topic is not None:
            await self.routes.refresh(queue.topic)
            found = self.routes.master_or_any(queue.broker_name or "")
        if found is None:
            raise BrokerNotFoundError(f"no address known for broker {queue.broker_name} (queue {queue})")
        return found[0]

    async def pull_address(self, queue: MessageQueue, suggested_broker_id: int) -> tuple[str, int]:
        """Where to pull ``queue`` from: the broker the last answer suggested if known, else the master."""
        name = queue.broker_name or ""
        if suggested_broker_id:
            addr = self.routes.address(name, suggested_broker_id)
            if addr is not None:
                return addr, suggested_broker_id
        found = self.routes.master_or_any(name)
        if found is None and queue.topic is not None:
            await self.routes.refresh(queue.topic)
            found = self.routes.master_or_any(name)
        if found is None:
            raise BrokerNotFoundError(f"no address known for broker {name} (queue {queue})")
        return found

    # -- heartbeats ----------------------------------------------------------------------------------------

    async def heartbeat_all(self) -> int:
        """Heartbeat every known broker now (the timer does this every 30 s); returns how many accepted."""
        addrs = self.routes.all_addresses()
        if not addrs:
            return 0
        data = self._consumer_data()
        results = await asyncio.gather(*(self.api.heartbeat(addr, self.client_id, data) for addr in addrs))
        return sum(results)

    async def unregister_all(self, group: str) -> None:
        addrs = self.routes.all_addresses()
        await asyncio.gather(*(self.api.unregister(addr, self.client_id, group) for addr in addrs))

    def _on_new_broker(self, addr: str) -> None:
        if self._stop.is_set() or self._api is None:
            return
        self.spawn(self.api.heartbeat(addr, self.client_id, self._consumer_data()), f"heartbeat-{addr}")
