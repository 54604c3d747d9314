"""Bodies about client groups: who is connected, which groups exist, where offsets stand.

* :class:`ConsumerConnection` answers GET_CONSUMER_CONNECTION_LIST, :class:`ProducerConnection`
  GET_PRODUCER_CONNECTION_LIST;
* :class:`ProducerTableInfo` (a list of :class:`ProducerInfo` per group) answers GET_ALL_PRODUCER_INFO;
* :class:`GetConsumerListByGroupResponseBody` answers GET_CONSUMER_LIST_BY_GROUP;
* :class:`GroupList` answers QUERY_TOPIC_CONSUME_BY_WHO;
* :class:`ResetOffsetBody` carries RESET_CONSUMER_CLIENT_OFFSET / INVOKE_BROKER_TO_RESET_OFFSET offsets;
* :class:`CheckClientRequestBody` is CHECK_CLIENT_CONFIG's request (a consumer asking a broker whether it can
  serve a subscription, before a SQL92 one is used);
* :class:`ConsumerOffsetSerializeWrapper` answers GET_ALL_CONSUMER_OFFSET (and is the broker's offset file);
* :class:`OffsetSerializeWrapper` is a broadcasting consumer's local offset file.
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
    map_entries,
    object_fields,
    same,
    string_list,
    to_int,
    to_long,
    to_required_string,
    write_map,
    write_set,
)
from rocketmq_wire.bodies.heartbeat import (
    CONSUME_FROM_WHERE_ORDINALS,
    CONSUME_TYPE_ORDINALS,
    MESSAGE_MODEL_ORDINALS,
    SubscriptionData,
)
from rocketmq_wire.bodies.java_collections import (
    CONCURRENT_HASH_MAP,
    HASH_MAP,
    JavaMap,
    JavaTable,
    MapKind,
    int_hash,
    read_map,
    read_set,
    string_hash,
)
from rocketmq_wire.bodies.message_queue import (
    MessageQueue,
    message_queue_hash,
    read_message_queue,
    write_message_queue,
)
from rocketmq_wire.bodies.topic_config import DataVersion

#: ``LanguageCode`` constants by ordinal, for peers that send the number.
LANGUAGE_ORDINALS = (
    "JAVA",
    "CPP",
    "DOTNET",
    "PYTHON",
    "DELPHI",
    "ERLANG",
    "RUBY",
    "OTHER",
    "HTTP",
    "GO",
    "PHP",
    "OMS",
    "RUST",
    "NODE_JS",
)

#: The broker fills the subscription table with ``putAll`` into a fresh ``ConcurrentHashMap``.
SUBSCRIPTION_TABLE = JavaTable(MapKind.CONCURRENT_HASH_MAP, copied=True)


@dataclasses.dataclass(kw_only=True)
class Connection(JsonBody):
    """One client connection of a group: id, address, language and version."""

    client_id: str | None = None
    client_addr: str | None = None
    language: str | None = None
    version: int = 0

    def to_bean(self) -> fastjson.Bean:
        return bean(
            clientId=self.client_id,
            clientAddr=self.client_addr,
            language=self.language,
            version=self.version,
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(
            client_id=obj.get_str("clientId"),
            client_addr=obj.get_str("clientAddr"),
            language=obj.get_enum("language", LANGUAGE_ORDINALS),
            version=obj.get_int("version"),
        )


def _connection(value: Any, path: str) -> Connection:
    return Connection.from_object(object_fields(value, path))


def _subscription(value: Any, path: str) -> SubscriptionData:
    return SubscriptionData.from_object(object_fields(value, path))


@dataclasses.dataclass(kw_only=True)
class ConsumerConnection(JsonBody):
    """A consumer group's live connections and subscriptions on one broker.

    ``Connection`` hashes by identity in Java, so ``connection_set`` is written in the order given.
    """

    connection_set: list[Connection] = dataclasses.field(default_factory=list)
    subscription_table: dict[str, SubscriptionData] = dataclasses.field(default_factory=dict)
    consume_type: str | None = None
    message_model: str | None = None
    consume_from_where: str | None = None

    def to_bean(self) -> fastjson.Bean:
        return bean(
            connectionSet=[c.to_bean() for c in self.connection_set],
            subscriptionTable=write_map(
                self.subscription_table, string_hash, SUBSCRIPTION_TABLE, same, lambda s: s.to_bean()
            ),
            consumeType=self.consume_type,
            messageModel=self.message_model,
            consumeFromWhere=self.consume_from_where,
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        subscriptions = obj.entries_of("subscriptionTable", to_required_string, _subscription)
        return cls(
            connection_set=obj.items_of("connectionSet", _connection) or [],
            subscription_table=(
                {} if subscriptions is None else read_map(subscriptions, string_hash, SUBSCRIPTION_TABLE)
            ),
            consume_type=obj.get_enum("consumeType", CONSUME_TYPE_ORDINALS),
            message_model=obj.get_enum("messageModel", MESSAGE_MODEL_ORDINALS),
            consume_from_where=obj.get_enum("consumeFromWhere", CONSUME_FROM_WHERE_ORDINALS),
        )


@dataclasses.dataclass(kw_only=True)
class GetConsumerListByGroupResponseBody(JsonBody):
    """The client ids of a consumer group's members, as the broker lists them."""

    consumer_id_list: list[str] = dataclasses.field(default_factory=list)

    def to_bean(self) -> fastjson.Bean:
        return bean(consumerIdList=list(self.consumer_id_list))

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        ids = obj.get_array("consumerIdList")
        return cls(consumer_id_list=[] if ids is None else string_list(ids, f"{obj.path}.consumerIdList"))


