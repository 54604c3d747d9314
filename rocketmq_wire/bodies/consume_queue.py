"""QUERY_CONSUME_QUEUE's answer (mqadmin ``queryCq``): raw consume-queue entries of one queue.

Each :class:`ConsumeQueueData` is one 20-byte entry -- where the message is in the commit log, its size,
its tag hash code -- plus, for entries with an extension unit, that unit as JSON, its filter bit map and
whether the asking group's filter matches. The response also carries the queue's index range and, when a
group was named, its subscription and filter data (or a note that it is not online).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Self

from rocketmq_wire import fastjson
from rocketmq_wire.bodies.base import Fields, JsonBody, bean, object_fields
from rocketmq_wire.bodies.heartbeat import SubscriptionData


@dataclasses.dataclass(kw_only=True)
class ConsumeQueueData(JsonBody):
    physic_offset: int = 0
    physic_size: int = 0
    tags_code: int = 0
    extend_data_json: str | None = None
    bit_map: str | None = None
    eval: bool = False
    msg: str | None = None

    def to_bean(self) -> fastjson.Bean:
        return bean(
            physicOffset=self.physic_offset,
            physicSize=self.physic_size,
            tagsCode=self.tags_code,
            extendDataJson=self.extend_data_json,
            bitMap=self.bit_map,
            eval=self.eval,
            msg=self.msg,
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(
            physic_offset=obj.get_long("physicOffset"),
            physic_size=obj.get_int("physicSize"),
            tags_code=obj.get_long("tagsCode"),
            extend_data_json=obj.get_str("extendDataJson"),
            bit_map=obj.get_str("bitMap"),
            eval=obj.get_bool("eval"),
            msg=obj.get_str("msg"),
        )


def _entry(value: Any, path: str) -> ConsumeQueueData:
    return ConsumeQueueData.from_object(object_fields(value, path))


@dataclasses.dataclass(kw_only=True)
class QueryConsumeQueueResponseBody(JsonBody):
    subscription_data: SubscriptionData | None = None
    filter_data: str | None = None
    queue_data: list[ConsumeQueueData] | None = None
    max_queue_index: int = 0
    min_queue_index: int = 0

    def to_bean(self) -> fastjson.Bean:
        return bean(
            subscriptionData=None if self.subscription_data is None else self.subscription_data.to_bean(),
            filterData=self.filter_data,
            queueData=None if self.queue_data is None else [e.to_bean() for e in self.queue_data],
            maxQueueIndex=self.max_queue_index,
            minQueueIndex=self.min_queue_index,
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        subscription = obj.get_object("subscriptionData")
        return cls(
            subscription_data=None if subscription is None else SubscriptionData.from_object(subscription),
            filter_data=obj.get_str("filterData"),
            queue_data=obj.items_of("queueData", _entry),
            max_queue_index=obj.get_long("maxQueueIndex"),
            min_queue_index=obj.get_long("minQueueIndex"),
        )
