"""Topic configurations and the data version that stamps a broker's set of them.

A broker reports its whole topic table when it registers (inside :class:`RegisterBrokerBody`) and answers
GET_ALL_TOPIC_CONFIG with it. 4.x sends a :class:`TopicConfigSerializeWrapper` whose table is the topic
manager's own ``ConcurrentHashMap(1024)`` (2048 buckets); 5.x sends a
:class:`TopicConfigAndMappingSerializeWrapper` holding a default ``ConcurrentHashMap`` filled by walking
the manager's table, plus the static-topic mappings. The two iterate the same topics in different orders,
which is why how each table is built is part of the classes here.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from typing import Any, ClassVar, Self

from rocketmq_wire import fastjson
from rocketmq_wire.bodies.base import (
    Fields,
    JsonBody,
    bean,
    object_fields,
    same,
    string_list,
    string_map,
    to_required_string,
    write_map,
    write_set,
)
from rocketmq_wire.bodies.java_collections import (
    CONCURRENT_HASH_MAP,
    HASH_MAP,
    JavaMap,
    JavaTable,
    MapKind,
    read_map,
    read_set,
    string_hash,
)
from rocketmq_wire.bodies.static_topic import TopicQueueMappingDetail, TopicQueueMappingInfo
from rocketmq_wire.errors import CodecError

_log = logging.getLogger(__name__)

#: ``TopicFilterType`` constants by ordinal.
TOPIC_FILTER_TYPES = ("SINGLE_TAG", "MULTI_TAG")
#: ``PermName.PERM_READ | PermName.PERM_WRITE``: a new topic's default permission.
DEFAULT_PERM = 6


def _now_millis() -> int:
    return time.time_ns() // 1_000_000


@dataclasses.dataclass(kw_only=True)
class DataVersion(JsonBody):
    """A (timestamp, counter) stamp a broker bumps on every change of its topic table.

    ``state_version`` exists from 5.0 on; ``None`` leaves it out as 4.x does. As in Java, a new stamp
    carries the current time.
    """

    timestamp: int = dataclasses.field(default_factory=_now_millis)
    counter: int = 0
    state_version: int | None = None

    def to_bean(self) -> fastjson.Bean:
        return bean(timestamp=self.timestamp, counter=self.counter, stateVersion=self.state_version)

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(
            timestamp=obj.get_long("timestamp") if obj.has("timestamp") else _now_millis(),
            counter=obj.get_long("counter"),
            state_version=obj.opt_long("stateVersion"),
        )


def _write_attributes(attributes: dict[str, str]) -> fastjson.JsonValue:
    return write_map(attributes, string_hash, HASH_MAP, same, same)


def _read_attributes(fields: dict[Any, Any], path: str) -> JavaMap[str, str]:
    return read_map(string_map(fields, path), string_hash, HASH_MAP)


@dataclasses.dataclass(kw_only=True)
class TopicConfig(JsonBody):
    """A topic on one broker. ``attributes`` exists from 5.0 on; ``None`` leaves it out as 4.x does."""

    topic_name: str | None = None
    read_queue_nums: int = 16
    write_queue_nums: int = 16
    perm: int = DEFAULT_PERM
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int = 0
    order: bool = False
    attributes: dict[str, str] | None = None

    def _properties(self) -> dict[str, fastjson.JsonValue]:
        return {
            "topicName": self.topic_name,
            "readQueueNums": self.read_queue_nums,
            "writeQueueNums": self.write_queue_nums,
            "perm": self.perm,
            "topicFilterType": self.topic_filter_type,
            "topicSysFlag": self.topic_sys_flag,
            "order": self.order,
            "attributes": None if self.attributes is None else _write_attributes(self.attributes),
        }

    def to_bean(self) -> fastjson.Bean:
        return fastjson.Bean(self._properties())

    @classmethod
    def _fields(cls, obj: Fields) -> dict[str, Any]:
        attributes = obj.get_map("attributes")
        return {
            "topic_name": obj.get_str("topicName"),
            "read_queue_nums": obj.get_int("readQueueNums", 16),
            "write_queue_nums": obj.get_int("writeQueueNums", 16),
            "perm": obj.get_int("perm", DEFAULT_PERM),
            "topic_filter_type": obj.get_enum("topicFilterType", TOPIC_FILTER_TYPES, "SINGLE_TAG"),
            "topic_sys_flag": obj.get_int("topicSysFlag"),
            "order": obj.get_bool("order"),
            "attributes": None
            if attributes is None
            else _read_attributes(attributes, f"{obj.path}.attributes"),
        }

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(**cls._fields(obj))

    # The compressed registration body carries topics as ``TopicConfig.encode()`` lines, not JSON.

    def encode_line(self, *, with_attributes: bool) -> str:
        """``TopicConfig.encode()``: ``name read write perm filterType``, 5.x adding `` attributesJson``.

        The line has no room for ``topicSysFlag`` and ``order``; they do not survive compression.
        """
        parts = [
            str(self.topic_name),
            str(self.read_queue_nums),
            str(self.write_queue_nums),
            str(self.perm),
            self.topic_filter_type,
        ]
        line = " ".join(parts)
        if with_attributes:
            line += " "
            if self.attributes is not None:
                line += fastjson.dumps(_write_attributes(self.attributes))
        return line

    @classmethod
    def decode_line(cls, line: str) -> Self:
        """The inverse of :meth:`encode_line`, as lenient as Java's ``TopicConfig.decode``."""
        parts = line.split(" ")
        while parts and parts[-1] == "":
            parts.pop()  # String.split drops trailing empty strings
        if len(parts) < 5:
            raise CodecError(f"topic config line {line[:80]!r} has {len(parts)} fields, expected at least 5")
        name, read, write, perm, filter_type = parts[:5]
        numbers = tuple(_parse_int(text, line) for text in (read, write, perm))
        if filter_type not in TOPIC_FILTER_TYPES:
            raise CodecError(f"topic config line {line[:80]!r}: unknown topic filter type {filter_type!r}")
        config = cls(
            topic_name=name,
            read_queue_nums=numbers[0],
            write_queue_nums=numbers[1],
            perm=numbers[2],
            topic_filter_type=filter_type,
        )
        if len(parts) >= 6:
            config.attributes = {}
            try:
                parsed = fastjson.loads(parts[5])
                if isinstance(parsed, dict):
                    config.attributes = _read_attributes(parsed, f"topic {name} attributes")
            except CodecError as exc:
                # Java ignores an unparsable attribute map (its values may hold the separator).
                _log.debug("ignoring attributes of topic %s in a compressed registration: %s", name, exc)
        return config


