"""The POP requests of one consumer, by message and queue rather than by broker address.

Both POP consumers -- :class:`consumer.SimpleConsumer` and a push consumer's POP queues -- pop, acknowledge
and hide messages the same way: at the master of the message's broker (POP state lives only there), after
checking once that the broker's release has POP (5.0) and, for a batch ack, BATCH_ACK_MESSAGE (5.1.3). A
message names its broker and queue in its receipt handle, so any consumer of the group can ack it.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Sequence

from consumer.core import ConsumerCore
from consumer.errors import BrokerNotFoundError, BrokerVersionError
from consumer.pop_requests import INIT_MODE_MAX, PopResult, PopSpec, PopStatus, receipt_handle
from consumer.subscription import tag_filter
from rocketmq_wire import features
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.bodies.route import MASTER_ID
from rocketmq_wire.message import MessageExt, encode_properties
from rocketmq_wire.message import const as props
from rocketmq_wire.pop_extra import ExtraInfo

logger = logging.getLogger("consumer.pop_client")


class PopClient:
    """POP, ACK, BATCH_ACK and CHANGE_MESSAGE_INVISIBLETIME for one started consumer (its core)."""

    def __init__(self, core: ConsumerCore, *, init_mode: int = INIT_MODE_MAX) -> None:
        self._core = core
        self.init_mode = init_mode

    async def master(self, topic: str, broker_name: str) -> str:
        """The master address of ``broker_name`` (fetching ``topic``'s route once if unknown), refused with
        :class:`BrokerVersionError` when that broker predates POP."""
        client = self._core.client
        addr = client.routes.address(broker_name, MASTER_ID)
        if addr is None:
            await client.routes.refresh(topic)
            addr = client.routes.address(broker_name, MASTER_ID)
        if addr is None:
            raise BrokerNotFoundError(f"broker {broker_name} has no master known now")
        await client.instance.require_broker_version(
            addr, features.POP_CONSUMPTION, "POP consumption", error=BrokerVersionError
        )
        return addr

    async def pop(
        self, queue: MessageQueue, *, max_nums: int, invisible_ms: int, poll_ms: int
    ) -> tuple[str, PopResult]:
        """One pop of ``queue`` (wire topic; queue id -1: all of the broker's) with the topic's subscription;
        returns the master's address and the result, messages named as the user named their topic.

        A message whose tag the subscription does not name (the broker compared tag hash codes only) is
        acknowledged at once and left out, as Apache's proxy does, so it does not come back.
        """
        core = self._core
        topic, broker_name = queue.topic or "", queue.broker_name or ""
        subscription = core.subscriptions.get(topic)
        addr = await self.master(topic, broker_name)
        if subscription is None:  # unsubscribed meanwhile
            return addr, PopResult(PopStatus.NO_NEW_MSG, [], 0)
        spec = PopSpec(
            group=core.wire_group,
            topic=topic,
            broker_name=broker_name,
            queue_id=-1 if queue.queue_id is None else queue.queue_id,
            max_nums=max_nums,
            invisible_time_ms=invisible_ms,
            poll_time_ms=poll_ms,
            init_mode=self.init_mode,
            expression_type=subscription.expression_type,
            expression=subscription.sub_string,
        )
        started = time.monotonic()
        result = await core.client.api.pop(addr, spec, now_ms=time.time_ns() // 1_000_000, shown_topic=topic)
        if result.status is PopStatus.POLLING_FULL:
            logger.info(
                "broker %s holds too many long polls; group %s asks again later", addr, core.wire_group
            )
        if result.messages:
            core.stats.pulled(topic, (time.monotonic() - started) * 1000, len(result.messages))
            tags = tag_filter(subscription)
            if tags is not None:
                unwanted = [m for m in result.messages if m.tags not in tags]
                for message in unwanted:
                    await core.client.api.ack(
                        addr, receipt_handle(message), group=core.wire_group, topic=topic
                    )
                result.messages = [m for m in result.messages if m.tags in tags]
            core.user_messages(result.messages)
        return addr, result

    async def ack(self, messages: Sequence[MessageExt]) -> None:
        """Acknowledge popped messages: one BATCH_ACK_MESSAGE per broker and topic where the broker has it
        and there are several, else one ACK_MESSAGE each. Every receipt handle is read before anything is
        sent (``ValueError`` for a message that was not popped); raises on the first refusal."""
        core = self._core
        by_broker: dict[str, list[tuple[MessageExt, ExtraInfo]]] = {}
        for message in messages:
            handle = receipt_handle(message)
            by_broker.setdefault(handle.broker_name, []).append((message, handle))
        api = core.client.api
        group = core.wire_group
        for broker_name, entries in by_broker.items():
            by_topic: dict[str, list[ExtraInfo]] = {}
            for message, handle in entries:
                by_topic.setdefault(core.wire_topic(message.topic), []).append(handle)
            addr = await self.master(next(iter(by_topic)), broker_name)
            batch = len(entries) > 1 and await core.client.instance.broker_version(addr) >= features.BATCH_ACK
            for topic, handles in by_topic.items():
                if batch and len(handles) > 1:
                    await api.batch_ack(addr, handles, group=group, topic=topic)
                    continue
                for handle in handles:
                    await api.ack(addr, handle, group=group, topic=topic)

    async def change_invisible_time(self, message: MessageExt, invisible_ms: int) -> None:
        """Hide ``message`` for ``invisible_ms`` from now; it gets the new receipt handle the broker made."""
        core = self._core
        handle = receipt_handle(message)
        topic = core.wire_topic(message.topic)
        addr = await self.master(topic, handle.broker_name)
        renewed = await core.client.api.change_invisible_time(
            addr, handle, group=core.wire_group, topic=topic, invisible_time_ms=invisible_ms
        )
        message.append_properties(encode_properties({props.POP_CK: renewed.text()}))

    async def to_dead_letters(self, addr: str, message: MessageExt) -> None:
        """Move a popped message to the group's dead-letter topic, then acknowledge it (what Apache's proxy
        does past the delivery limit): CONSUMER_SEND_MSG_BACK with delay level -1, naming the topic where
        the broker has the message now."""
        core = self._core
        handle = receipt_handle(message)
        topic = core.wire_topic(message.topic)
        original = dataclasses.replace(message, topic=handle.real_topic(topic, core.wire_group))
        await core.client.api.send_back(
            addr,
            original,
            group=core.wire_group,
            delay_level=-1,
            max_reconsume_times=0,
            broker_name=handle.broker_name,
        )
        await core.client.api.ack(addr, handle, group=core.wire_group, topic=topic)
