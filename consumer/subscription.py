"""What a consumer subscribes to, and the client-side half of tag filtering.

Brokers filter by tag *hash code* (that is all a consume-queue entry holds), so two tags with the same hash
both get through; the client then checks the tag text, as Java's ``PullAPIWrapper`` does. In clustering mode
a push consumer also subscribes to its group's retry topic, where the broker puts messages to redeliver.
"""

from __future__ import annotations

from collections.abc import Iterator

from rocketmq_wire.bodies.heartbeat import EXPRESSION_TAG, SUB_ALL, SubscriptionData
from rocketmq_wire.bodies.subscription import build_subscription, is_tag_type
from rocketmq_wire.message import MessageExt
from rocketmq_wire.message import const as props
from rocketmq_wire.topics import is_retry_topic, retry_topic


class SubscriptionTable:
    """Topic -> subscription, in subscription order; topics are the names on the wire (namespace included)."""

    def __init__(self) -> None:
        self._table: dict[str, SubscriptionData] = {}

    def subscribe(
        self, topic: str, expression: str | None = SUB_ALL, expression_type: str | None = EXPRESSION_TAG
    ) -> SubscriptionData:
        """Add or replace the subscription of ``topic``; ``ValueError`` for an expression without tags.

        Java would accept ``"|| ||"`` and then receive nothing; a user who typed it meant something else.
        """
        data = build_subscription(topic, expression, expression_type)
        if is_tag_type(data.expression_type) and data.sub_string != SUB_ALL and not data.tags_set:
            raise ValueError(f"the expression {expression!r} names no tag")
        self._table[topic] = data
        return data

    def add_retry(self, group: str) -> SubscriptionData:
        """The group's retry topic, every tag (Java's ``copySubscription`` in clustering mode)."""
        return self.subscribe(retry_topic(group), SUB_ALL)

    def unsubscribe(self, topic: str) -> bool:
        return self._table.pop(topic, None) is not None

    def get(self, topic: str) -> SubscriptionData | None:
        return self._table.get(topic)

    def topics(self) -> list[str]:
        return list(self._table)

    def data(self) -> list[SubscriptionData]:
        return list(self._table.values())

    def __contains__(self, topic: object) -> bool:
        return topic in self._table

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._table))

    def __len__(self) -> int:
        return len(self._table)

    def touch(self, now_ms: int) -> None:
        """Give every subscription a new version (Java does on a queue change, before heartbeating)."""
        for data in self._table.values():
            data.sub_version = now_ms


def tag_filter(subscription: SubscriptionData | None) -> frozenset[str] | None:
    """The tag texts a subscription accepts, or ``None`` when it accepts whatever the broker sent."""
    if (
        subscription is None
        or subscription.class_filter_mode
        or not is_tag_type(subscription.expression_type)
    ):
        return None
    if not subscription.tags_set:
        return None
    return frozenset(subscription.tags_set)


def accepted(messages: list[MessageExt], tags: frozenset[str] | None) -> list[MessageExt]:
    """The messages whose tag the subscription names (all of them when it names none)."""
    if tags is None:
        return messages
    return [m for m in messages if m.tags is not None and m.tags in tags]


def restore_retry_topic(message: MessageExt, group: str) -> None:
    """A message redelivered through ``%RETRY%<group>`` is shown under the topic it was first sent to, as
    Java's ``resetRetryAndNamespace`` does (the ``RETRY_TOPIC`` property the broker set says which)."""
    if not is_retry_topic(message.topic):
        return
    original = message.properties.get(props.RETRY_TOPIC)
    if original is not None and message.topic == retry_topic(group):
        message.topic = original
