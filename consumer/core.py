"""What both consumers are made of: names, client, subscriptions, offsets, positioning, queue look-ups.

The push and the lite pull consumer differ in who drives consumption (handlers vs. ``poll``), not in how
they talk to the cluster; this holds the common part so the two stay small and agree on every detail.
"""

from __future__ import annotations

import dataclasses
import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from client.namesrv import parse_namesrv_list
from consumer import filters
from consumer.client import ConsumerClient
from consumer.config import ConsumerConfig
from consumer.errors import ConsumerError, ConsumerStateError, FilterRefusedError
from consumer.offset_store import (
    LocalFileOffsetStore,
    OffsetStore,
    RemoteBrokerOffsetStore,
    default_local_offset_dir,
)
from consumer.positioning import compute_pull_offset
from consumer.puller import Puller
from consumer.stats import ConsumerStats
from consumer.subscription import SubscriptionTable
from rocketmq_wire.bodies.consumer import ResetOffsetBody
from rocketmq_wire.bodies.heartbeat import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    MessageModel,
    SubscriptionData,
)
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.offset import ResetOffsetRequestHeader
from rocketmq_wire.message import MessageExt
from rocketmq_wire.topics import DEFAULT_CONSUMER_GROUP, validate_group, without_namespace, wrap_namespace
from rocketmq_wire.transport import Handler, RemotingError

logger = logging.getLogger("consumer")

#: Java's default ``instanceName``, kept where the client id names a local offsets file.
LOCAL_STORE_INSTANCE = "DEFAULT"


def merged_config(base: ConsumerConfig | None, overrides: Mapping[str, Any]) -> ConsumerConfig:
    """``base`` (or the defaults) with the keyword arguments that were actually given applied."""
    given = {name: value for name, value in overrides.items() if value is not None}
    return dataclasses.replace(base or ConsumerConfig(), **given)


def parse_message_model(value: MessageModel | str) -> MessageModel:
    try:
        return MessageModel(value.upper() if isinstance(value, str) else value)
    except ValueError:
        raise ValueError(f"unknown message model {value!r}; choose CLUSTERING or BROADCASTING") from None


