"""HEART_BEAT request body: the client's producer groups, consumer groups and their subscriptions.

Sets of ``ProducerData`` and ``ConsumerData`` hash by object identity in Java, so their order on the wire is
arbitrary; they are lists here, written in the order given. ``SubscriptionData`` does define ``hashCode``,
so its set and the tag and tag-code sets inside it are written in ``HashSet`` order.

The C++ client writes enums as ordinals (``"consumeType":1``) and ``subVersion`` as a string; both read
as fastjson reads them.
"""

from __future__ import annotations

import dataclasses
import enum
import time
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
    write_set,
)
from rocketmq_wire.bodies.java_collections import (
    HASH_MAP,
    bool_hash,
    combine_hashes,
    int_hash,
    read_set,
    set_hash,
    string_hash,
)


class ConsumeType(enum.StrEnum):
    CONSUME_ACTIVELY = "CONSUME_ACTIVELY"
    CONSUME_PASSIVELY = "CONSUME_PASSIVELY"
    CONSUME_POP = "CONSUME_POP"


class MessageModel(enum.StrEnum):
    BROADCASTING = "BROADCASTING"
    CLUSTERING = "CLUSTERING"


class ConsumeFromWhere(enum.StrEnum):
    CONSUME_FROM_LAST_OFFSET = "CONSUME_FROM_LAST_OFFSET"
    CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST = (
        "CONSUME_FROM_LAST_OFFSET_AND_FROM_MIN_WHEN_BOOT_FIRST"
    )
    CONSUME_FROM_MIN_OFFSET = "CONSUME_FROM_MIN_OFFSET"
    CONSUME_FROM_MAX_OFFSET = "CONSUME_FROM_MAX_OFFSET"
    CONSUME_FROM_FIRST_OFFSET = "CONSUME_FROM_FIRST_OFFSET"
    CONSUME_FROM_TIMESTAMP = "CONSUME_FROM_TIMESTAMP"


# Declaration order is the ordinal a peer may send instead of the name.
CONSUME_TYPE_ORDINALS = tuple(ConsumeType)
MESSAGE_MODEL_ORDINALS = tuple(MessageModel)
CONSUME_FROM_WHERE_ORDINALS = tuple(ConsumeFromWhere)

#: ``ExpressionType.TAG``: subscriptions filter by tag unless they say otherwise.
EXPRESSION_TAG = "TAG"
#: ``SubscriptionData.SUB_ALL``.
SUB_ALL = "*"


def _now_millis() -> int:
    return time.time_ns() // 1_000_000


def _code(value: Any, path: str) -> int:
    return to_int(value, path)


