"""The simple consumer: receive messages, then acknowledge each one (RocketMQ 5's POP consumption).

Usage::

    async with SimpleConsumer("Billing", "ns:9876", invisible_duration=30) as consumer:
        consumer.subscribe("Orders", "paid")
        while True:
            for message in await consumer.receive(max_messages=16):
                await handle(message)
                await consumer.ack(message)

No queue belongs to any consumer: every member of the group pops from every queue, and the broker hides
what it handed out for ``invisible_duration`` seconds. A message acknowledged in that time is done; one that
is not (the consumer crashed, or called :meth:`change_invisible_duration` with 0) reappears for the group
with its ``reconsume_times`` one higher. After ``max_delivery_attempts`` deliveries it goes to the group's
dead-letter topic (``%DLQ%<group>``) instead, as Apache's 5.x proxy does for its simple consumers.

This is the remoting protocol's POP (POP_MESSAGE, ACK_MESSAGE, BATCH_ACK_MESSAGE,
CHANGE_MESSAGE_INVISIBLETIME), which Apache brokers serve from 5.0; a 4.x broker is refused with
:class:`~consumer.errors.BrokerVersionError` before anything is sent. A message's receipt handle is its
``POP_CK`` property, so any consumer of the group can acknowledge a message another one received.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import Any, Self

from client.stats import StatsCallback
from client.telemetry import Observation, OtelOptions
from consumer.config import ConsumerConfig
from consumer.core import ConsumerCore, merged_config
from consumer.errors import (
    ConsumerError,
    ConsumerStateError,
)
from consumer.pop_client import PopClient
from consumer.pop_requests import INIT_MODE_MAX, INIT_MODE_MIN
from consumer.positioning import consume_from_where
from rocketmq_wire.bodies.heartbeat import ConsumeFromWhere, ConsumeType, MessageModel, SubscriptionData
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.codes import RequestCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.message import MessageExt
from rocketmq_wire.topics import without_namespace
from rocketmq_wire.transport import Connection, RemotingError

logger = logging.getLogger("consumer.simple")

#: Apache's proxy pops at most this many messages per request.
MAX_MESSAGES_PER_RECEIVE = 32
#: A group's default ``retryMaxTimes`` is 16: 17 deliveries in all.
DEFAULT_MAX_DELIVERY_ATTEMPTS = 17


class SimpleConsumer:
    """A consumer that receives messages with :meth:`receive` and acknowledges them with :meth:`ack`.

    ``invisible_duration`` (seconds) is how long a received message stays hidden from the group;
    ``await_duration`` (seconds) how long a receive waits on a broker that has nothing (long polling);
    ``consume_from`` where a group that never consumed a queue starts (``LAST_OFFSET``, the default, or
    ``FIRST_OFFSET``).
    """

    def __init__(
        self,
        group: str,
        namesrv: str | Sequence[str],
        *,
        invisible_duration: float = 30.0,
        await_duration: float = 20.0,
        max_delivery_attempts: int = DEFAULT_MAX_DELIVERY_ATTEMPTS,
        consume_from: ConsumeFromWhere | str = ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
        config: ConsumerConfig | None = None,
        rng: random.Random | None = None,
        namespace: str | None = None,
        access_key: str | None = None,
        secret_key: str | None = None,
        stats_cb: StatsCallback | None = None,
        stats_interval_s: float | None = None,
        otel: OtelOptions | bool | None = None,
    ) -> None:
        _check_duration("invisible_duration", invisible_duration, minimum=0.001)
        _check_duration("await_duration", await_duration, minimum=0)
        if max_delivery_attempts < 1:
            raise ValueError("max_delivery_attempts must be at least 1")
        start = consume_from_where(consume_from)
        if start not in (
            ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
            ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
        ):
            raise ValueError("a simple consumer starts from LAST_OFFSET or FIRST_OFFSET")
        settings = merged_config(
            config, {"namespace": namespace, "access_key": access_key, "secret_key": secret_key}
        )
        self._core = ConsumerCore(
            group,
            namesrv,
            config=settings,
            model=MessageModel.CLUSTERING,
            consume_type=ConsumeType.CONSUME_POP,
            consume_from=start,
            timestamp_ms=0,
            rng=rng,
        )
        self.invisible_duration = invisible_duration
        self.await_duration = await_duration
        self.max_delivery_attempts = max_delivery_attempts
        self._init_mode = (
            INIT_MODE_MIN if start == ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET else INIT_MODE_MAX
        )
        self._next_target = 0
        self._state = "created"
        self._observation = Observation(
            role="simple_consumer",
            client_id=lambda: self.client_id,
            stats_cb=stats_cb,
            stats_interval_s=stats_interval_s,
            otel=otel,
            group=group,
        )
        self._observer = self._observation.observer

    # -- configuration -------------------------------------------------------------------------------------

    @property
    def group(self) -> str:
        return self._core.group

    @property
    def client_id(self) -> str:
        return self._core.client.client_id if self._core.started else ""

    def subscribe(self, topic: str, expression: str | None = None, *, sql: str | None = None) -> None:
        """Receive ``topic``'s messages whose tag ``expression`` names (``"*"`` or nothing: all of them), or
        with ``sql`` those whose properties satisfy that SQL92 expression (docs/sql92-filters.md).

        The broker filters (a pop carries the expression). ``start`` first asks each broker of a SQL92
        subscription's topic whether it can (CHECK_CLIENT_CONFIG) and raises
        :class:`~consumer.errors.FilterRefusedError` if one refuses.
        """
        added = self._core.subscribe(topic, expression, sql)
        if self._state == "running":
            self._core.client.spawn(self._after_subscription_change(added), "subscription-change")

    async def _after_subscription_change(self, added: SubscriptionData) -> None:
        await self._core.refresh_subscribed_routes()
        await self._core.refused_while_running(added)

    def unsubscribe(self, topic: str) -> None:
        self._core.subscriptions.unsubscribe(self._core.wire_topic(topic))

    def subscriptions(self) -> dict[str, str]:
        """Topic -> expression, as the user named the topics."""
        return {
            without_namespace(data.topic or "", self._core.config.namespace): data.sub_string or ""
            for data in self._core.subscriptions.data()
        }

    # -- lifecycle -----------------------------------------------------------------------------------------

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def start(self) -> None:
        """Join the cluster: fetch the subscribed topics' routes and heartbeat their brokers (so that
        Apache's tools list this consumer in its group)."""
        if self._state != "created":
            raise ConsumerStateError(f"the consumer was already started ({self._state})")
        self._state = "starting"
        core = self._core
        # Brokers tell every member when the group changes; a simple consumer owns no queue to rebalance.
        await core.open({RequestCode.NOTIFY_CONSUMER_IDS_CHANGED: _ignored}, core.subscriptions.topics)
        self._pop_client = PopClient(core, init_mode=self._init_mode)
        try:
            await core.refresh_subscribed_routes()
            await core.check_filters()
            await core.client.heartbeat_all()
        except BaseException:
            self._state = "stopped"
            await core.close()
            raise
        self._state = "running"
        self._observation.start()
        logger.info("simple consumer %s started as client %s", core.wire_group, core.client.client_id)

    async def close(self) -> None:
        """Leave the group. Messages received and not acknowledged reappear once their time is up."""
        if self._state != "running":
            self._state = "stopped"
            return
        self._state = "stopped"
        await self._observation.stop()
        await self._core.close()
        logger.info("simple consumer %s closed", self._core.wire_group)

    shutdown = close

    def _check_running(self) -> None:
        if self._state != "running":
            raise ConsumerStateError(f"the consumer is not running ({self._state})")

    # -- receiving -----------------------------------------------------------------------------------------

    async def receive(
        self,
        max_messages: int = 16,
        *,
        invisible_duration: float | None = None,
        await_duration: float | None = None,
    ) -> list[MessageExt]:
        """Up to ``max_messages`` messages of the subscribed topics, hidden from the group for
        ``invisible_duration`` seconds; ``[]`` when none came within ``await_duration`` seconds.

        Brokers are taken in turn. With several, each is asked without waiting first, and only when all are
        empty does the next one in turn hold the request for ``await_duration``.
        """
        found = await self._receive(max_messages, invisible_duration, await_duration)
        if found:
            self._observer.received(self._core.group, found)
        return found

    def stats(self) -> dict[str, Any] | None:
        """This consumer's statistics now (see ``client.stats``), or None without a ``stats_cb``; a simple
        consumer knows what it received, not how its caller processed it."""
        return self._observation.snapshot()

    async def _receive(
        self, max_messages: int, invisible_duration: float | None, await_duration: float | None
    ) -> list[MessageExt]:
        self._check_running()
        if not 1 <= max_messages <= MAX_MESSAGES_PER_RECEIVE:
            raise ValueError(f"max_messages must be between 1 and {MAX_MESSAGES_PER_RECEIVE}")
        invisible = self.invisible_duration if invisible_duration is None else invisible_duration
        wait = self.await_duration if await_duration is None else await_duration
        _check_duration("invisible_duration", invisible, minimum=0.001)
        _check_duration("await_duration", wait, minimum=0)
        targets = await self._targets()
        if not targets:
            raise ConsumerError(f"no readable queue for the subscribed topics {self.subscriptions()}")
        first = self._next_target % len(targets)
        self._next_target = first + 1
        invisible_ms = round(invisible * 1000)
        if len(targets) > 1:
            for step in range(len(targets)):
                target = targets[(first + step) % len(targets)]
                found = await self._pop(target, max_messages, invisible_ms, 0)
                if found:
                    self._next_target = first + step + 1
                    return found
        return await self._pop(targets[first], max_messages, invisible_ms, round(wait * 1000))

    async def _targets(self) -> list[MessageQueue]:
        """Each subscribed topic on each of its brokers, as a queue with id -1 (every queue there)."""
        core = self._core
        targets = []
        for topic in core.subscriptions.topics():
            queues = await core.client.queues_of(topic) or []
            for broker_name in sorted({q.broker_name or "" for q in queues}):
                targets.append(MessageQueue(topic=topic, broker_name=broker_name, queue_id=-1))
        return targets

    async def _pop(
        self, target: MessageQueue, max_messages: int, invisible_ms: int, poll_ms: int
    ) -> list[MessageExt]:
        pops = self._pops()
        addr, result = await pops.pop(
            target, max_nums=max_messages, invisible_ms=invisible_ms, poll_ms=poll_ms
        )
        kept = []
        for message in result.messages:
            if message.reconsume_times < self.max_delivery_attempts:
                kept.append(message)
                continue
            # Delivered max_delivery_attempts times: to the DLQ. If the broker refuses, the message
            # reappears and a later receive tries again.
            try:
                await pops.to_dead_letters(addr, message)
            except (ConsumerError, RemotingError) as exc:
                logger.warning(
                    "group %s: message %s (%d deliveries) not moved to the dead-letter topic: %s",
                    self._core.wire_group,
                    message.msg_id,
                    message.reconsume_times,
                    exc,
                )
                continue
            logger.info(
                "group %s: message %s moved to the dead-letter topic after %d deliveries",
                self._core.wire_group,
                message.msg_id,
                message.reconsume_times,
            )
        return kept

    def _pops(self) -> PopClient:
        if self._pop_client is None:
            raise ConsumerStateError("the consumer is not started")
        return self._pop_client

    # -- acknowledging -------------------------------------------------------------------------------------

    async def ack(self, messages: MessageExt | Iterable[MessageExt]) -> None:
        """Acknowledge received messages: they will not be delivered again.

        Several messages of one broker go in one BATCH_ACK_MESSAGE where the broker has it (5.1.3 on).
        Raises :class:`~consumer.errors.BrokerError` when a broker refused an ack (an offset outside the
        queue, an unknown topic). Apache's brokers take an ack whose invisible time has run out, but by then
        the message may already be on its way to the group again: ack within ``invisible_duration``, or
        extend it with :meth:`change_invisible_duration`.
        """
        self._check_running()
        # PopClient.ack reads every receipt handle before it sends anything: a message that was not popped
        # is refused with nothing acknowledged.
        await self._pops().ack([messages] if isinstance(messages, MessageExt) else list(messages))

    async def change_invisible_duration(self, message: MessageExt, invisible_duration: float) -> None:
        """Hide ``message`` for ``invisible_duration`` seconds from now (0: let the group have it again at
        once). The message gets a new receipt handle, used by a later :meth:`ack`."""
        self._check_running()
        _check_duration("invisible_duration", invisible_duration, minimum=0)
        await self._pops().change_invisible_time(message, round(invisible_duration * 1000))


async def _ignored(request: RemotingCommand, conn: Connection) -> None:
    return None


def _check_duration(name: str, seconds: float, *, minimum: float) -> None:
    if not minimum <= seconds < 2**63 / 1000:
        raise ValueError(f"{name} must be at least {minimum} s, not {seconds!r}")


__all__ = ["DEFAULT_MAX_DELIVERY_ATTEMPTS", "MAX_MESSAGES_PER_RECEIVE", "SimpleConsumer"]
