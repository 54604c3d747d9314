"""LOCK_BATCH_MQ / UNLOCK_BATCH_MQ bodies: an orderly consumer locking its queues on a broker.

The queue sets are ``HashSet<MessageQueue>``, written in the order ``MessageQueue.hashCode`` gives them.
``onlyThisBroker`` exists from 5.0 on; ``None`` leaves it out as 4.x does.
"""

from __future__ import annotations

import dataclasses
from typing import Self

from rocketmq_wire import fastjson
from rocketmq_wire.bodies.base import Fields, JsonBody, bean, write_set
from rocketmq_wire.bodies.java_collections import HASH_MAP, read_set
from rocketmq_wire.bodies.message_queue import (
    MessageQueue,
    message_queue_hash,
    read_message_queue,
    write_message_queue,
)


def _write_queues(queues: list[MessageQueue]) -> fastjson.JsonValue:
    return write_set(queues, message_queue_hash, HASH_MAP, write_message_queue)


def _read_queues(obj: Fields, name: str) -> list[MessageQueue]:
    queues = obj.items_of(name, read_message_queue)
    return [] if queues is None else read_set(queues, message_queue_hash, HASH_MAP)


@dataclasses.dataclass(kw_only=True)
class LockBatchRequestBody(JsonBody):
    """The queues a client wants to hold for a consumer group."""

    consumer_group: str | None = None
    client_id: str | None = None
    only_this_broker: bool | None = None
    mq_set: list[MessageQueue] = dataclasses.field(default_factory=list)

    def to_bean(self) -> fastjson.Bean:
        return bean(
            consumerGroup=self.consumer_group,
            clientId=self.client_id,
            onlyThisBroker=self.only_this_broker,
            mqSet=_write_queues(self.mq_set),
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(
            consumer_group=obj.get_str("consumerGroup"),
            client_id=obj.get_str("clientId"),
            only_this_broker=obj.opt_bool("onlyThisBroker"),
            mq_set=_read_queues(obj, "mqSet"),
        )


@dataclasses.dataclass(kw_only=True)
class UnlockBatchRequestBody(LockBatchRequestBody):
    """The queues a client gives up; same fields as the lock request."""


@dataclasses.dataclass(kw_only=True)
class LockBatchResponseBody(JsonBody):
    """The queues the broker granted (``lockOKMQSet``)."""

    lock_ok_mq_set: list[MessageQueue] = dataclasses.field(default_factory=list)

    def to_bean(self) -> fastjson.Bean:
        return bean(lockOKMQSet=_write_queues(self.lock_ok_mq_set))

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(lock_ok_mq_set=_read_queues(obj, "lockOKMQSet"))