@dataclasses.dataclass(kw_only=True)
class SubscriptionData(JsonBody):
    """A consumer's subscription to one topic: the expression and, for tags, the tags and their hashes."""

    class_filter_mode: bool = False
    topic: str | None = None
    sub_string: str | None = None
    tags_set: list[str] = dataclasses.field(default_factory=list)
    code_set: list[int] = dataclasses.field(default_factory=list)
    sub_version: int = dataclasses.field(default_factory=_now_millis)
    expression_type: str | None = EXPRESSION_TAG

    def java_hash(self) -> int:
        """``SubscriptionData.hashCode()``, which positions it in a ``HashSet`` (``subVersion`` excluded)."""
        return combine_hashes(
            bool_hash(self.class_filter_mode),
            set_hash(int_hash(c) for c in self.code_set),
            0 if self.sub_string is None else string_hash(self.sub_string),
            set_hash(string_hash(t) for t in self.tags_set),
            0 if self.topic is None else string_hash(self.topic),
            0 if self.expression_type is None else string_hash(self.expression_type),
        )

    def to_bean(self) -> fastjson.Bean:
        return bean(
            classFilterMode=self.class_filter_mode,
            topic=self.topic,
            subString=self.sub_string,
            tagsSet=write_set(self.tags_set, string_hash, HASH_MAP, same),
            codeSet=write_set(self.code_set, int_hash, HASH_MAP, same),
            subVersion=self.sub_version,
            expressionType=self.expression_type,
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        tags = obj.get_array("tagsSet")
        codes = obj.items_of("codeSet", _code)
        return cls(
            class_filter_mode=obj.get_bool("classFilterMode"),
            topic=obj.get_str("topic"),
            sub_string=obj.get_str("subString"),
            tags_set=[]
            if tags is None
            else read_set(string_list(tags, f"{obj.path}.tagsSet"), string_hash, HASH_MAP),
            code_set=[] if codes is None else read_set(codes, int_hash, HASH_MAP),
            sub_version=obj.get_long("subVersion") if obj.has("subVersion") else _now_millis(),
            expression_type=obj.get_str("expressionType", EXPRESSION_TAG),
        )


def subscription_hash(subscription: SubscriptionData) -> int:
    return subscription.java_hash()


def _subscription(value: Any, path: str) -> SubscriptionData:
    return SubscriptionData.from_object(object_fields(value, path))


@dataclasses.dataclass(kw_only=True)
class ProducerData(JsonBody):
    group_name: str | None = None

    def to_bean(self) -> fastjson.Bean:
        return bean(groupName=self.group_name)

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(group_name=obj.get_str("groupName"))


@dataclasses.dataclass(kw_only=True)
class ConsumerData(JsonBody):
    """A consumer group as one client runs it: how it consumes and what it subscribes to."""

    group_name: str | None = None
    consume_type: str | None = None
    message_model: str | None = None
    consume_from_where: str | None = None
    subscription_data_set: list[SubscriptionData] = dataclasses.field(default_factory=list)
    unit_mode: bool = False

    def to_bean(self) -> fastjson.Bean:
        return bean(
            groupName=self.group_name,
            consumeType=self.consume_type,
            messageModel=self.message_model,
            consumeFromWhere=self.consume_from_where,
            subscriptionDataSet=write_set(
                self.subscription_data_set, subscription_hash, HASH_MAP, lambda s: s.to_bean()
            ),
            unitMode=self.unit_mode,
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        subscriptions = obj.items_of("subscriptionDataSet", _subscription)
        return cls(
            group_name=obj.get_str("groupName"),
            consume_type=obj.get_enum("consumeType", CONSUME_TYPE_ORDINALS),
            message_model=obj.get_enum("messageModel", MESSAGE_MODEL_ORDINALS),
            consume_from_where=obj.get_enum("consumeFromWhere", CONSUME_FROM_WHERE_ORDINALS),
            subscription_data_set=(
                [] if subscriptions is None else read_set(subscriptions, subscription_hash, HASH_MAP)
            ),
            unit_mode=obj.get_bool("unitMode"),
        )


def _producer(value: Any, path: str) -> ProducerData:
    return ProducerData.from_object(object_fields(value, path))


def _consumer(value: Any, path: str) -> ConsumerData:
    return ConsumerData.from_object(object_fields(value, path))


@dataclasses.dataclass(kw_only=True)
class HeartbeatData(JsonBody):
    """Everything a client tells a broker in a heartbeat.

    ``heartbeat_fingerprint`` and ``without_sub`` exist from 5.0 on (``None`` leaves them out as 4.x does).
    """

    client_id: str | None = None
    producer_data_set: list[ProducerData] = dataclasses.field(default_factory=list)
    consumer_data_set: list[ConsumerData] = dataclasses.field(default_factory=list)
    heartbeat_fingerprint: int | None = None
    without_sub: bool | None = None

    def to_bean(self) -> fastjson.Bean:
        return bean(
            clientID=self.client_id,
            producerDataSet=[p.to_bean() for p in self.producer_data_set],
            consumerDataSet=[c.to_bean() for c in self.consumer_data_set],
            heartbeatFingerprint=self.heartbeat_fingerprint,
            withoutSub=self.without_sub,
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(
            client_id=obj.get_str("clientID"),
            producer_data_set=obj.items_of("producerDataSet", _producer) or [],
            consumer_data_set=obj.items_of("consumerDataSet", _consumer) or [],
            heartbeat_fingerprint=obj.opt_int("heartbeatFingerprint"),
            without_sub=obj.opt_bool("withoutSub"),
        )
