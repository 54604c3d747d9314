"""The REGISTER_BROKER request body, in its plain JSON form and its compressed binary form.

A broker sends the compressed form when ``compressedRegister`` is on, and says so in the request header's
``compressed`` ext field. That form is a zlib (``Deflater``, best compression) stream of big-endian
length-prefixed parts:

* int32 length + the data version as JSON;
* int32 topic count, then per topic int32 length + the ``TopicConfig.encode()`` line;
* int32 length + the filter server list as JSON;
* 5.x only: int32 count, then per static-topic mapping int32 length + ``TopicQueueMappingInfo`` JSON.

The topic lines cannot carry ``topicSysFlag`` or ``order``, so those reset to their defaults on a trip
through this form, in Java too.
"""

from __future__ import annotations

import dataclasses
import struct
import zlib
from typing import Self

from rocketmq_wire import fastjson
from rocketmq_wire.bodies.base import Fields, JsonBody, bean, string_list
from rocketmq_wire.bodies.java_collections import (
    CONCURRENT_HASH_MAP,
    JavaMap,
    insertion_order,
    map_in_java_order,
    string_hash,
)
from rocketmq_wire.bodies.static_topic import TopicQueueMappingInfo
from rocketmq_wire.bodies.topic_config import (
    DataVersion,
    TopicConfig,
    TopicConfigAndMappingSerializeWrapper,
    TopicConfigSerializeWrapper,
    read_topic_config_wrapper,
)
from rocketmq_wire.errors import CodecError
from rocketmq_wire.javatext import JAVA_UTF8

_INT = struct.Struct(">i")
#: Upper bound on the inflated size of a compressed body; far above any real topic table.
MAX_INFLATED_SIZE = 256 * 1024 * 1024


