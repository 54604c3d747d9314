"""The consumer's view of the cluster: which queues of a topic can be read, and where each broker is.

A producer writes to *write* queues and may fall back on the auto-create route for an unknown topic; a
consumer reads *read* queues and must never invent a topic, so it keeps its own table (Java's
``topicSubscribeInfoTable`` plus ``brokerAddrTable``), fed by the producer's NameServer client (which
already fails over between NameServers).
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable

from consumer.allocate import sorted_queues
from consumer.errors import ConsumerError
from producer.errors import ProducerError
from producer.namesrv import NameServerClient
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.bodies.route import MASTER_ID, TopicRouteData
from rocketmq_wire.perm import is_readable

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
    """Readable queues per subscribed topic and broker addresses, refreshed on demand and on a timer.

    ``on_new_broker(addr)`` runs for every broker address seen for the first time, so the consumer can
    send it a heartbeat before its first pull there (a broker refuses pulls from groups it does not know).
    """

    def __init__(
        self,
        namesrv: NameServerClient,
        rng: random.Random,
        on_new_broker: Callable[[str], None] | None = None,
    ) -> None:
        self._namesrv = namesrv
        self._rng = rng
        self._on_new_broker = on_new_broker
        self._queues: dict[str, list[MessageQueue]] = {}
        self._routes: dict[str, TopicRouteData] = {}
        self._brokers: dict[str, dict[int, str]] = {}

    # -- reading -------------------------------------------------------------------------------------------

    def queues(self, topic: str) -> list[MessageQueue] | None:
        """The readable queues of ``topic`` as last fetched (sorted), ``None`` before any fetch found it."""
        found = self._queues.get(topic)
        return None if found is None else list(found)

    def route(self, topic: str) -> TopicRouteData | None:
        return self._routes.get(topic)

    def address(self, broker_name: str, broker_id: int = MASTER_ID) -> str | None:
        """The address of one broker of the named group; ``None`` when unknown."""
        return self._brokers.get(broker_name, {}).get(broker_id)

    def master_or_any(self, broker_name: str) -> tuple[str, int] | None:
        """The master's address, else any slave's (with its id): reading is allowed from either."""
        addrs = self._brokers.get(broker_name)
        if not addrs:
            return None
        if MASTER_ID in addrs:
            return addrs[MASTER_ID], MASTER_ID
        broker_id = min(addrs)
        return addrs[broker_id], broker_id

    def any_broker_of(self, topic: str) -> str | None:
        """A broker serving ``topic`` (its master if it has one), picked at random as Java does when it asks
        for the group's members: every broker of the topic knows them."""
        route = self._routes.get(topic)
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
        return [addr for addrs in self._brokers.values() for addr in addrs.values()]

    def topics(self) -> list[str]:
        return list(self._queues)

    # -- fetching ------------------------------------------------------------------------------------------

    async def refresh(self, topic: str) -> list[MessageQueue] | None:
        """Fetch the route of ``topic`` now; returns its readable queues, ``None`` if no NameServer knows it.

        Raises :class:`ConsumerError` when no NameServer could answer.
        """
        try:
            route = await self._namesrv.get_route(topic)
        except ProducerError as exc:
            raise ConsumerError(f"no route for topic {topic}: {exc}") from exc
        if route is None:
            if topic in self._queues:
                logger.warning("topic %s disappeared from the NameServers' routes", topic)
            self._queues.pop(topic, None)
            self._routes.pop(topic, None)
            return None
        self._install(topic, route)
        return list(self._queues[topic])

    def forget(self, topic: str) -> None:
        self._queues.pop(topic, None)
        self._routes.pop(topic, None)

    def _install(self, topic: str, route: TopicRouteData) -> None:
        queues = readable_queues(topic, route)
        if self._queues.get(topic) != queues:
            logger.info("topic %s: %d readable queues", topic, len(queues))
        self._queues[topic] = queues
        self._routes[topic] = route
        for data in route.broker_datas:
            if data.broker_name is None:
                continue
            known = self._brokers.get(data.broker_name, {})
            new = [addr for broker_id, addr in data.broker_addrs.items() if known.get(broker_id) != addr]
            self._brokers[data.broker_name] = dict(data.broker_addrs)
            if self._on_new_broker is not None:
                for addr in new:
                    self._on_new_broker(addr)
