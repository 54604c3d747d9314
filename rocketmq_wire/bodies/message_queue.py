"""MessageQueue: (topic, broker, queue id), the key of many body maps and the element of lock sets.

fastjson writes it as a bean, also where it is a map key (``{{"brokerName":...}:...}``); its Java
``hashCode`` decides where it sits in those maps and sets.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Self

from rocketmq_wire import fastjson
from rocketmq_wire.bodies.base import Fields, bean, object_fields
from rocketmq_wire.bodies.java_collections import combine_hashes, int_hash, string_hash


@dataclasses.dataclass(frozen=True, kw_only=True)
class MessageQueue:
    """One queue of a topic on one broker. Frozen, so it can key a dict as it keys Java maps."""

    topic: str | None = None
    broker_name: str | None = None
    queue_id: int = 0

    def java_hash(self) -> int:
        """``MessageQueue.hashCode()``: broker name, queue id, topic, chained by 31."""
        return combine_hashes(
            0 if self.broker_name is None else string_hash(self.broker_name),
            int_hash(self.queue_id),
            0 if self.topic is None else string_hash(self.topic),
        )

    def to_bean(self) -> fastjson.Bean:
        return bean(topic=self.topic, brokerName=self.broker_name, queueId=self.queue_id)

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(
            topic=obj.get_str("topic"),
            broker_name=obj.get_str("brokerName"),
            queue_id=obj.get_int("queueId"),
        )


def message_queue_hash(queue: MessageQueue) -> int:
    return queue.java_hash()


def read_message_queue(value: Any, path: str) -> MessageQueue:
    """A queue written as an object, in value or in key position."""
    return MessageQueue.from_object(object_fields(value, path))


def write_message_queue(queue: MessageQueue) -> fastjson.Bean:
    return queue.to_bean()