@dataclasses.dataclass(kw_only=True)
class RegisterBrokerBody(JsonBody):
    """The broker's topic table (4.x or 5.x wrapper) and its filter servers."""

    topic_config_serialize_wrapper: TopicConfigSerializeWrapper = dataclasses.field(
        default_factory=TopicConfigAndMappingSerializeWrapper
    )
    filter_server_list: list[str] = dataclasses.field(default_factory=list)

    def to_bean(self) -> fastjson.Bean:
        return bean(
            topicConfigSerializeWrapper=self.topic_config_serialize_wrapper.to_bean(),
            filterServerList=list(self.filter_server_list),
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        wrapper = obj.get_object("topicConfigSerializeWrapper")
        servers = obj.get_array("filterServerList")
        return cls(
            topic_config_serialize_wrapper=(
                TopicConfigAndMappingSerializeWrapper()
                if wrapper is None
                else read_topic_config_wrapper(wrapper)
            ),
            filter_server_list=[]
            if servers is None
            else string_list(servers, f"{obj.path}.filterServerList"),
        )

    # -- the two forms, chosen by the header's ``compressed`` field ------------------------------------

    def encode(self, *, compressed: bool) -> bytes:
        """``RegisterBrokerBody.encode(compress)``."""
        return self.to_compressed() if compressed else self.to_json()

    @classmethod
    def decode(cls, data: bytes | bytearray | memoryview, *, compressed: bool) -> Self:
        """``RegisterBrokerBody.decode(data, compressed)``; malformed input raises :class:`CodecError`."""
        return cls.from_compressed(data) if compressed else cls.from_json(data)

    def to_compressed(self) -> bytes:
        """The compressed form; a 5.x wrapper adds the static-topic mapping section, a 4.x one does not."""
        wrapper = self.topic_config_serialize_wrapper
        is_5x = isinstance(wrapper, TopicConfigAndMappingSerializeWrapper)
        parts: list[bytes] = []

        def put(blob: bytes) -> None:
            parts.append(_INT.pack(len(blob)))
            parts.append(blob)

        put(wrapper.data_version.to_json())
        # Java copies the table into a default ConcurrentHashMap, in the table's order, and iterates the copy.
        table = wrapper.topic_config_table
        source = [name for name, _ in map_in_java_order(table, string_hash, wrapper.TOPIC_TABLE)]
        names = insertion_order(source, string_hash, CONCURRENT_HASH_MAP)
        parts.append(_INT.pack(len(names)))
        for name in names:
            put(table[name].encode_line(with_attributes=is_5x).encode("utf-8", JAVA_UTF8))
        put(fastjson.dump_bytes(list(self.filter_server_list)))
        if isinstance(wrapper, TopicConfigAndMappingSerializeWrapper):
            infos = map_in_java_order(wrapper.topic_queue_mapping_info_map, string_hash, CONCURRENT_HASH_MAP)
            parts.append(_INT.pack(len(infos)))
            for _, info in infos:
                put(info.to_json())
        compressor = zlib.compressobj(zlib.Z_BEST_COMPRESSION)
        return compressor.compress(b"".join(parts)) + compressor.flush()

    @classmethod
    def from_compressed(cls, data: bytes | bytearray | memoryview) -> Self:
        """Read the compressed form of either version (a 4.x body simply ends after the filter servers)."""
        reader = _Inflated(_inflate(bytes(data)))
        data_version = DataVersion.from_json(reader.blob("data version"))
        count = reader.count("topic config")
        read: dict[str, TopicConfig] = {}
        with_attributes = False
        for index in range(count):
            line = reader.blob(f"topic config {index}").decode("utf-8", "replace")
            config = TopicConfig.decode_line(line)
            with_attributes = with_attributes or config.attributes is not None
            read[str(config.topic_name)] = config
        # Java puts the topics, as read, into a default ConcurrentHashMap: keep that map's order and size.
        names = insertion_order(list(read), string_hash, CONCURRENT_HASH_MAP)
        table = JavaMap(
            ((name, read[name]) for name in names), table_size=CONCURRENT_HASH_MAP.size_for(len(names))
        )
        servers = string_list(fastjson.loads(reader.blob("filter server list")), "filterServerList")
        wrapper: TopicConfigSerializeWrapper
        if reader.at_end() and not with_attributes:
            wrapper = TopicConfigSerializeWrapper(topic_config_table=table, data_version=data_version)
        else:
            infos: dict[str, TopicQueueMappingInfo] = {}
            if not reader.at_end():
                for index in range(reader.count("static topic mapping")):
                    info = TopicQueueMappingInfo.from_json(reader.blob(f"static topic mapping {index}"))
                    infos[str(info.topic)] = info
            wrapper = TopicConfigAndMappingSerializeWrapper(
                topic_config_table=table, data_version=data_version, topic_queue_mapping_info_map=infos
            )
        if not reader.at_end():
            raise CodecError(
                f"compressed register-broker body has {reader.remaining()} bytes after its last part"
            )
        return cls(topic_config_serialize_wrapper=wrapper, filter_server_list=servers)


def _inflate(data: bytes) -> bytes:
    decompressor = zlib.decompressobj()
    try:
        inflated = decompressor.decompress(data, MAX_INFLATED_SIZE)
    except zlib.error as exc:
        raise CodecError(f"compressed register-broker body does not inflate: {exc}") from None
    if decompressor.unconsumed_tail:
        raise CodecError(f"compressed register-broker body inflates to more than {MAX_INFLATED_SIZE} bytes")
    if not decompressor.eof:
        raise CodecError("compressed register-broker body is truncated (the zlib stream does not end)")
    return inflated


class _Inflated:
    """Cursor over the inflated parts; every read is bounds-checked."""

    __slots__ = ("_data", "_pos")

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def at_end(self) -> bool:
        return self._pos == len(self._data)

    def remaining(self) -> int:
        return len(self._data) - self._pos

    def _int(self, what: str) -> int:
        if self.remaining() < 4:
            raise CodecError(f"compressed register-broker body ends inside the length of the {what}")
        (value,) = _INT.unpack_from(self._data, self._pos)
        self._pos += 4
        if value < 0:
            raise CodecError(f"compressed register-broker body gives the {what} a negative length {value}")
        return int(value)

    def count(self, what: str) -> int:
        return self._int(f"{what} count")

    def blob(self, what: str) -> bytes:
        size = self._int(what)
        if size > self.remaining():
            raise CodecError(
                f"compressed register-broker body: the {what} needs {size} bytes, {self.remaining()} remain"
            )
        blob = self._data[self._pos : self._pos + size]
        self._pos += size
        return blob
