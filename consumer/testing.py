"""Helpers for exercising consumers: the project's NameServer and Broker in-process on loopback, and
collectors that let a test wait for deliveries and rebalances instead of sleeping.

Used by this project's tests and benchmark, and handy for trying a consumer by hand. Not imported by the
package itself (it pulls in the broker and the NameServer).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from broker import Broker, Clock
from broker.registration import RegistrationResult
from broker.testing import BrokerClient, config_for_tests
from consumer.listener import ConsumeStatus
from nameserver import NameServer
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.bodies.consumer import ResetOffsetBody
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.headers.offset import ResetOffsetRequestHeader
from rocketmq_wire.message import MessageExt

#: Default bound on every wait in these helpers: long enough for a slow CI machine, short enough to fail.
WAIT_S = 20.0


class LocalCluster:
    """A NameServer and one Broker registered with it, both on 127.0.0.1 with free ports."""

    def __init__(self, store: Path, *, clock: Clock | None = None, **broker_settings: Any) -> None:
        self.namesrv = NameServer("127.0.0.1", 0)
        self._store = store
        self._clock = clock
        self._settings = broker_settings
        self._broker: Broker | None = None
        self._registered = asyncio.Event()

    @property
    def broker(self) -> Broker:
        assert self._broker is not None, "the cluster is not started"
        return self._broker

    @property
    def address(self) -> str:
        """The NameServer address, what consumers and producers are given."""
        return self.namesrv.address

    async def __aenter__(self) -> Self:
        await self.namesrv.start()
        config = config_for_tests(self._store, namesrv_addr=self.namesrv.address, **self._settings)
        self._broker = Broker(config, clock=self._clock)
        self._broker.registration.on_registered(self._on_registered)
        try:
            await self._broker.start()
        except BaseException:
            await self.namesrv.close()
            raise
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._broker is not None:
            await self._broker.close()
        await self.namesrv.close()

    async def restart_broker(self) -> None:
        """Stop the broker and start a new one on the same store and port (what clients see of a restart:
        connections drop, and the new broker knows no client until they heartbeat again)."""
        old = self.broker
        await old.close()
        self._broker = Broker(old.config, clock=self._clock)
        self._broker.registration.on_registered(self._on_registered)
        await self._broker.start()

    def _on_registered(self, results: list[RegistrationResult]) -> None:
        self._registered.set()

    def routed(self, topic: str) -> bool:
        return self.namesrv.routes.pickup_topic_route_data(topic) is not None

    async def reset_offsets(self, group: str, topic: str, offsets: dict[MessageQueue, int]) -> int:
        """Tell the group's online members to move to ``offsets`` (RESET_CONSUMER_CLIENT_OFFSET, as a broker
        relays an operator's reset); returns how many members were told."""
        info = self.broker.consumer_manager.group(group)
        members = [] if info is None else info.connections()
        header = ResetOffsetRequestHeader(topic=topic, group=group, timestamp=0, is_force=True)
        body = ResetOffsetBody(offset_table=dict(offsets)).to_json()
        for conn in members:
            request = RemotingCommand.request(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, header, body)
            await self.broker.server.invoke_oneway(conn, request)
        return len(members)

    async def create_topic(self, topic: str, queues: int = 4) -> None:
        """Create ``topic`` on the broker and return once the NameServer routes it."""
        async with BrokerClient(self.broker.address) as client:
            answer = await client.create_topic(topic, queues)
        if answer.code != ResponseCode.SUCCESS:
            raise AssertionError(f"creating topic {topic} failed: {answer.remark}")
        async with asyncio.timeout(WAIT_S):
            while not self.routed(topic):
                self._registered.clear()
                await self._registered.wait()


@contextlib.asynccontextmanager
async def local_cluster(store: Path, **kwargs: Any) -> AsyncIterator[LocalCluster]:
    async with LocalCluster(store, **kwargs) as cluster:
        yield cluster


@dataclasses.dataclass(frozen=True, slots=True)
class Delivery:
    """One handler call's view of a message: who got it, and what it looked like then."""

    consumer: str
    topic: str
    queue: MessageQueue
    queue_offset: int
    msg_id: str
    body: bytes
    reconsume_times: int
    keys: tuple[str, ...]


class Received:
    """Records deliveries (from any number of consumers) and lets a test wait for a count of them.

    ``handler(name)`` makes a push handler that records and answers ``status`` (or what ``decide(message)``
    says).
    """

    def __init__(self) -> None:
        self.deliveries: list[Delivery] = []
        #: The delivered messages themselves, in delivery order.
        self.messages: list[MessageExt] = []
        self._changed = asyncio.Condition()

    def handler(
        self,
        name: str,
        status: ConsumeStatus = ConsumeStatus.CONSUME_SUCCESS,
        decide: Callable[[MessageExt], ConsumeStatus] | None = None,
    ) -> Callable[[list[MessageExt], Any], Any]:
        async def handle(messages: list[MessageExt], context: Any) -> ConsumeStatus:
            verdict = status
            for message in messages:
                self.record(name, message, context.message_queue)
                if decide is not None:
                    verdict = decide(message)
            async with self._changed:
                self._changed.notify_all()
            return verdict

        return handle

    def record(self, name: str, message: MessageExt, queue: MessageQueue) -> None:
        self.messages.append(message)
        self.deliveries.append(
            Delivery(
                consumer=name,
                topic=message.topic,
                queue=queue,
                queue_offset=message.queue_offset,
                msg_id=message.client_msg_id,
                body=message.body,
                reconsume_times=message.reconsume_times,
                keys=tuple(message.keys),
            )
        )

    async def wait_for(self, count: int, timeout: float = WAIT_S) -> list[Delivery]:
        """Wait until at least ``count`` deliveries were recorded; returns them all."""
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(lambda: len(self.deliveries) >= count)
        return list(self.deliveries)

    def bodies(self, consumer: str | None = None) -> list[bytes]:
        return [d.body for d in self.deliveries if consumer is None or d.consumer == consumer]

    def duplicates(self) -> list[bytes]:
        counts = collections.Counter(d.body for d in self.deliveries)
        return sorted(body for body, n in counts.items() if n > 1)


class Assignments:
    """A rebalance listener for several consumers: the latest queues each owns, per topic."""

    def __init__(self) -> None:
        self.owned: dict[str, dict[str, frozenset[MessageQueue]]] = {}
        self._changes: collections.Counter[tuple[str, str]] = collections.Counter()
        self._changed = asyncio.Condition()

    def listener(self, name: str) -> Callable[[str, list[MessageQueue], list[MessageQueue]], None]:
        def record(topic: str, all_queues: list[MessageQueue], owned: list[MessageQueue]) -> None:
            self.owned.setdefault(name, {})[topic] = frozenset(owned)
            self._changes[(name, topic)] += 1
            asyncio.get_running_loop().create_task(self._notify())

        return record

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    def changes(self, name: str, topic: str) -> int:
        """How many times the queues of ``topic`` owned by ``name`` changed."""
        return self._changes[(name, topic)]

    def of(self, name: str, topic: str) -> frozenset[MessageQueue]:
        return self.owned.get(name, {}).get(topic, frozenset())

    async def wait_until(self, predicate: Callable[[], bool], timeout: float = WAIT_S) -> None:
        async with asyncio.timeout(timeout), self._changed:
            await self._changed.wait_for(predicate)
