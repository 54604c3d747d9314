"""One consumer's link to the cluster: its membership of the client instance of its client id.

The connections, NameServer client, broker table, route refresh and heartbeats belong to the
:class:`~client.instance.ClientInstance` (Java's ``MQClientInstance``), shared with every producer and
consumer of the same client id on the event loop: one heartbeat lists every group of the client id, one
connection per broker carries all their requests. What stays here is the consumer's own part: its readable
queues per subscribed topic (``ConsumerRoutes``), its broker requests stamped with its own settings
(``BrokerApi``), and the background tasks it spawns. By default each consumer has a client id of its own
(``<pid>#<nanoseconds>``), so consumers share an instance only when given the same ``instance_name``.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from client.errors import DuplicateGroupError
from client.identity import client_id, default_instance_name, resolve_ip
from client.instance import ClientInstance, Member, MemberKind, join_instance
from consumer.broker_api import BrokerApi
from consumer.config import ConsumerConfig
from consumer.errors import BrokerNotFoundError, ConsumerStateError
from consumer.routes import ConsumerRoutes
from rocketmq_wire.bodies.heartbeat import ConsumerData
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.bodies.route import TopicRouteData
from rocketmq_wire.transport import Handler, RemotingClient

logger = logging.getLogger("consumer.client")


class ConsumerClient:
    """Instance membership, routes and broker requests of one consumer; ``start()`` before use."""

    def __init__(
        self,
        config: ConsumerConfig,
        namesrv_addrs: list[str],
        *,
        group: str,
        rng: random.Random,
        handlers: Mapping[int, Handler],
        consumer_data: Callable[[], ConsumerData | None],
        topics: Callable[[], list[str]],
        default_instance: str | None = None,
    ) -> None:
        self.config = config
        self.namesrv_addrs = namesrv_addrs
        self.group = group
        self._rng = rng
        self._handlers = handlers
        self._consumer_data = consumer_data
        self._topics = topics
        self._default_instance = default_instance
        self.client_id = ""
        self._instance: ClientInstance | None = None
        self._member: Member | None = None
        self._api: BrokerApi | None = None
        self._routes: ConsumerRoutes | None = None
        self._background: set[asyncio.Task[Any]] = set()

    # -- lifecycle -----------------------------------------------------------------------------------------

    def start(self) -> None:
        """Join the client instance of this consumer's client id; connections open lazily.

        Raises :class:`ConsumerStateError` when a consumer of the same group is already on that instance.
        """
        settings = self.config.client_settings()
        ip = resolve_ip(settings.client_ip)
        instance_name = settings.instance_name or self._default_instance or default_instance_name()
        member = Member(
            MemberKind.CONSUMER,
            self.group,
            handlers=self._handlers,
            topics=self._topics,
            on_route=self._on_route,
            consumer_data=self._consumer_data,
        )
        try:
            instance = join_instance(
                client_id(ip, instance_name),
                self.namesrv_addrs,
                settings,
                member,
                rng=self._rng,
            )
        except DuplicateGroupError as exc:
            raise ConsumerStateError(str(exc)) from exc
        self._instance, self._member = instance, member
        self.client_id = instance.client_id
        self._routes = ConsumerRoutes(instance, self._rng)
        self._api = BrokerApi(
            instance.member_rpc(settings),
            timeout_ms=settings.request_timeout_ms,
            version=settings.version,
        )

    async def close(self) -> None:
        """Stop this consumer's background tasks and leave the instance: UNREGISTER_CLIENT for the group at
        every broker (the instance closes its connections when this was its last member)."""
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        if self._instance is not None and self._member is not None:
            await self._instance.leave(self._member)

    # -- parts ---------------------------------------------------------------------------------------------

    @property
    def instance(self) -> ClientInstance:
        assert self._instance is not None, "the consumer client is not started"
        return self._instance

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
        return self.instance.remoting

    def spawn(self, coro: Awaitable[Any], name: str) -> asyncio.Task[Any]:
        """Run ``coro`` in the background until it ends or the client closes."""

        async def run() -> Any:
            return await coro

        task = asyncio.get_running_loop().create_task(run(), name=name)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    # -- routes and brokers --------------------------------------------------------------------------------

    def _on_route(self, topic: str, route: TopicRouteData | None) -> None:
        if self._routes is not None:
            self._routes.on_route(topic, route)

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
        if found is None and queue.topic:
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
        if found is None and queue.topic:
            await self.routes.refresh(queue.topic)
            found = self.routes.master_or_any(name)
        if found is None:
            raise BrokerNotFoundError(f"no address known for broker {name} (queue {queue})")
        return found

    # -- heartbeats ---------------------------------------------------------------------------------------

    async def heartbeat_all(self) -> int:
        """Heartbeat every known broker now for every group of the instance (its timer does this every
        30 s); returns how many accepted."""
        if self._instance is None or self._instance.closed:
            return 0
        return await self._instance.send_heartbeats()
