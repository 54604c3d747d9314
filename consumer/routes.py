"""The consumer's view of the cluster: which queues of a topic can be read, and where each broker is.

A producer writes to *write* queues and may fall back on the auto-create route for an unknown topic; a
consumer reads *read* queues and must never invent a topic, so it keeps its own table (Java's
``topicSubscribeInfoTable``), fed by its client instance (``client.instance``), whose route and broker
tables it shares with every producer and consumer of its client id.
"""

from __future__ import annotations

import logging
import random
from typing import TYPE_CHECKING

from client.errors import ClientError
from consumer.allocate import sorted_queues
from consumer.errors import ConsumerError
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.bodies.route import MASTER_ID, TopicRouteData
from rocketmq_wire.perm import is_readable

if TYPE_CHECKING:
    from client.instance import ClientInstance

logger = logging.getLogger("consumer.routes")


def readable_queues(topic: str, route: TopicRouteData) -> list[MessageQueue]:
    """Every queue a consumer may pull: ``readQueueNums`` of each broker whose permission allows reading."""
    queues: list[MessageQueue] = []
    for data in route.queue_datas:
        if data.broker_name is None or not is_readable(data.perm):
            continue
        queues.extend(
            MessageQueue(topic=topic, broker_name=data.broker_name, queue_id=i)
            for i in range(data.read_queue_nums)
        )
    return sorted_queues(queues)


class ConsumerRoutes:
    """Readable queues per subscribed topic (Java's ``topicSubscribeInfoTable``), over the consumer's client
    instance, which holds the routes and broker addresses of the client id (``brokerAddrTable``), heartbeats
    brokers as it learns of them and hands this table each route its periodic refresh fetches."""

    def __init__(self, instance: ClientInstance, rng: random.Random) -> None:
        self._instance = instance
        self._rng = rng
        self._queues: dict[str, list[MessageQueue]] = {}

    # -- reading -------------------------------------------------------------------------------------------

    def queues(self, topic: str) -> list[MessageQueue] | None:
        """The readable queues of ``topic`` as last fetched (sorted), ``None`` before any fetch found it."""
        found = self._queues.get(topic)
        return None if found is None else list(found)

    def route(self, topic: str) -> TopicRouteData | None:
        return self._instance.route(topic) if topic in self._queues else None

    def address(self, broker_name: str, broker_id: int = MASTER_ID) -> str | None:
        """The address of one broker of the named group; ``None`` when unknown."""
        return self._instance.address(broker_name, broker_id)

    def master_or_any(self, broker_name: str) -> tuple[str, int] | None:
        """The master's address, else any slave's (with its id): reading is allowed from either."""
        return self._instance.master_or_any(broker_name)

    def any_broker_of(self, topic: str) -> str | None:
        """A broker serving ``topic`` (its master if it has one), picked at random as Java does when it asks
        for the group's members: every broker of the topic knows them."""
        route = self.route(topic)
        if route is None or not route.broker_datas:
            return None
        candidates = [d for d in route.broker_datas if d.broker_addrs]
        if not candidates:
            return None
        chosen = self._rng.choice(candidates)
        master = chosen.master_addr()
        return master if master else self._rng.choice(list(chosen.broker_addrs.values()))

    def all_addresses(self) -> list[str]:
        """Every known broker address, masters and slaves (consumer heartbeats go to all of them)."""
        return self._instance.all_addresses()

    def topics(self) -> list[str]:
        return list(self._queues)

    # -- fetching ------------------------------------------------------------------------------------------

    async def refresh(self, topic: str) -> list[MessageQueue] | None:
        """Fetch the route of ``topic`` now; returns its readable queues, ``None`` if no NameServer knows it.

        Raises :class:`ConsumerError` when no NameServer could answer.
        """
        try:
            route = await self._instance.fetch_route(topic)
        except ClientError as exc:
            raise ConsumerError(f"no route for topic {topic}: {exc}") from exc
        self.on_route(topic, route)
        return self.queues(topic)

    def on_route(self, topic: str, route: TopicRouteData | None) -> None:
        """Take a freshly fetched route of ``topic`` (``None``: the NameServers no longer know it)."""
        if route is None:
            if topic in self._queues:
                logger.warning("topic %s disappeared from the NameServers' routes", topic)
            self._queues.pop(topic, None)
            return
        queues = readable_queues(topic, route)
        if self._queues.get(topic) != queues:
            logger.info("topic %s: %d readable queues", topic, len(queues))
        self._queues[topic] = queues

    def forget(self, topic: str) -> None:
        self._queues.pop(topic, None)
