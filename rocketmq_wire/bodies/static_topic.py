"""Static-topic queue mappings (5.x): carried in route data and in the broker's registration body.

A static topic keeps its logical queue ids stable while physical queues move between brokers; these beans
say which broker hosts which logical queue. Their maps are ``ConcurrentHashMap<Integer, ...>``, written
with bare integer keys.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Self

from rocketmq_wire import fastjson
from rocketmq_wire.bodies.base import (
    Fields,
    JsonBody,
    array_of,
    bean,
    object_fields,
    same,
    to_int,
    write_map,
)
from rocketmq_wire.bodies.java_collections import CONCURRENT_HASH_MAP, int_hash, read_map

#: ``MixAll.METADATA_SCOPE_GLOBAL``: the scope of a mapping that is not confined to one cluster.
GLOBAL_SCOPE = "__global__"


@dataclasses.dataclass(kw_only=True)
class LogicQueueMappingItem(JsonBody):
    """One stretch of a logical queue's history: which physical queue held which offset range."""

    gen: int = 0
    queue_id: int = 0
    bname: str | None = None
    logic_offset: int = 0
    start_offset: int = 0
    end_offset: int = -1
    time_of_start: int = -1
    time_of_end: int = -1

    def to_bean(self) -> fastjson.Bean:
        return bean(
            gen=self.gen,
            queueId=self.queue_id,
            bname=self.bname,
            logicOffset=self.logic_offset,
            startOffset=self.start_offset,
            endOffset=self.end_offset,
            timeOfStart=self.time_of_start,
            timeOfEnd=self.time_of_end,
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(
            gen=obj.get_int("gen"),
            queue_id=obj.get_int("queueId"),
            bname=obj.get_str("bname"),
            logic_offset=obj.get_long("logicOffset"),
            start_offset=obj.get_long("startOffset"),
            end_offset=obj.get_long("endOffset", -1),
            time_of_start=obj.get_long("timeOfStart", -1),
            time_of_end=obj.get_long("timeOfEnd", -1),
        )


def _int_key(value: Any, path: str) -> int:
    return to_int(value, path)


@dataclasses.dataclass(kw_only=True)
class TopicQueueMappingInfo(JsonBody):
    """A broker's share of a static topic: total logical queues and logical-to-physical ids it hosts."""

    topic: str | None = None
    scope: str | None = GLOBAL_SCOPE
    total_queues: int = 0
    bname: str | None = None
    epoch: int = 0
    dirty: bool = False
    curr_id_map: dict[int, int] = dataclasses.field(default_factory=dict)

    def _base_properties(self) -> dict[str, fastjson.JsonValue]:
        return {
            "topic": self.topic,
            "scope": self.scope,
            "totalQueues": self.total_queues,
            "bname": self.bname,
            "epoch": self.epoch,
            "dirty": self.dirty,
            "currIdMap": write_map(self.curr_id_map, int_hash, CONCURRENT_HASH_MAP, same, same),
        }

    def to_bean(self) -> fastjson.Bean:
        return fastjson.Bean(self._base_properties())

    @classmethod
    def _base_fields(cls, obj: Fields) -> dict[str, Any]:
        entries = obj.entries_of("currIdMap", _int_key, _int_key)
        return {
            "topic": obj.get_str("topic"),
            "scope": obj.get_str("scope"),
            "total_queues": obj.get_int("totalQueues"),
            "bname": obj.get_str("bname"),
            "epoch": obj.get_long("epoch"),
            "dirty": obj.get_bool("dirty"),
            "curr_id_map": {} if entries is None else read_map(entries, int_hash, CONCURRENT_HASH_MAP),
        }

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(**cls._base_fields(obj))


def _item(value: Any, path: str) -> LogicQueueMappingItem:
    return LogicQueueMappingItem.from_object(object_fields(value, path))


def _items(value: Any, path: str) -> list[LogicQueueMappingItem]:
    return array_of(value, path, _item)


@dataclasses.dataclass(kw_only=True)
class TopicQueueMappingDetail(TopicQueueMappingInfo):
    """The broker-side mapping: for each logical queue it hosts, the items of that queue's history."""

    hosted_queues: dict[int, list[LogicQueueMappingItem]] = dataclasses.field(default_factory=dict)

    def to_bean(self) -> fastjson.Bean:
        properties = self._base_properties()
        properties["hostedQueues"] = write_map(
            self.hosted_queues,
            int_hash,
            CONCURRENT_HASH_MAP,
            same,
            lambda items: [i.to_bean() for i in items],
        )
        return fastjson.Bean(properties)

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        entries = obj.entries_of("hostedQueues", _int_key, _items)
        hosted = {} if entries is None else read_map(entries, int_hash, CONCURRENT_HASH_MAP)
        return cls(**cls._base_fields(obj), hosted_queues=hosted)