class ConsumerCore:
    """The shared parts of one consumer; ``open()`` creates the client and offset store, ``close()`` ends
    them."""

    def __init__(
        self,
        group: str,
        namesrv: str | Sequence[str],
        *,
        config: ConsumerConfig,
        model: MessageModel,
        consume_type: ConsumeType,
        consume_from: ConsumeFromWhere,
        timestamp_ms: int,
        rng: random.Random | None,
    ) -> None:
        self.config = config
        self.group = group
        self.wire_group = wrap_namespace(config.namespace, group)
        problem = validate_group(self.wire_group)
        if problem is not None:
            raise ValueError(problem)
        if self.wire_group == DEFAULT_CONSUMER_GROUP:
            raise ValueError(f"the consumer group may not be {DEFAULT_CONSUMER_GROUP!r}")
        self.namesrv_addresses = parse_namesrv_list(namesrv if isinstance(namesrv, str) else list(namesrv))
        self.model = model
        self.consume_type = consume_type
        self.consume_from = consume_from
        self.timestamp_ms = timestamp_ms
        self.rng = rng or random.Random()
        self.subscriptions = SubscriptionTable()
        #: Pull and consume figures per topic, for GET_CONSUMER_RUNNING_INFO.
        self.stats = ConsumerStats()
        #: When ``start`` ran (epoch ms), reported as ``PROP_CONSUMER_START_TIMESTAMP``.
        self.start_timestamp_ms = 0
        self._client: ConsumerClient | None = None
        self._offsets: OffsetStore | None = None
        self._puller: Puller | None = None

    # -- names ---------------------------------------------------------------------------------------------

    def wire_topic(self, topic: str) -> str:
        return wrap_namespace(self.config.namespace, topic)

    def wire_queue(self, queue: MessageQueue) -> MessageQueue:
        return dataclasses.replace(queue, topic=self.wire_topic(queue.topic or ""))

    def user_queue(self, queue: MessageQueue) -> MessageQueue:
        return dataclasses.replace(queue, topic=without_namespace(queue.topic or "", self.config.namespace))

    def user_messages(self, messages: list[MessageExt]) -> list[MessageExt]:
        """Topics as the user named them (Java's ``resetTopic``)."""
        namespace = self.config.namespace
        if namespace:
            for message in messages:
                message.topic = without_namespace(message.topic, namespace)
        return messages

    # -- subscriptions -------------------------------------------------------------------------------------

    def subscribe(self, topic: str, expression: str | None, sql: str | None) -> SubscriptionData:
        """Add or replace the subscription of ``topic`` (as the user names it): a tag expression (``None``:
        every tag) or a SQL92 one; ``ValueError`` for both, or an expression that selects nothing."""
        text, expression_type = filters.subscription_args(topic, expression, sql)
        return self.subscriptions.subscribe(self.wire_topic(topic), text, expression_type)

    async def check_filters(self, subscriptions: Sequence[SubscriptionData] | None = None) -> None:
        """Ask the brokers about each non-tag subscription (of ``subscriptions``, else all) before it is
        used; raises :class:`~consumer.errors.FilterRefusedError` when one refuses. Fetch routes first."""
        client = self.client
        await filters.check_subscriptions(
            client.api,
            client.instance.route,
            self.subscriptions.data() if subscriptions is None else subscriptions,
            group=self.wire_group,
            client_id=client.client_id,
        )

    async def refused_while_running(self, added: SubscriptionData) -> bool:
        """Check a subscription added while running before it is announced (Java checks only at start, and
        its pulls then fail over and over): on a refusal it is withdrawn (unless replaced meanwhile), the
        reason logged at ERROR, and True returned for the caller to release its queues."""
        try:
            await self.check_filters([added])
        except FilterRefusedError as exc:
            topic = added.topic or ""
            if self.subscriptions.get(topic) is added:
                self.subscriptions.unsubscribe(topic)
            logger.error("group %s: subscription to %s withdrawn: %s", self.wire_group, topic, exc)
            return True
        return False

    # -- lifecycle -----------------------------------------------------------------------------------------

    @property
    def client(self) -> ConsumerClient:
        if self._client is None:
            raise ConsumerStateError("the consumer is not started")
        return self._client

    @property
    def offsets(self) -> OffsetStore:
        if self._offsets is None:
            raise ConsumerStateError("the consumer is not started")
        return self._offsets

    @property
    def puller(self) -> Puller:
        if self._puller is None:
            raise ConsumerStateError("the consumer is not started")
        return self._puller

    @property
    def started(self) -> bool:
        return self._client is not None

    @property
    def local_offsets(self) -> bool:
        """Whether offsets live in a local file (broadcasting, or asked for) rather than on the brokers."""
        return self.model == MessageModel.BROADCASTING or self.config.local_offset_store

    async def open(self, handlers: Mapping[int, Handler], topics: Callable[[], list[str]]) -> None:
        self.start_timestamp_ms = time.time_ns() // 1_000_000
        client = ConsumerClient(
            self.config,
            self.namesrv_addresses,
            group=self.wire_group,
            rng=self.rng,
            handlers=handlers,
            consumer_data=self.consumer_data,
            topics=topics,
            default_instance=LOCAL_STORE_INSTANCE if self.local_offsets else None,
        )
        client.start()
        self._client = client
        self._puller = Puller(client)
        if self.local_offsets:
            directory = Path(self.config.local_offset_dir) if self.config.local_offset_dir else None
            self._offsets = LocalFileOffsetStore(
                directory or default_local_offset_dir(), client.client_id, self.wire_group
            )
        else:
            self._offsets = RemoteBrokerOffsetStore(
                client.api,
                self.wire_group,
                client.master_of,
                strict_not_found=self.config.strict_consume_from,
            )
        await self._offsets.load()

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()

    # -- cluster look-ups ----------------------------------------------------------------------------------

    def consumer_data(self) -> ConsumerData:
        """This consumer as its heartbeats describe it."""
        return ConsumerData(
            group_name=self.wire_group,
            consume_type=self.consume_type.value,
            message_model=self.model.value,
            consume_from_where=self.consume_from.value,
            subscription_data_set=self.subscriptions.data(),
            unit_mode=False,
        )

    async def refresh_subscribed_routes(self) -> None:
        """Fetch every subscribed topic's route now (at start, and when a subscription is added)."""
        for topic in self.subscriptions.topics():
            try:
                await self.client.routes.refresh(topic)
            except Exception as exc:
                logger.warning("group %s: no route for topic %s yet: %s", self.wire_group, topic, exc)

    async def min_offset(self, queue: MessageQueue) -> int:
        return await self.client.api.min_offset(await self.client.master_of(queue), queue)

    async def max_offset(self, queue: MessageQueue) -> int:
        return await self.client.api.max_offset(await self.client.master_of(queue), queue)

    async def search_offset(self, queue: MessageQueue, timestamp_ms: int) -> int:
        return await self.client.api.search_offset(await self.client.master_of(queue), queue, timestamp_ms)

    async def start_offset(self, queue: MessageQueue) -> int | None:
        """Where to start ``queue`` (committed offset, else ``consume_from``); ``None`` when the broker could
        not be asked, so the caller leaves the queue for a later attempt."""
        try:
            return await compute_pull_offset(
                queue,
                offsets=self.offsets,
                consume_from=self.consume_from,
                timestamp=self.timestamp_ms,
                max_offset=self.max_offset,
                search_offset=self.search_offset,
            )
        except (ConsumerError, RemotingError) as exc:
            logger.warning("group %s: cannot tell where to start %s: %s", self.wire_group, queue, exc)
            return None

    def reset_request(self, request: RemotingCommand) -> dict[MessageQueue, int] | None:
        """The offsets a broker's RESET_CONSUMER_CLIENT_OFFSET (an operator's reset, relayed) tells this
        group to move to; ``None`` when it is for another group or unreadable."""
        try:
            header = request.read_header(ResetOffsetRequestHeader)
            body = ResetOffsetBody.from_json(request.body)
        except CodecError as exc:
            logger.warning("group %s: unreadable offset reset: %s", self.wire_group, exc)
            return None
        if header.group != self.wire_group:
            return None
        logger.info(
            "group %s: offsets of topic %s reset by the broker: %s",
            self.wire_group,
            header.topic,
            body.offset_table,
        )
        return dict(body.offset_table)
