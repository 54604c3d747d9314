"""Per-queue statistics keyed by :class:`MessageQueue`: topic offsets and consumer progress.

Answers GET_TOPIC_STATS_INFO (:class:`TopicStatsTable`), GET_CONSUME_STATS (:class:`ConsumeStats`) and
VIEW_BROKER_STATS_DATA (:class:`BrokerStatsData`, one statistics item by minute, hour and day).
Their maps have queues as keys, which fastjson writes as whole objects in key position. 4.x keeps them in a
``HashMap``, 5.x in a ``ConcurrentHashMap``; maps built here follow 5.x. The rates are doubles, and
``topicPutTps`` and ``pullOffset`` only exist from 5.0 on (``None`` leaves them out).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Self

from rocketmq_wire import fastjson
from rocketmq_wire.bodies.base import Fields, JsonBody, bean, object_fields, write_map
from rocketmq_wire.bodies.java_collections import CONCURRENT_HASH_MAP, read_map
from rocketmq_wire.bodies.message_queue import (
    MessageQueue,
    message_queue_hash,
    read_message_queue,
    write_message_queue,
)


@dataclasses.dataclass(kw_only=True)
class TopicOffset(JsonBody):
    """A queue's offset range and when it last received a message."""

    min_offset: int = 0
    max_offset: int = 0
    last_update_timestamp: int = 0

    def to_bean(self) -> fastjson.Bean:
        return bean(
            minOffset=self.min_offset,
            maxOffset=self.max_offset,
            lastUpdateTimestamp=self.last_update_timestamp,
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(
            min_offset=obj.get_long("minOffset"),
            max_offset=obj.get_long("maxOffset"),
            last_update_timestamp=obj.get_long("lastUpdateTimestamp"),
        )


def _topic_offset(value: Any, path: str) -> TopicOffset:
    return TopicOffset.from_object(object_fields(value, path))


@dataclasses.dataclass(kw_only=True)
class TopicStatsTable(JsonBody):
    """Offsets of every queue of a topic on one broker."""

    offset_table: dict[MessageQueue, TopicOffset] = dataclasses.field(default_factory=dict)
    topic_put_tps: float | None = None

    def to_bean(self) -> fastjson.Bean:
        return bean(
            offsetTable=write_map(
                self.offset_table,
                message_queue_hash,
                CONCURRENT_HASH_MAP,
                write_message_queue,
                lambda o: o.to_bean(),
            ),
            topicPutTps=self.topic_put_tps,
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        entries = obj.entries_of("offsetTable", read_message_queue, _topic_offset)
        return cls(
            offset_table={}
            if entries is None
            else read_map(entries, message_queue_hash, CONCURRENT_HASH_MAP),
            topic_put_tps=obj.opt_double("topicPutTps"),
        )


@dataclasses.dataclass(kw_only=True)
class OffsetWrapper(JsonBody):
    """A consumer group's progress on one queue against the broker's own offset."""

    broker_offset: int = 0
    consumer_offset: int = 0
    pull_offset: int | None = None
    last_timestamp: int = 0

    def to_bean(self) -> fastjson.Bean:
        return bean(
            brokerOffset=self.broker_offset,
            consumerOffset=self.consumer_offset,
            pullOffset=self.pull_offset,
            lastTimestamp=self.last_timestamp,
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(
            broker_offset=obj.get_long("brokerOffset"),
            consumer_offset=obj.get_long("consumerOffset"),
            pull_offset=obj.opt_long("pullOffset"),
            last_timestamp=obj.get_long("lastTimestamp"),
        )


def _offset_wrapper(value: Any, path: str) -> OffsetWrapper:
    return OffsetWrapper.from_object(object_fields(value, path))


@dataclasses.dataclass(kw_only=True)
class ConsumeStats(JsonBody):
    """A consumer group's progress on every queue of a broker, and its consume rate."""

    offset_table: dict[MessageQueue, OffsetWrapper] = dataclasses.field(default_factory=dict)
    consume_tps: float = 0.0

    def compute_total_diff(self) -> int:
        """Messages not yet consumed, summed over the queues (``computeTotalDiff``)."""
        return sum(w.broker_offset - w.consumer_offset for w in self.offset_table.values())

    def to_bean(self) -> fastjson.Bean:
        return bean(
            offsetTable=write_map(
                self.offset_table,
                message_queue_hash,
                CONCURRENT_HASH_MAP,
                write_message_queue,
                lambda o: o.to_bean(),
            ),
            consumeTps=self.consume_tps,
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        entries = obj.entries_of("offsetTable", read_message_queue, _offset_wrapper)
        return cls(
            offset_table={}
            if entries is None
            else read_map(entries, message_queue_hash, CONCURRENT_HASH_MAP),
            consume_tps=obj.get_double("consumeTps"),
        )


@dataclasses.dataclass(kw_only=True)
class BrokerStatsItem(JsonBody):
    """One window of a statistics item: the count in it, per second, and the average time per call."""

    sum: int = 0
    tps: float = 0.0
    avgpt: float = 0.0

    def to_bean(self) -> fastjson.Bean:
        return bean(sum=self.sum, tps=self.tps, avgpt=self.avgpt)

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(sum=obj.get_long("sum"), tps=obj.get_double("tps"), avgpt=obj.get_double("avgpt"))


def _stats_item(obj: Fields | None) -> BrokerStatsItem:
    return BrokerStatsItem() if obj is None else BrokerStatsItem.from_object(obj)


@dataclasses.dataclass(kw_only=True)
class BrokerStatsData(JsonBody):
    """VIEW_BROKER_STATS_DATA's answer: an item over the last minute, hour and day."""

    stats_minute: BrokerStatsItem = dataclasses.field(default_factory=BrokerStatsItem)
    stats_hour: BrokerStatsItem = dataclasses.field(default_factory=BrokerStatsItem)
    stats_day: BrokerStatsItem = dataclasses.field(default_factory=BrokerStatsItem)

    def sum_of_day(self) -> int:
        """The count over the last day, else hour, else minute (mqadmin's ``compute24HourSum``)."""
        for item in (self.stats_day, self.stats_hour, self.stats_minute):
            if item.sum != 0:
                return item.sum
        return 0

    def to_bean(self) -> fastjson.Bean:
        return bean(
            statsMinute=self.stats_minute.to_bean(),
            statsHour=self.stats_hour.to_bean(),
            statsDay=self.stats_day.to_bean(),
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(
            stats_minute=_stats_item(obj.get_object("statsMinute")),
            stats_hour=_stats_item(obj.get_object("statsHour")),
            stats_day=_stats_item(obj.get_object("statsDay")),
        )
