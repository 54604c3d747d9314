"""What a consumer client tells an operator about itself, through a broker that relays the question.

* :class:`ConsumerRunningInfo` answers GET_CONSUMER_RUNNING_INFO (mqadmin ``consumerStatus``): the
  client's settings (``properties``), its subscriptions, the state of every queue it holds
  (:class:`ProcessQueueInfo`), per-topic pull and consume figures (:class:`TopicConsumeStatus`, Java's
  ``ConsumeStatus``) and, when asked for, a thread dump (``jstack``);
* :class:`ConsumeMessageDirectlyResult` answers CONSUME_MESSAGE_DIRECTLY (mqadmin ``consumeMessage``): how
  the client's listener took the one message it was handed (:class:`CMResult`).

Java keeps the tables of ``ConsumerRunningInfo`` in a ``TreeSet`` / ``TreeMap``, so fastjson writes them
sorted (``SubscriptionData`` by ``topic@subString``, ``MessageQueue`` by topic, broker name, queue id, topics
by name, all with Java's UTF-16 string order) whatever order they are given in here. ``properties`` is a
``java.util.Properties``: from Java 9 on a ``ConcurrentHashMap`` created for 8 entries, so a table built
here is written in that map's order, and one read off the wire keeps the order it came in (a Java 8
peer's ``Hashtable`` order included). 5.x added ``mqPopTable`` and ``userConsumerInfo`` (always written,
usually empty); ``None`` leaves them out as 4.x does.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Self, TypeVar

from rocketmq_wire import fastjson
from rocketmq_wire.bodies.base import (
    Fields,
    JsonBody,
    bean,
    object_fields,
    same,
    string_map,
    to_required_string,
    write_map,
)
from rocketmq_wire.bodies.heartbeat import SubscriptionData
from rocketmq_wire.bodies.java_collections import JavaTable, MapKind, read_map, string_hash
from rocketmq_wire.bodies.message_queue import MessageQueue, read_message_queue
from rocketmq_wire.errors import CodecError

__all__ = [
    "PROPERTIES_TABLE",
    "PROP_CLIENT_VERSION",
    "PROP_CONSUMER_START_TIMESTAMP",
    "PROP_CONSUME_ORDERLY",
    "PROP_CONSUME_TYPE",
    "PROP_NAMESERVER_ADDR",
    "PROP_THREADPOOL_CORE_SIZE",
    "CMResult",
    "ConsumeMessageDirectlyResult",
    "ConsumerRunningInfo",
    "PopProcessQueueInfo",
    "ProcessQueueInfo",
    "TopicConsumeStatus",
]

# The property names Java's client adds to the consumer's own fields (the constants of
# ``ConsumerRunningInfo``; note the missing underscore in ``PROP_CONSUMEORDERLY``).
PROP_NAMESERVER_ADDR = "PROP_NAMESERVER_ADDR"
PROP_THREADPOOL_CORE_SIZE = "PROP_THREADPOOL_CORE_SIZE"
PROP_CONSUME_ORDERLY = "PROP_CONSUMEORDERLY"
PROP_CONSUME_TYPE = "PROP_CONSUME_TYPE"
PROP_CLIENT_VERSION = "PROP_CLIENT_VERSION"
PROP_CONSUMER_START_TIMESTAMP = "PROP_CONSUMER_START_TIMESTAMP"

V = TypeVar("V")

#: ``new Properties()`` on Java 9 and later: ``new ConcurrentHashMap<>(8)``, filled one property at a time.
PROPERTIES_TABLE = JavaTable(MapKind.CONCURRENT_HASH_MAP, initial_capacity=8)


def _java_order(text: str) -> bytes:
    """Sort key giving Java's ``String.compareTo`` order (UTF-16 code units)."""
    return text.encode("utf-16-be", "surrogatepass")


def _queue_order(queue: MessageQueue) -> tuple[bytes, bytes, int]:
    """``MessageQueue.compareTo``: topic, then broker name, then queue id."""
    return (_java_order(queue.topic or ""), _java_order(queue.broker_name or ""), queue.queue_id)


def _subscription_order(subscription: SubscriptionData) -> bytes:
    """``SubscriptionData.compareTo``: ``topic + "@" + subString`` (Java prints a null as ``null``)."""
    topic = "null" if subscription.topic is None else subscription.topic
    expression = "null" if subscription.sub_string is None else subscription.sub_string
    return _java_order(f"{topic}@{expression}")


def _tree_set(subscriptions: Iterable[SubscriptionData]) -> list[SubscriptionData]:
    """A ``TreeSet``: sorted, and of elements comparing equal only the first one added."""
    kept: dict[bytes, SubscriptionData] = {}
    for subscription in subscriptions:
        kept.setdefault(_subscription_order(subscription), subscription)
    return [kept[key] for key in sorted(kept)]