@dataclasses.dataclass(kw_only=True)
class GroupList(JsonBody):
    """Group names (a ``HashSet<String>``), e.g. the groups consuming a topic."""

    group_list: list[str] = dataclasses.field(default_factory=list)

    def to_bean(self) -> fastjson.Bean:
        return bean(groupList=write_set(self.group_list, string_hash, HASH_MAP, same))

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        names = obj.get_array("groupList")
        if names is None:
            return cls(group_list=[])
        return cls(group_list=read_set(string_list(names, f"{obj.path}.groupList"), string_hash, HASH_MAP))


@dataclasses.dataclass(kw_only=True)
class CheckClientRequestBody(JsonBody):
    """CHECK_CLIENT_CONFIG (a request with this body and no header): may ``group`` use this subscription?

    A broker judges only non-tag subscriptions; it refuses a SQL92 one unless it filters by properties
    (``enablePropertyFilter``) and the expression compiles. ``namespace`` exists from 5.0 on, but Java's
    client never sets it (``None`` leaves it out).
    """

    client_id: str | None = None
    group: str | None = None
    subscription_data: SubscriptionData | None = None
    namespace: str | None = None

    def to_bean(self) -> fastjson.Bean:
        subscription = self.subscription_data
        return bean(
            clientId=self.client_id,
            group=self.group,
            subscriptionData=None if subscription is None else subscription.to_bean(),
            namespace=self.namespace,
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        subscription = obj.get_object("subscriptionData")
        return cls(
            client_id=obj.get_str("clientId"),
            group=obj.get_str("group"),
            subscription_data=None if subscription is None else SubscriptionData.from_object(subscription),
            namespace=obj.get_str("namespace"),
        )


@dataclasses.dataclass(kw_only=True)
class ResetOffsetBody(JsonBody):
    """Offsets to reset a consumer group to, per queue (``HashMap<MessageQueue, Long>``)."""

    offset_table: dict[MessageQueue, int] = dataclasses.field(default_factory=dict)

    def to_bean(self) -> fastjson.Bean:
        return bean(
            offsetTable=write_map(self.offset_table, message_queue_hash, HASH_MAP, write_message_queue, same)
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        entries = obj.entries_of("offsetTable", read_message_queue, to_long)
        return cls(offset_table={} if entries is None else read_map(entries, message_queue_hash, HASH_MAP))


def _queue_offsets(value: Any, path: str) -> JavaMap[int, int]:
    return read_map(map_entries(value, path, to_int, to_long), int_hash, CONCURRENT_HASH_MAP)


OFFSET_TABLE = JavaTable(MapKind.CONCURRENT_HASH_MAP, 512)


@dataclasses.dataclass(kw_only=True)
class ConsumerOffsetSerializeWrapper(JsonBody):
    """Committed offsets by ``topic@group`` and queue id; ``data_version`` exists from 5.0 on."""

    offset_table: dict[str, dict[int, int]] = dataclasses.field(default_factory=dict)
    data_version: DataVersion | None = None

    def to_bean(self) -> fastjson.Bean:
        return bean(
            offsetTable=write_map(
                self.offset_table,
                string_hash,
                OFFSET_TABLE,
                same,
                lambda queues: write_map(queues, int_hash, CONCURRENT_HASH_MAP, same, same),
            ),
            dataVersion=None if self.data_version is None else self.data_version.to_bean(),
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        entries = obj.entries_of("offsetTable", to_required_string, _queue_offsets)
        version = obj.get_object("dataVersion")
        return cls(
            offset_table={} if entries is None else read_map(entries, string_hash, OFFSET_TABLE),
            data_version=None if version is None else DataVersion.from_object(version),
        )


@dataclasses.dataclass(kw_only=True)
class ProducerConnection(JsonBody):
    """GET_PRODUCER_CONNECTION_LIST's answer: a producer group's live connections on one broker.

    ``Connection`` hashes by identity in Java, so the set is written in the order given.
    """

    connection_set: list[Connection] = dataclasses.field(default_factory=list)

    def to_bean(self) -> fastjson.Bean:
        return bean(connectionSet=[c.to_bean() for c in self.connection_set])

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(connection_set=obj.items_of("connectionSet", _connection) or [])


@dataclasses.dataclass(kw_only=True)
class ProducerInfo(JsonBody):
    """One connected producer as GET_ALL_PRODUCER_INFO lists it.

    ``remote_ip`` is Java's ``InetSocketAddress.toString()`` of the connection, so it starts with a slash
    (``"/127.0.0.1:54321"``): a Java tool prints it as is, and so must a Python broker send it.
    ``language`` is the ``LanguageCode`` name the client announced itself with.
    """

    client_id: str | None = None
    remote_ip: str | None = None
    language: str | None = None
    version: int = 0
    last_update_timestamp: int = 0

    def to_bean(self) -> fastjson.Bean:
        return bean(
            clientId=self.client_id,
            remoteIP=self.remote_ip,
            language=self.language,
            version=self.version,
            lastUpdateTimestamp=self.last_update_timestamp,
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(
            client_id=obj.get_str("clientId"),
            remote_ip=obj.get_str("remoteIP"),
            language=obj.get_enum("language", LANGUAGE_ORDINALS),
            version=obj.get_int("version"),
            last_update_timestamp=obj.get_long("lastUpdateTimestamp"),
        )


def _producer_infos(value: Any, path: str) -> list[ProducerInfo]:
    """A group's ``List<ProducerInfo>``; a ``null`` list reads as empty (mqadmin prints it as such)."""
    if value is None:
        return []
    return array_of(value, path, lambda item, where: ProducerInfo.from_object(object_fields(item, where)))


@dataclasses.dataclass(kw_only=True)
class ProducerTableInfo(JsonBody):
    """GET_ALL_PRODUCER_INFO's answer: every producer group a broker knows, with its connected producers.

    The broker builds ``data`` as a fresh ``HashMap`` with one put per group, so a table built here is
    written in that map's order (a table read off the wire keeps the order it came in). Groups without a
    live connection never appear: Java adds a group only when it meets one of its channels.
    """

    data: dict[str, list[ProducerInfo]] = dataclasses.field(default_factory=dict)

    def to_bean(self) -> fastjson.Bean:
        return bean(
            data=write_map(
                self.data, string_hash, HASH_MAP, same, lambda infos: [info.to_bean() for info in infos]
            )
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        entries = obj.entries_of("data", to_required_string, _producer_infos)
        return cls(data={} if entries is None else read_map(entries, string_hash, HASH_MAP))


#: ``LocalFileOffsetStore`` keeps a default ``ConcurrentHashMap<MessageQueue, AtomicLong>``.
LOCAL_OFFSET_TABLE = CONCURRENT_HASH_MAP


@dataclasses.dataclass(kw_only=True)
class OffsetSerializeWrapper(JsonBody):
    """A broadcasting consumer's offsets file (``LocalFileOffsetStore``): next offset, per queue."""

    offset_table: dict[MessageQueue, int] = dataclasses.field(default_factory=dict)

    def to_bean(self) -> fastjson.Bean:
        return bean(
            offsetTable=write_map(
                self.offset_table, message_queue_hash, LOCAL_OFFSET_TABLE, write_message_queue, same
            )
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        entries = obj.entries_of("offsetTable", read_message_queue, to_long)
        return cls(
            offset_table={} if entries is None else read_map(entries, message_queue_hash, LOCAL_OFFSET_TABLE)
        )