def _parse_int(text: str, line: str) -> int:
    """``Integer.parseInt`` as ``TopicConfig.decode`` applies it: a sign, ASCII digits, a Java ``int``."""
    digits = text[1:] if text[:1] in ("+", "-") else text
    if digits.isascii() and digits.isdigit() and len(digits.lstrip("0")) <= 10:
        value = int(text)
        if -(1 << 31) <= value < 1 << 31:
            return value
    raise CodecError(
        f"topic config line {line[:80]!r}: {text[:20]!r} is not a Java int (queue numbers, perm)"
    )


#: The broker's topic manager and the NameServer's topic queue table: ``ConcurrentHashMap(1024)``.
_TOPIC_MANAGER_TABLE = JavaTable(MapKind.CONCURRENT_HASH_MAP, 1024)


def _topic_config(value: Any, path: str) -> TopicConfig:
    return TopicConfig.from_object(object_fields(value, path))


def _data_version(obj: Fields | None) -> DataVersion:
    return DataVersion() if obj is None else DataVersion.from_object(obj)


@dataclasses.dataclass(kw_only=True)
class TopicConfigSerializeWrapper(JsonBody):
    """A broker's topic table and its data version, as 4.x brokers send it."""

    TOPIC_TABLE: ClassVar[JavaTable] = _TOPIC_MANAGER_TABLE

    topic_config_table: dict[str, TopicConfig] = dataclasses.field(default_factory=dict)
    data_version: DataVersion = dataclasses.field(default_factory=DataVersion)

    def _properties(self) -> dict[str, fastjson.JsonValue]:
        return {
            "topicConfigTable": write_map(
                self.topic_config_table, string_hash, self.TOPIC_TABLE, same, lambda t: t.to_bean()
            ),
            "dataVersion": self.data_version.to_bean(),
        }

    def to_bean(self) -> fastjson.Bean:
        return fastjson.Bean(self._properties())

    @classmethod
    def _fields(cls, obj: Fields) -> dict[str, Any]:
        topics = obj.entries_of("topicConfigTable", to_required_string, _topic_config)
        return {
            "topic_config_table": ({} if topics is None else read_map(topics, string_hash, cls.TOPIC_TABLE)),
            "data_version": _data_version(obj.get_object("dataVersion")),
        }

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(**cls._fields(obj))


def _mapping_info(value: Any, path: str) -> TopicQueueMappingInfo:
    return TopicQueueMappingInfo.from_object(object_fields(value, path))