@dataclasses.dataclass(kw_only=True)
class ProcessQueueInfo(JsonBody):
    """One held queue as the client sees it: committed offset, the messages it holds (``cachedMsg*``),
    the batch an orderly listener is working on (``transactionMsg*``), its lock and timestamps (epoch ms).

    ``dropped`` travels as Java's misspelt ``droped``.
    """

    commit_offset: int = 0
    cached_msg_min_offset: int = 0
    cached_msg_max_offset: int = 0
    cached_msg_count: int = 0
    cached_msg_size_in_mib: int = 0
    transaction_msg_min_offset: int = 0
    transaction_msg_max_offset: int = 0
    transaction_msg_count: int = 0
    locked: bool = False
    try_unlock_times: int = 0
    last_lock_timestamp: int = 0
    dropped: bool = False
    last_pull_timestamp: int = 0
    last_consume_timestamp: int = 0

    def to_bean(self) -> fastjson.Bean:
        return bean(
            commitOffset=self.commit_offset,
            cachedMsgMinOffset=self.cached_msg_min_offset,
            cachedMsgMaxOffset=self.cached_msg_max_offset,
            cachedMsgCount=self.cached_msg_count,
            cachedMsgSizeInMiB=self.cached_msg_size_in_mib,
            transactionMsgMinOffset=self.transaction_msg_min_offset,
            transactionMsgMaxOffset=self.transaction_msg_max_offset,
            transactionMsgCount=self.transaction_msg_count,
            locked=self.locked,
            tryUnlockTimes=self.try_unlock_times,
            lastLockTimestamp=self.last_lock_timestamp,
            droped=self.dropped,
            lastPullTimestamp=self.last_pull_timestamp,
            lastConsumeTimestamp=self.last_consume_timestamp,
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(
            commit_offset=obj.get_long("commitOffset"),
            cached_msg_min_offset=obj.get_long("cachedMsgMinOffset"),
            cached_msg_max_offset=obj.get_long("cachedMsgMaxOffset"),
            cached_msg_count=obj.get_int("cachedMsgCount"),
            cached_msg_size_in_mib=obj.get_int("cachedMsgSizeInMiB"),
            transaction_msg_min_offset=obj.get_long("transactionMsgMinOffset"),
            transaction_msg_max_offset=obj.get_long("transactionMsgMaxOffset"),
            transaction_msg_count=obj.get_int("transactionMsgCount"),
            locked=obj.get_bool("locked"),
            try_unlock_times=obj.get_long("tryUnlockTimes"),
            last_lock_timestamp=obj.get_long("lastLockTimestamp"),
            dropped=obj.get_bool("droped"),
            last_pull_timestamp=obj.get_long("lastPullTimestamp"),
            last_consume_timestamp=obj.get_long("lastConsumeTimestamp"),
        )


@dataclasses.dataclass(kw_only=True)
class PopProcessQueueInfo(JsonBody):
    """One queue a 5.x client consumes by POP: messages awaiting their ack, and when it last popped."""

    wait_ack_count: int = 0
    dropped: bool = False
    last_pop_timestamp: int = 0

    def to_bean(self) -> fastjson.Bean:
        return bean(
            waitAckCount=self.wait_ack_count, droped=self.dropped, lastPopTimestamp=self.last_pop_timestamp
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(
            wait_ack_count=obj.get_int("waitAckCount"),
            dropped=obj.get_bool("droped"),
            last_pop_timestamp=obj.get_long("lastPopTimestamp"),
        )


@dataclasses.dataclass(kw_only=True)
class TopicConsumeStatus(JsonBody):
    """Java's ``ConsumeStatus`` body (not the listener's verdict): one topic's figures over the last
    minute -- pull round trip (ms) and messages pulled per second, listener time per call (ms), messages
    consumed OK and failed per second -- and the messages that failed in the last hour."""

    pull_rt: float = 0.0
    pull_tps: float = 0.0
    consume_rt: float = 0.0
    consume_ok_tps: float = 0.0
    consume_failed_tps: float = 0.0
    consume_failed_msgs: int = 0

    def to_bean(self) -> fastjson.Bean:
        return bean(
            pullRT=float(self.pull_rt),
            pullTPS=float(self.pull_tps),
            consumeRT=float(self.consume_rt),
            consumeOKTPS=float(self.consume_ok_tps),
            consumeFailedTPS=float(self.consume_failed_tps),
            consumeFailedMsgs=self.consume_failed_msgs,
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(
            pull_rt=obj.get_double("pullRT"),
            pull_tps=obj.get_double("pullTPS"),
            consume_rt=obj.get_double("consumeRT"),
            consume_ok_tps=obj.get_double("consumeOKTPS"),
            consume_failed_tps=obj.get_double("consumeFailedTPS"),
            consume_failed_msgs=obj.get_long("consumeFailedMsgs"),
        )


def _subscription(value: Any, path: str) -> SubscriptionData:
    return SubscriptionData.from_object(object_fields(value, path))


def _process_queue_info(value: Any, path: str) -> ProcessQueueInfo:
    return ProcessQueueInfo.from_object(object_fields(value, path))


def _pop_queue_info(value: Any, path: str) -> PopProcessQueueInfo:
    return PopProcessQueueInfo.from_object(object_fields(value, path))


def _topic_status(value: Any, path: str) -> TopicConsumeStatus:
    return TopicConsumeStatus.from_object(object_fields(value, path))


def _queue_table(mapping: Mapping[MessageQueue, JsonBody]) -> dict[fastjson.JsonKey, fastjson.JsonValue]:
    """A ``TreeMap<MessageQueue, ...>``: keys written as whole objects, in ``compareTo`` order."""
    return {queue.to_bean(): mapping[queue].to_bean() for queue in sorted(mapping, key=_queue_order)}


def _string_tree(
    mapping: Mapping[str, V], write: Callable[[V], fastjson.JsonValue]
) -> dict[fastjson.JsonKey, fastjson.JsonValue]:
    """A ``TreeMap<String, ...>`` in Java string order."""
    return {key: write(mapping[key]) for key in sorted(mapping, key=_java_order)}


def _string_entries(obj: Fields, name: str) -> list[tuple[str, str]] | None:
    value = obj.get_map(name)
    return None if value is None else string_map(value, f"{obj.path}.{name}")


@dataclasses.dataclass(kw_only=True)
class ConsumerRunningInfo(JsonBody):
    """GET_CONSUMER_RUNNING_INFO's answer: a consumer client's settings, subscriptions and queues."""

    properties: dict[str, str] = dataclasses.field(default_factory=dict)
    subscription_set: list[SubscriptionData] = dataclasses.field(default_factory=list)
    mq_table: dict[MessageQueue, ProcessQueueInfo] = dataclasses.field(default_factory=dict)
    status_table: dict[str, TopicConsumeStatus] = dataclasses.field(default_factory=dict)
    jstack: str | None = None
    mq_pop_table: dict[MessageQueue, PopProcessQueueInfo] | None = None
    user_consumer_info: dict[str, str] | None = None

    def to_bean(self) -> fastjson.Bean:
        return bean(
            properties=write_map(self.properties, string_hash, PROPERTIES_TABLE, same, same),
            subscriptionSet=[s.to_bean() for s in _tree_set(self.subscription_set)],
            mqTable=_queue_table(self.mq_table),
            mqPopTable=None if self.mq_pop_table is None else _queue_table(self.mq_pop_table),
            statusTable=_string_tree(self.status_table, lambda status: status.to_bean()),
            userConsumerInfo=(
                None if self.user_consumer_info is None else _string_tree(self.user_consumer_info, same)
            ),
            jstack=self.jstack,
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        properties = _string_entries(obj, "properties")
        queues = obj.entries_of("mqTable", read_message_queue, _process_queue_info)
        pop_queues = obj.entries_of("mqPopTable", read_message_queue, _pop_queue_info)
        statuses = obj.entries_of("statusTable", to_required_string, _topic_status)
        user_info = _string_entries(obj, "userConsumerInfo")
        return cls(
            properties={} if properties is None else read_map(properties, string_hash, PROPERTIES_TABLE),
            subscription_set=obj.items_of("subscriptionSet", _subscription) or [],
            mq_table=dict(queues or ()),
            status_table=dict(statuses or ()),
            jstack=obj.get_str("jstack"),
            mq_pop_table=None if pop_queues is None else dict(pop_queues),
            user_consumer_info=None if user_info is None else dict(user_info),
        )


class CMResult(enum.StrEnum):
    """How a listener took a message handed to it directly (Java's ``CMResult``, in declaration order)."""

    CR_SUCCESS = "CR_SUCCESS"
    CR_LATER = "CR_LATER"
    CR_ROLLBACK = "CR_ROLLBACK"
    CR_COMMIT = "CR_COMMIT"
    CR_THROW_EXCEPTION = "CR_THROW_EXCEPTION"
    CR_RETURN_NULL = "CR_RETURN_NULL"


#: Ordinals, for a peer that writes the enum as a number.
CM_RESULT_ORDINALS = tuple(CMResult)


@dataclasses.dataclass(kw_only=True)
class ConsumeMessageDirectlyResult(JsonBody):
    """CONSUME_MESSAGE_DIRECTLY's answer. ``order``: an orderly listener took it; ``remark``: the
    exception when it threw; ``spent_time_mills`` (Java's spelling): how long the listener took, in ms.
    ``consume_result`` ``None`` is Java's null (left out)."""

    order: bool = False
    auto_commit: bool = True
    consume_result: CMResult | None = None
    remark: str | None = None
    spent_time_mills: int = 0

    def to_bean(self) -> fastjson.Bean:
        return bean(
            order=self.order,
            autoCommit=self.auto_commit,
            consumeResult=None if self.consume_result is None else self.consume_result.value,
            remark=self.remark,
            spentTimeMills=self.spent_time_mills,
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        name = obj.get_enum("consumeResult", CM_RESULT_ORDINALS)
        try:
            result = None if name is None else CMResult(name)
        except ValueError:
            raise CodecError(f"{obj.path}.consumeResult: unknown CMResult {name!r}") from None
        return cls(
            order=obj.get_bool("order"),
            auto_commit=obj.get_bool("autoCommit", True),
            consume_result=result,
            remark=obj.get_str("remark"),
            spent_time_mills=obj.get_long("spentTimeMills"),
        )
