"""The producer's view of the cluster: which queues a topic has on which brokers, and where brokers are.

Routes come from the NameServers through the producer's client instance (``client.instance``), are
cached per topic and refreshed on the instance's timer (and after send failures), as Java's
``MQClientInstance`` does. A topic the NameServers do not know yet is sent along the route of the
auto-create key topic (TBW102), with at most ``defaultTopicQueueNums`` queues per broker: a broker that allows
auto-creation then creates the topic on first write.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
from collections.abc import Callable
from typing import TYPE_CHECKING

from client.errors import ClientError, RouteRefusedError
from producer.errors import NoRouteError, ProducerError
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.bodies.route import MASTER_ID, TopicRouteData
from rocketmq_wire.perm import is_writeable

if TYPE_CHECKING:
    from client.instance import ClientInstance

logger = logging.getLogger("producer.routes")

_INT_MASK = 0x7FFFFFFF


class TopicPublishInfo:
    """The writable queues of one topic and a round-robin position over them.

    The position starts at a random point (as Java's ``ThreadLocalIndex``) so that many producers starting
    together do not all hit queue 0, but it belongs to this topic of this producer only.
    """

    def __init__(
        self,
        topic: str,
        queues: list[MessageQueue],
        route: TopicRouteData | None,
        *,
        order_topic: bool = False,
        rng: random.Random | None = None,
    ) -> None:
        self.topic = topic
        self.queues = queues
        self.route = route
        self.order_topic = order_topic
        self._index = (rng or random).randrange(_INT_MASK + 1)

    @property
    def ok(self) -> bool:
        return bool(self.queues)

    def _next_index(self) -> int:
        self._index = (self._index + 1) & _INT_MASK
        return self._index

    def select(self, last_broker: str | None = None) -> MessageQueue:
        """The next queue in turn, skipping ``last_broker``'s queues (it just failed) if there are others."""
        queues = self.queues
        if last_broker is not None:
            for _ in range(len(queues)):
                queue = queues[self._next_index() % len(queues)]
                if queue.broker_name != last_broker:
                    return queue
        return queues[self._next_index() % len(queues)]

    def select_available(
        self, is_available: Callable[[str], bool], last_broker: str | None
    ) -> MessageQueue | None:
        """The next queue whose broker is not benched, preferring a broker other than ``last_broker``."""
        queues = self.queues
        start = self._next_index()
        fallback: MessageQueue | None = None
        for offset in range(len(queues)):
            queue = queues[(start + offset) % len(queues)]
            if not is_available(queue.broker_name):
                continue
            if queue.broker_name != last_broker:
                return queue
            if fallback is None:
                fallback = queue
        return fallback

    def write_queue_nums(self, broker_name: str) -> int:
        if self.route is None:
            return 0
        for data in self.route.queue_datas:
            if data.broker_name == broker_name:
                return data.write_queue_nums
        return 0

    def next_queue_id(self, count: int) -> int:
        return self._next_index() % count


def publish_info_from_route(
    topic: str, route: TopicRouteData, rng: random.Random | None = None
) -> TopicPublishInfo:
    """The queues a producer may write: the ordered-topic layout when the NameServer has one, else every write
    queue of every writable broker that has a master."""
    if route.order_topic_conf:
        queues: list[MessageQueue] = []
        for item in route.order_topic_conf.split(";"):
            broker_name, _, count = item.partition(":")
            queues.extend(MessageQueue(topic, broker_name, i) for i in range(int(count)))
        return TopicPublishInfo(topic, queues, route, order_topic=True, rng=rng)
    masters = {data.broker_name: data.master_addr() for data in route.broker_datas}
    queues = []
    for data in sorted(route.queue_datas, key=lambda q: q.broker_name or ""):
        if not is_writeable(data.perm) or data.broker_name is None or not masters.get(data.broker_name):
            continue
        queues.extend(MessageQueue(topic, data.broker_name, i) for i in range(data.write_queue_nums))
    return TopicPublishInfo(topic, queues, route, rng=rng)


def default_route_for(route: TopicRouteData, queue_nums: int) -> TopicRouteData:
    """The auto-create key topic's route trimmed to ``queue_nums`` queues per broker (read and write)."""
    trimmed = [
        dataclasses.replace(
            data,
            read_queue_nums=min(queue_nums, data.read_queue_nums),
            write_queue_nums=min(queue_nums, data.read_queue_nums),
        )
        for data in route.queue_datas
    ]
    return dataclasses.replace(route, queue_datas=trimmed)


def _same_route(a: TopicRouteData | None, b: TopicRouteData) -> bool:
    if a is None:
        return False

    def key(route: TopicRouteData) -> tuple[object, ...]:
        queues = sorted(
            (q.broker_name or "", q.read_queue_nums, q.write_queue_nums, q.perm) for q in route.queue_datas
        )
        brokers = sorted(
            (d.broker_name or "", tuple(sorted(d.broker_addrs.items()))) for d in route.broker_datas
        )
        return (route.order_topic_conf, tuple(queues), tuple(brokers))

    return key(a) == key(b)


class RouteTable:
    """One producer's publish routes per topic (Java's ``topicPublishInfoTable``), over its client instance.

    Routes are fetched through the :class:`~client.instance.ClientInstance` the producer is on, which holds
    the one topic route and broker address table of the client id, heartbeats brokers it learns of, and hands
    the producer every route its periodic refresh fetches (:meth:`on_route`).
    """

    def __init__(
        self,
        instance: ClientInstance,
        *,
        create_topic_key: str,
        default_topic_queue_nums: int,
        rng: random.Random,
    ) -> None:
        self._instance = instance
        self._create_topic_key = create_topic_key
        self._default_queue_nums = default_topic_queue_nums
        self._rng = rng
        self._publish: dict[str, TopicPublishInfo] = {}
        self._inflight: dict[str, asyncio.Task[TopicPublishInfo]] = {}

    # -- reading ----------------------------------------------------------------------------------------

    @property
    def topics(self) -> list[str]:
        return list(self._publish)

    def cached(self, topic: str) -> TopicPublishInfo | None:
        return self._publish.get(topic)

    def master_address(self, broker_name: str) -> str | None:
        return self._instance.address(broker_name, MASTER_ID)

    def broker_addresses(self) -> dict[str, dict[int, str]]:
        """Every broker seen in any route of the instance: name -> {broker id: address}."""
        return self._instance.broker_addresses()

    def master_addresses(self) -> list[str]:
        return self._instance.master_addresses()

    # -- fetching ---------------------------------------------------------------------------------------

    async def publish_info(self, topic: str) -> TopicPublishInfo:
        """The topic's queues, from the cache or fetched now; concurrent callers share one fetch."""
        info = self._publish.get(topic)
        if info is None or not info.ok:
            info = await self.refresh(topic)
        if not info.ok:
            raise NoRouteError(f"topic {topic!r} has no writable queue on any broker with a master")
        return info

    async def refresh(self, topic: str) -> TopicPublishInfo:
        """Fetch the topic's route now (joining a fetch already under way)."""
        task = self._inflight.get(topic)
        if task is None:
            task = asyncio.get_running_loop().create_task(self._fetch(topic))
            self._inflight[topic] = task
            task.add_done_callback(lambda done: self._fetch_done(topic, done))
        return await asyncio.shield(task)

    def refresh_soon(self, topic: str) -> None:
        """Refresh in the background (after a failed send); errors are logged, not raised."""
        if topic in self._inflight:
            return
        task = asyncio.get_running_loop().create_task(self._fetch(topic))
        self._inflight[topic] = task
        task.add_done_callback(lambda done: self._fetch_done(topic, done))

    def on_route(self, topic: str, route: TopicRouteData | None) -> None:
        """A route the instance's periodic refresh fetched; a topic the NameServers do not know (yet) keeps
        the queues it has, as Java's producer keeps its publish info when the look-up fails."""
        if route is not None:
            self._install(topic, route, from_default=False)

    async def close(self) -> None:
        tasks = list(self._inflight.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # -- internals ----------------------------------------------------------------------------------------

    def _fetch_done(self, topic: str, task: asyncio.Task[TopicPublishInfo]) -> None:
        if self._inflight.get(topic) is task:
            del self._inflight[topic]
        if not task.cancelled() and task.exception() is not None:
            logger.debug("route fetch of topic %s failed: %s", topic, task.exception())

    async def _route(self, topic: str) -> TopicRouteData | None:
        """The instance's route look-up, its failures as the producer errors a send has always raised."""
        try:
            return await self._instance.fetch_route(topic)
        except RouteRefusedError as exc:
            raise NoRouteError(str(exc)) from exc
        except ProducerError:
            raise
        except ClientError as exc:
            raise ProducerError(str(exc)) from exc

    async def _fetch(self, topic: str) -> TopicPublishInfo:
        route = await self._route(topic)
        from_default = False
        if route is None:
            default = await self._route(self._create_topic_key)
            if default is None:
                raise NoRouteError(
                    f"no route for topic {topic!r}, nor for the auto-create key {self._create_topic_key!r}"
                )
            route = default_route_for(default, self._default_queue_nums)
            from_default = True
        return self._install(topic, route, from_default)

    def _install(self, topic: str, route: TopicRouteData, from_default: bool) -> TopicPublishInfo:
        current = self._publish.get(topic)
        if current is not None and _same_route(current.route, route):
            return current
        info = publish_info_from_route(topic, route, self._rng)
        if current is not None:
            logger.info("route of topic %s changed: %d writable queues", topic, len(info.queues))
        self._publish[topic] = info
        if from_default:
            logger.info(
                "topic %s is unknown to the NameServers; sending along the %s route",
                topic,
                self._create_topic_key,
            )
        return info