def _mapping_detail(value: Any, path: str) -> TopicQueueMappingDetail:
    return TopicQueueMappingDetail.from_object(object_fields(value, path))


#: Keys that only the 5.x wrapper writes; their presence tells the two wrappers apart.
MAPPING_KEYS = ("mappingDataVersion", "topicQueueMappingInfoMap", "topicQueueMappingDetailMap")


@dataclasses.dataclass(kw_only=True)
class TopicConfigAndMappingSerializeWrapper(TopicConfigSerializeWrapper):
    """The 5.x wrapper: the topic table plus static-topic mappings and their own data version."""

    TOPIC_TABLE: ClassVar[JavaTable] = JavaTable(MapKind.CONCURRENT_HASH_MAP, source=_TOPIC_MANAGER_TABLE)

    topic_queue_mapping_info_map: dict[str, TopicQueueMappingInfo] = dataclasses.field(default_factory=dict)
    topic_queue_mapping_detail_map: dict[str, TopicQueueMappingDetail] = dataclasses.field(
        default_factory=dict
    )
    mapping_data_version: DataVersion = dataclasses.field(default_factory=DataVersion)

    def to_bean(self) -> fastjson.Bean:
        properties = self._properties()
        properties["topicQueueMappingInfoMap"] = write_map(
            self.topic_queue_mapping_info_map, string_hash, CONCURRENT_HASH_MAP, same, lambda i: i.to_bean()
        )
        properties["topicQueueMappingDetailMap"] = write_map(
            self.topic_queue_mapping_detail_map, string_hash, CONCURRENT_HASH_MAP, same, lambda d: d.to_bean()
        )
        properties["mappingDataVersion"] = self.mapping_data_version.to_bean()
        return fastjson.Bean(properties)

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        infos = obj.entries_of("topicQueueMappingInfoMap", to_required_string, _mapping_info)
        details = obj.entries_of("topicQueueMappingDetailMap", to_required_string, _mapping_detail)
        return cls(
            **cls._fields(obj),
            topic_queue_mapping_info_map=(
                {} if infos is None else read_map(infos, string_hash, CONCURRENT_HASH_MAP)
            ),
            topic_queue_mapping_detail_map=(
                {} if details is None else read_map(details, string_hash, CONCURRENT_HASH_MAP)
            ),
            mapping_data_version=_data_version(obj.get_object("mappingDataVersion")),
        )


def read_topic_config_wrapper(obj: Fields) -> TopicConfigSerializeWrapper:
    """Either wrapper, chosen by whether the 5.x mapping fields are present."""
    if any(obj.has(key) for key in MAPPING_KEYS):
        return TopicConfigAndMappingSerializeWrapper.from_object(obj)
    return TopicConfigSerializeWrapper.from_object(obj)


@dataclasses.dataclass(kw_only=True)
class TopicConfigAndQueueMapping(TopicConfig):
    """GET_TOPIC_CONFIG's answer (5.x): a topic config plus its static-topic mapping, if any."""

    mapping_detail: TopicQueueMappingDetail | None = None

    def to_bean(self) -> fastjson.Bean:
        properties = self._properties()
        properties["mappingDetail"] = None if self.mapping_detail is None else self.mapping_detail.to_bean()
        return fastjson.Bean(properties)

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        detail = obj.get_object("mappingDetail")
        return cls(
            **cls._fields(obj),
            mapping_detail=None if detail is None else TopicQueueMappingDetail.from_object(detail),
        )


@dataclasses.dataclass(kw_only=True)
class TopicList(JsonBody):
    """Topic names (a hash set) and, for some requests, the broker they came from.

    5.x collects the NameServer's topics (a ``ConcurrentHashMap(1024)``) into
    ``ConcurrentHashMap.newKeySet()``, 4.x into a ``HashSet``; a list built here is ordered as the 5.x
    set, one read off the wire keeps its own table size.
    """

    TOPIC_SET: ClassVar[JavaTable] = JavaTable(MapKind.CONCURRENT_HASH_MAP, source=_TOPIC_MANAGER_TABLE)

    topic_list: list[str] = dataclasses.field(default_factory=list)
    broker_addr: str | None = None

    def to_bean(self) -> fastjson.Bean:
        return bean(
            topicList=write_set(self.topic_list, string_hash, self.TOPIC_SET, same),
            brokerAddr=self.broker_addr,
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        names = obj.get_array("topicList")
        path = f"{obj.path}.topicList"
        return cls(
            topic_list=[]
            if names is None
            else read_set(string_list(names, path), string_hash, cls.TOPIC_SET),
            broker_addr=obj.get_str("brokerAddr"),
        )
