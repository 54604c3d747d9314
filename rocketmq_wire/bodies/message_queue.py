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


@dataclasses.dataclass(frozen=True, slots=True, order=True)
class MessageQueue:
    """One queue of a topic on one broker. Frozen, so it can key a dict as it keys Java maps.

    This is the only ``MessageQueue`` of the project: the producer's results, selectors and sends use it as
    the consumers and the bodies do (``producer.MessageQueue`` is this class). Fields are positional in
    Java's constructor order, and ordering follows Java's ``compareTo`` (topic, broker name, queue id).
    Java's ``null`` topic or broker name is held as ``""`` (its hash is 0 either way) and written as null
    again, so every body reads and writes as before while callers need no ``None`` checks.
    """

    topic: str = ""
    broker_name: str = ""
    queue_id: int = 0

    def __str__(self) -> str:
        """Java's ``MessageQueue.toString()``, as logs and error messages show it."""
        return f"MessageQueue [topic={self.topic}, brokerName={self.broker_name}, queueId={self.queue_id}]"

    def java_hash(self) -> int:
        """``MessageQueue.hashCode()``: broker name, queue id, topic, chained by 31 (null hashes as "")."""
        return combine_hashes(string_hash(self.broker_name), int_hash(self.queue_id), string_hash(self.topic))

    def to_bean(self) -> fastjson.Bean:
        return bean(topic=self.topic or None, brokerName=self.broker_name or None, queueId=self.queue_id)

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(
            topic=obj.get_str("topic") or "",
            broker_name=obj.get_str("brokerName") or "",
            queue_id=obj.get_int("queueId"),
        )


def message_queue_hash(queue: MessageQueue) -> int:
    return queue.java_hash()


def read_message_queue(value: Any, path: str) -> MessageQueue:
    """A queue written as an object, in value or in key position."""
    return MessageQueue.from_object(object_fields(value, path))


def write_message_queue(queue: MessageQueue) -> fastjson.Bean:
    return queue.to_bean()
