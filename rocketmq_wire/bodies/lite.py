"""Bodies of RocketMQ 5.5's lite-topic admin reads (the answers behind mqadmin's lite commands).

* GET_BROKER_LITE_INFO: :class:`GetBrokerLiteInfoResponseBody`, a broker's lite figures (light queues in use
  and allowed, subscriptions, table sizes) with every LITE parent topic's TTL and the groups bound to each;
* GET_PARENT_TOPIC_INFO: :class:`GetParentTopicInfoResponseBody`, one parent topic on one broker;
* GET_LITE_TOPIC_INFO: :class:`GetLiteTopicInfoResponseBody`, one lite topic's offsets and subscribers;
* GET_LITE_GROUP_INFO: :class:`GetLiteGroupInfoResponseBody`, a lite group's lag;
* GET_LITE_CLIENT_INFO: :class:`GetLiteClientInfoResponseBody`, one client's lite subscriptions.

5.5.0 writes its bodies with fastjson2, which, for what these bodies hold (beans, string maps and sets,
numbers), writes what fastjson 1 does: properties sorted by name, nulls left out, primitives always there,
collections in their iteration order. The maps and sets are the broker's hash collections; a value read off
the wire keeps the table size its order shows, so it is written back byte for byte, and one built here is
put through the Java collection the broker builds (:mod:`rocketmq_wire.bodies.java_collections`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Self

from rocketmq_wire import fastjson
from rocketmq_wire.bodies.base import (
    Fields,
    JsonBody,
    bean,
    object_fields,
    same,
    string_list,
    to_int,
    to_required_string,
    write_map,
    write_set,
)
from rocketmq_wire.bodies.java_collections import (
    CONCURRENT_HASH_MAP,
    HASH_MAP,
    JavaTable,
    MapKind,
    combine_hashes,
    read_map,
    read_set,
    string_hash,
)
from rocketmq_wire.bodies.stats import OffsetWrapper, TopicOffset

#: The broker's topic and group tables (``ConcurrentHashMap(1024)``), which its lite figures are collected
#: from entry by entry: into a ``HashMap`` (``Collectors.toMap`` / ``groupingBy``) of ``HashSet`` values.
_BROKER_TABLE = JavaTable(MapKind.CONCURRENT_HASH_MAP, 1024)
#: What the lag bodies' ``earliestUnconsumedTimestamp`` starts as in Java, and stays when nothing is known.
UNKNOWN_TIMESTAMP = -1
FROM_BROKER_TABLE = JavaTable(MapKind.HASH_MAP, source=_BROKER_TABLE)


@dataclasses.dataclass(frozen=True, slots=True)
class ClientGroup:
    """A client of a group subscribed to a lite topic (``clientId`` ``*`` for a wildcard group's stand-in).

    Java's class has public final fields and no getters; fastjson2 writes the fields. A Java ``null`` is
    held as ``""`` (both hash to 0) and written as null again.
    """

    client_id: str = ""
    group: str = ""

    def java_hash(self) -> int:
        """``Objects.hash(clientId, group)``."""
        return combine_hashes(string_hash(self.client_id), string_hash(self.group))

    def to_bean(self) -> fastjson.Bean:
        return bean(clientId=self.client_id or None, group=self.group or None)

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(client_id=obj.get_str("clientId") or "", group=obj.get_str("group") or "")


def _client_group_hash(member: ClientGroup) -> int:
    return member.java_hash()


def _read_client_group(value: Any, path: str) -> ClientGroup:
    return ClientGroup.from_object(object_fields(value, path))


def _write_client_group(member: ClientGroup) -> fastjson.JsonValue:
    return member.to_bean()


def _read_names(value: Any, path: str, table: JavaTable) -> list[str]:
    return read_set(string_list(value, path), string_hash, table)


def _write_names(names: list[str], table: JavaTable) -> fastjson.JsonValue:
    return write_set(names, string_hash, table, same)


def _write_group_meta(groups: dict[str, list[str]]) -> fastjson.JsonValue:
    return write_map(
        groups, string_hash, FROM_BROKER_TABLE, same, lambda g: _write_names(g, FROM_BROKER_TABLE)
    )


def _optional_names(obj: Fields, name: str, table: JavaTable) -> list[str] | None:
    value = obj.get_raw(name)
    return None if value is None else _read_names(value, f"{obj.path}.{name}", table)


@dataclasses.dataclass(kw_only=True)
class GetBrokerLiteInfoResponseBody(JsonBody):
    """A broker's lite figures (mqadmin ``getBrokerLiteInfo``).

    ``topic_meta`` maps each LITE parent topic to its lite topics' expiration (``lite.topic.expiration``,
    -1 when unset), ``group_meta`` each parent topic to the groups bound to it (``lite.bind.topic``).
    """

    store_type: str | None = None
    max_lmq_num: int = 0
    current_lmq_num: int = 0
    lite_subscription_count: int = 0
    order_info_count: int = 0
    cq_table_size: int = 0
    offset_table_size: int = 0
    event_map_size: int = 0
    topic_meta: dict[str, int] | None = None
    group_meta: dict[str, list[str]] | None = None

    def to_bean(self) -> fastjson.Bean:
        topics, groups = self.topic_meta, self.group_meta
        return bean(
            storeType=self.store_type,
            maxLmqNum=self.max_lmq_num,
            currentLmqNum=self.current_lmq_num,
            liteSubscriptionCount=self.lite_subscription_count,
            orderInfoCount=self.order_info_count,
            cqTableSize=self.cq_table_size,
            offsetTableSize=self.offset_table_size,
            eventMapSize=self.event_map_size,
            topicMeta=None
            if topics is None
            else write_map(topics, string_hash, FROM_BROKER_TABLE, same, same),
            groupMeta=None if groups is None else _write_group_meta(groups),
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        topics = obj.entries_of("topicMeta", to_required_string, to_int)
        groups = obj.entries_of(
            "groupMeta", to_required_string, lambda value, path: _read_names(value, path, FROM_BROKER_TABLE)
        )
        return cls(
            store_type=obj.get_str("storeType"),
            max_lmq_num=obj.get_int("maxLmqNum"),
            current_lmq_num=obj.get_int("currentLmqNum"),
            lite_subscription_count=obj.get_int("liteSubscriptionCount"),
            order_info_count=obj.get_int("orderInfoCount"),
            cq_table_size=obj.get_int("cqTableSize"),
            offset_table_size=obj.get_int("offsetTableSize"),
            event_map_size=obj.get_int("eventMapSize"),
            topic_meta=None if topics is None else read_map(topics, string_hash, FROM_BROKER_TABLE),
            group_meta=None if groups is None else read_map(groups, string_hash, FROM_BROKER_TABLE),
        )


@dataclasses.dataclass(kw_only=True)
class GetParentTopicInfoResponseBody(JsonBody):
    """One LITE parent topic on one broker (mqadmin ``getParentTopicInfo``): its lite topics' expiration
    (``ttl``), how many lite topics it has, the broker's light queues in use, the groups bound to it."""

    topic: str | None = None
    ttl: int = 0
    groups: list[str] | None = None
    lmq_num: int = 0
    lite_topic_count: int = 0

    def to_bean(self) -> fastjson.Bean:
        return bean(
            topic=self.topic,
            ttl=self.ttl,
            groups=None if self.groups is None else _write_names(self.groups, FROM_BROKER_TABLE),
            lmqNum=self.lmq_num,
            liteTopicCount=self.lite_topic_count,
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(
            topic=obj.get_str("topic"),
            ttl=obj.get_int("ttl"),
            groups=_optional_names(obj, "groups", FROM_BROKER_TABLE),
            lmq_num=obj.get_int("lmqNum"),
            lite_topic_count=obj.get_int("liteTopicCount"),
        )


def _topic_offset(obj: Fields | None) -> TopicOffset | None:
    return None if obj is None else TopicOffset.from_object(obj)


@dataclasses.dataclass(kw_only=True)
class GetLiteTopicInfoResponseBody(JsonBody):
    """One lite topic on one broker (mqadmin ``getLiteTopicInfo``): its light queue's offsets, the clients
    subscribed to it (a ``HashSet``), and whether the broker is the one the lite topic is sharded to."""

    parent_topic: str | None = None
    lite_topic: str | None = None
    subscriber: list[ClientGroup] | None = None
    topic_offset: TopicOffset | None = None
    sharding_to_broker: bool = False

    def to_bean(self) -> fastjson.Bean:
        members = self.subscriber
        return bean(
            parentTopic=self.parent_topic,
            liteTopic=self.lite_topic,
            subscriber=None
            if members is None
            else write_set(members, _client_group_hash, HASH_MAP, _write_client_group),
            topicOffset=None if self.topic_offset is None else self.topic_offset.to_bean(),
            shardingToBroker=self.sharding_to_broker,
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        members = obj.items_of("subscriber", _read_client_group)
        return cls(
            parent_topic=obj.get_str("parentTopic"),
            lite_topic=obj.get_str("liteTopic"),
            subscriber=None if members is None else read_set(members, _client_group_hash, HASH_MAP),
            topic_offset=_topic_offset(obj.get_object("topicOffset")),
            sharding_to_broker=obj.get_bool("shardingToBroker"),
        )


@dataclasses.dataclass(kw_only=True)
class LiteLagInfo(JsonBody):
    """One lite topic of a group's top-K: messages not yet consumed and the store time of the oldest."""

    lite_topic: str | None = None
    lag_count: int = 0
    earliest_unconsumed_timestamp: int = UNKNOWN_TIMESTAMP

    def to_bean(self) -> fastjson.Bean:
        return bean(
            liteTopic=self.lite_topic,
            lagCount=self.lag_count,
            earliestUnconsumedTimestamp=self.earliest_unconsumed_timestamp,
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(
            lite_topic=obj.get_str("liteTopic"),
            lag_count=obj.get_long("lagCount"),
            earliest_unconsumed_timestamp=obj.get_long("earliestUnconsumedTimestamp", UNKNOWN_TIMESTAMP),
        )


def _read_lag(value: Any, path: str) -> LiteLagInfo:
    return LiteLagInfo.from_object(object_fields(value, path))


def _write_lags(lags: list[LiteLagInfo] | None) -> fastjson.JsonValue:
    return None if lags is None else [lag.to_bean() for lag in lags]


@dataclasses.dataclass(kw_only=True)
class GetLiteGroupInfoResponseBody(JsonBody):
    """A lite group's lag on one broker (mqadmin ``getLiteGroupInfo``).

    Asked about one lite topic, the broker fills ``lite_topic_offset_wrapper`` when the group has an offset
    there, and answers -1 for both totals when the lite topic is empty; asked about none, it fills the two
    top-K lists, most lagging by count and by age. A timestamp nobody set stays -1 (Java's initial value).
    """

    group: str | None = None
    parent_topic: str | None = None
    lite_topic: str | None = None
    earliest_unconsumed_timestamp: int = UNKNOWN_TIMESTAMP
    total_lag_count: int = 0
    lite_topic_offset_wrapper: OffsetWrapper | None = None
    lag_count_top_k: list[LiteLagInfo] | None = None
    lag_timestamp_top_k: list[LiteLagInfo] | None = None

    def to_bean(self) -> fastjson.Bean:
        wrapper = self.lite_topic_offset_wrapper
        return bean(
            group=self.group,
            parentTopic=self.parent_topic,
            liteTopic=self.lite_topic,
            earliestUnconsumedTimestamp=self.earliest_unconsumed_timestamp,
            totalLagCount=self.total_lag_count,
            liteTopicOffsetWrapper=None if wrapper is None else wrapper.to_bean(),
            lagCountTopK=_write_lags(self.lag_count_top_k),
            lagTimestampTopK=_write_lags(self.lag_timestamp_top_k),
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        wrapper = obj.get_object("liteTopicOffsetWrapper")
        return cls(
            group=obj.get_str("group"),
            parent_topic=obj.get_str("parentTopic"),
            lite_topic=obj.get_str("liteTopic"),
            earliest_unconsumed_timestamp=obj.get_long("earliestUnconsumedTimestamp", UNKNOWN_TIMESTAMP),
            total_lag_count=obj.get_long("totalLagCount"),
            lite_topic_offset_wrapper=None if wrapper is None else OffsetWrapper.from_object(wrapper),
            lag_count_top_k=obj.items_of("lagCountTopK", _read_lag),
            lag_timestamp_top_k=obj.items_of("lagTimestampTopK", _read_lag),
        )


@dataclasses.dataclass(kw_only=True)
class GetLiteClientInfoResponseBody(JsonBody):
    """One client's lite subscriptions on one broker (mqadmin ``getLiteClientInfo``).

    ``lite_topic_count`` is how many lite topics the client subscribes to (-1: no subscription at all) and
    ``lite_topic_set`` up to the ``maxCount`` asked of them, by their light queue names
    (:func:`rocketmq_wire.topics.lite_queue_name`): the subscription's own set
    (``ConcurrentHashMap.newKeySet``) when all fit, else a ``HashSet`` of the first ones.
    ``last_access_time`` is when the client last asked for lite messages (-1 when never).
    """

    parent_topic: str | None = None
    group: str | None = None
    client_id: str | None = None
    last_access_time: int = 0
    last_consume_time: int = 0
    lite_topic_count: int = 0
    lite_topic_set: list[str] | None = None

    def to_bean(self) -> fastjson.Bean:
        names = self.lite_topic_set
        return bean(
            parentTopic=self.parent_topic,
            group=self.group,
            clientId=self.client_id,
            lastAccessTime=self.last_access_time,
            lastConsumeTime=self.last_consume_time,
            liteTopicCount=self.lite_topic_count,
            liteTopicSet=None if names is None else _write_names(names, CONCURRENT_HASH_MAP),
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(
            parent_topic=obj.get_str("parentTopic"),
            group=obj.get_str("group"),
            client_id=obj.get_str("clientId"),
            last_access_time=obj.get_long("lastAccessTime"),
            last_consume_time=obj.get_long("lastConsumeTime"),
            lite_topic_count=obj.get_int("liteTopicCount"),
            lite_topic_set=_optional_names(obj, "liteTopicSet", CONCURRENT_HASH_MAP),
        )
