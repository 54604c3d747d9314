"""Stored messages: the broker's commit-log record, which pull and query responses carry unchanged.

:func:`decode_messages` reads a body of concatenated records (a pull response holds up to 32) with one
``struct`` unpack per record for the fixed part; :func:`encode_stored_message` writes the record a Java
broker's ``CommitLog`` appends for the same message, so the project's broker can keep a commit log Java tools
read and serve pull bodies byte-identical to Apache's. The layout itself is declared in :mod:`.layout`.
"""

from __future__ import annotations

import dataclasses
import struct
import zlib
from collections.abc import Mapping
from types import MappingProxyType

from rocketmq_wire.accel import speedups as _c
from rocketmq_wire.errors import CodecError
from rocketmq_wire.javatext import JAVA_UTF8
from rocketmq_wire.message import const, sysflag
from rocketmq_wire.message.compression import compress, compression_type_of, decompress_for_flag
from rocketmq_wire.message.hosts import format_host, parse_host
from rocketmq_wire.message.ids import encode_offset_msg_id
from rocketmq_wire.message.layout import (
    BLANK_MAGIC,
    MAGIC_V1,
    MAGIC_V2,
    STORED_FIXED,
    STORED_FIXED_V4,
    MessageVersion,
)
from rocketmq_wire.message.properties import PropertiesFlavour, decode_properties, encode_properties

_V6_BITS = sysflag.BORNHOST_V6 | sysflag.STOREHOSTADDRESS_V6
_MAX_SHORT = 0x7FFF
_MAX_V1_TOPIC = 127
_BODY_CRC_MASK = 0x7FFFFFFF


def body_crc(body: bytes) -> int:
    """The body CRC a broker stores: CRC-32 of the (possibly compressed) body, sign bit cleared."""
    return zlib.crc32(body) & _BODY_CRC_MASK


@dataclasses.dataclass(slots=True)
class MessageExt:
    """A message as a broker stores it and a consumer receives it.

    Properties are kept as the string they travel as (``properties_string``), so a message re-encodes byte for
    byte even when that string repeats a name (a batch message stored by a broker does); ``properties`` is the
    decoded view, with Java's reading: a repeated name keeps its last value.
    """

    topic: str
    body: bytes = b""
    flag: int = 0
    properties_string: str = ""
    queue_id: int = 0
    queue_offset: int = 0
    commit_log_offset: int = 0
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: str = "0.0.0.0:0"
    store_timestamp: int = 0
    store_host: str = "0.0.0.0:0"
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    #: As read from the record; :func:`encode_stored_message` computes its own.
    body_crc: int = 0
    #: As read from the record; :func:`encode_stored_message` computes its own.
    store_size: int = 0
    version: MessageVersion = MessageVersion.V1
    _decoded: tuple[str, Mapping[str, str]] | None = dataclasses.field(
        default=None, init=False, repr=False, compare=False
    )

    @property
    def properties(self) -> Mapping[str, str]:
        cached = self._decoded
        if cached is None or cached[0] is not self.properties_string:
            cached = (self.properties_string, MappingProxyType(decode_properties(self.properties_string)))
            self._decoded = cached
        return cached[1]

    def get_property(self, name: str) -> str | None:
        return self.properties.get(name)

    def append_properties(self, encoded: str) -> None:
        """Add properties, given as :func:`encode_properties` writes them, after the message's own.

        A client marks what it received this way (a pull's queue bounds, a pop's receipt handle) without
        re-encoding what the broker sent: a name given again reads as its new value, as in Java's map.
        """
        text, separator = self.properties_string, const.PROPERTY_SEPARATOR
        if text and not text.endswith(separator):
            self.properties_string = text + separator + encoded.removesuffix(separator)
        else:
            self.properties_string = text + encoded

    def stored_at(
        self, queue_offset: int, commit_log_offset: int, store_timestamp: int, store_host: str
    ) -> MessageExt:
        """A copy placed where a store appends it, keeping the decoded properties.

        The store makes one per appended message, so this is ``dataclasses.replace`` without its
        per-call field walk. Both the original (the waits and the arrival notices) and the copy (its
        consume-queue and index entries) read the properties, so they are decoded here once and the
        (immutable) view is shared.
        """
        self.properties  # noqa: B018 -- fills the cache the copy shares
        copy = MessageExt(
            self.topic,
            self.body,
            self.flag,
            self.properties_string,
            self.queue_id,
            queue_offset,
            commit_log_offset,
            self.sys_flag,
            self.born_timestamp,
            self.born_host,
            store_timestamp,
            store_host,
            self.reconsume_times,
            self.prepared_transaction_offset,
            self.body_crc,
            self.store_size,
            self.version,
        )
        copy._decoded = self._decoded
        return copy

    def with_properties(
        self, properties: Mapping[str, str], flavour: PropertiesFlavour = PropertiesFlavour.V5
    ) -> MessageExt:
        """A copy whose properties string is ``properties`` encoded in their given order."""
        return dataclasses.replace(self, properties_string=encode_properties(properties, flavour))

    @property
    def tags(self) -> str | None:
        return self.properties.get(const.TAGS)

    @property
    def keys(self) -> list[str]:
        return split_keys(self.properties.get(const.KEYS, ""))

    @property
    def unique_id(self) -> str | None:
        """The producer-made id (``UNIQ_KEY``), which Java's consumer API reports as ``msgId``."""
        return self.properties.get(const.UNIQ_KEY)

    @property
    def msg_id(self) -> str:
        """The offset id: store host and commit-log offset."""
        return encode_offset_msg_id(self.store_host, self.commit_log_offset)

    @property
    def client_msg_id(self) -> str:
        """What a Java consumer's ``getMsgId()`` returns: the unique id, else the offset id."""
        return self.unique_id or self.msg_id

    @property
    def delay_level(self) -> int:
        value = self.properties.get(const.DELAY, "0")
        return int(value) if value.isascii() and value.isdigit() else 0

    @property
    def is_compressed(self) -> bool:
        return bool(self.sys_flag & sysflag.COMPRESSED)

    @property
    def transaction_type(self) -> sysflag.TransactionType:
        return sysflag.transaction_type(self.sys_flag)


def split_keys(value: str) -> list[str]:
    return [key for key in value.split(const.KEY_SEPARATOR) if key]


def _text(data: bytes, what: str, pos: int) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CodecError(f"stored message at byte {pos}: {what} is not valid UTF-8 ({exc.reason})") from None


def _decode_at(
    data: bytes, pos: int, decompress_body: bool, check_crc: bool, max_body_size: int | None
) -> tuple[MessageExt, int]:
    # One function, positional arguments and local names only: this runs once per message of every pull.
    end_of_data = len(data)
    fixed = STORED_FIXED_V4
    if end_of_data - pos < fixed.size:
        raise CodecError(
            f"stored message at byte {pos} is truncated: {end_of_data - pos} bytes left, "
            f"the fixed part alone needs {fixed.size}"
        )
    fields = fixed.unpack_from(data, pos)
    sys_flag = fields[7]
    if sys_flag & _V6_BITS:
        born_v6 = bool(sys_flag & sysflag.BORNHOST_V6)
        fixed = STORED_FIXED[(born_v6, bool(sys_flag & sysflag.STOREHOSTADDRESS_V6))]
        if end_of_data - pos < fixed.size:
            raise CodecError(
                f"stored message at byte {pos} is truncated: {end_of_data - pos} bytes left, "
                f"its fixed part (with IPv6 addresses) needs {fixed.size}"
            )
        fields = fixed.unpack_from(data, pos)
    (
        total_size,
        magic,
        crc,
        queue_id,
        flag,
        queue_offset,
        commit_log_offset,
        sys_flag,
        born_timestamp,
        born_ip,
        born_port,
        store_timestamp,
        store_ip,
        store_port,
        reconsume_times,
        prepared_transaction_offset,
        body_length,
    ) = fields
    end = pos + total_size
    if total_size < fixed.size or end > end_of_data:
        if magic == BLANK_MAGIC:
            raise CodecError(f"byte {pos} holds a commit-log end-of-file marker, not a message")
        raise CodecError(
            f"stored message at byte {pos} declares {total_size} bytes; "
            f"{end_of_data - pos} are left and the fixed part needs {fixed.size}"
        )
    cursor = pos + fixed.size
    if body_length < 0 or cursor + body_length > end:
        raise CodecError(f"stored message at byte {pos}: body length {body_length} overruns the record")
    body = data[cursor : cursor + body_length]
    cursor += body_length
    if magic == MAGIC_V1:
        version = MessageVersion.V1
        if cursor >= end:
            raise CodecError(f"stored message at byte {pos}: record ends before the topic length")
        topic_length = data[cursor]
        cursor += 1
    elif magic == MAGIC_V2:
        version = MessageVersion.V2
        if cursor + 2 > end:
            raise CodecError(f"stored message at byte {pos}: record ends before the topic length")
        topic_length = (data[cursor] << 8) | data[cursor + 1]
        cursor += 2
    elif magic == BLANK_MAGIC:
        raise CodecError(f"byte {pos} holds a commit-log end-of-file marker, not a message")
    else:
        raise CodecError(f"stored message at byte {pos} has unknown magic code {magic:#010x}")
    properties_at = cursor + topic_length + 2
    if properties_at > end:
        raise CodecError(f"stored message at byte {pos}: topic length {topic_length} overruns the record")
    if properties_at + ((data[properties_at - 2] << 8) | data[properties_at - 1]) != end:
        raise CodecError(
            f"stored message at byte {pos} declares {total_size} bytes but its fields take "
            f"{properties_at + ((data[properties_at - 2] << 8) | data[properties_at - 1]) - pos}"
        )
    try:
        topic = data[cursor : properties_at - 2].decode("utf-8")
        properties = data[properties_at:end].decode("utf-8")
    except UnicodeDecodeError:
        topic = _text(data[cursor : properties_at - 2], "the topic", pos)
        properties = _text(data[properties_at:end], "the properties", pos)
    if check_crc and zlib.crc32(body) & _BODY_CRC_MASK != crc:
        raise CodecError(
            f"stored message at byte {pos} (commit-log offset {commit_log_offset}): body CRC {crc} does not "
            f"match the body (CRC {body_crc(body)})"
        )
    if decompress_body and sys_flag & sysflag.COMPRESSED:
        body = decompress_for_flag(body, sys_flag, max_body_size)
    message = MessageExt(
        topic,
        body,
        flag,
        properties,
        queue_id,
        queue_offset,
        commit_log_offset,
        sys_flag,
        born_timestamp,
        format_host(born_ip, born_port),
        store_timestamp,
        format_host(store_ip, store_port),
        reconsume_times,
        prepared_transaction_offset,
        crc,
        total_size,
        version,
    )
    return message, end


def decode_message(
    data: bytes,
    pos: int = 0,
    *,
    decompress_body: bool = True,
    check_crc: bool = False,
    max_body_size: int | None = None,
) -> tuple[MessageExt, int]:
    """The record starting at ``pos`` and the position just after it."""
    return _decode_at(data, pos, decompress_body, check_crc, max_body_size)


def decode_messages(
    data: bytes | bytearray | memoryview,
    decompress_body: bool = True,
    *,
    check_crc: bool = False,
    max_body_size: int | None = None,
) -> list[MessageExt]:
    """Every record of a pull / query / view response body (or a stretch of commit log), in order.

    ``decompress_body`` replaces compressed bodies by their contents (the sysflag keeps its bits, as in Java);
    ``check_crc`` verifies each stored body CRC; ``max_body_size`` bounds a decompressed body.
    """
    raw = data if isinstance(data, bytes) else bytes(data)
    messages: list[MessageExt] = []
    append = messages.append
    pos = 0
    end = len(raw)
    while pos < end:
        message, pos = _decode_at(raw, pos, decompress_body, check_crc, max_body_size)
        append(message)
    return messages


def encode_stored_message(
    message: MessageExt, *, version: MessageVersion | None = None, compress_body: bool = False
) -> bytes:
    """The record Java's ``CommitLog`` appends for ``message``.

    ``message.body`` is written as given: a broker stores the body a producer sent, compressed or not. With
    ``compress_body`` a body marked compressed in the sysflag is compressed here first (at level 5, as Java's
    ``MessageDecoder.encode`` does), for a message whose body was decompressed when it was decoded. The body
    CRC and total size are computed; the IPv6 bits of the sysflag are set from the addresses. ``version``
    defaults to what a 5.x broker picks: V2 only for a topic longer than 127 characters.
    """
    if _c is not None and version is None and not compress_body:
        # The C version writes the common record (IPv4 hosts, V1) and declines everything else.
        record = _c.encode_stored(message)
        if record is not None:
            return record
    body = message.body
    sys_flag = message.sys_flag
    if compress_body and sys_flag & sysflag.COMPRESSED:
        body = compress(body, compression_type_of(sys_flag))
    born_ip, born_port = parse_host(message.born_host)
    store_ip, store_port = parse_host(message.store_host)
    born_v6 = len(born_ip) == 16
    store_v6 = len(store_ip) == 16
    if sys_flag & sysflag.BORNHOST_V6 and not born_v6:
        raise CodecError(f"sysFlag {sys_flag:#x} marks an IPv6 born host but {message.born_host!r} is IPv4")
    if sys_flag & sysflag.STOREHOSTADDRESS_V6 and not store_v6:
        raise CodecError(f"sysFlag {sys_flag:#x} marks an IPv6 store host but {message.store_host!r} is IPv4")
    sys_flag |= (sysflag.BORNHOST_V6 if born_v6 else 0) | (sysflag.STOREHOSTADDRESS_V6 if store_v6 else 0)
    topic = message.topic.encode("utf-8", JAVA_UTF8)
    if version is None:
        version = MessageVersion.V2 if len(message.topic) > _MAX_V1_TOPIC else MessageVersion.V1
    topic_limit = _MAX_V1_TOPIC if version is MessageVersion.V1 else _MAX_SHORT
    if len(topic) > topic_limit:
        raise CodecError(
            f"topic of {len(topic)} bytes exceeds the {topic_limit} a {version.name} record allows"
        )
    properties = message.properties_string.encode("utf-8", JAVA_UTF8)
    if len(properties) > _MAX_SHORT:
        raise CodecError(f"properties of {len(properties)} bytes exceed the {_MAX_SHORT} a record allows")
    fixed = STORED_FIXED[(born_v6, store_v6)]
    total_size = fixed.size + len(body) + version.topic_length_size + len(topic) + 2 + len(properties)
    try:
        head = fixed.pack(
            total_size,
            version.value,
            body_crc(body),
            message.queue_id,
            message.flag,
            message.queue_offset,
            message.commit_log_offset,
            sys_flag,
            message.born_timestamp,
            born_ip,
            born_port,
            message.store_timestamp,
            store_ip,
            store_port,
            message.reconsume_times,
            message.prepared_transaction_offset,
            len(body),
        )
    except struct.error as exc:
        raise CodecError(f"a field of the message does not fit the stored layout: {exc}") from None
    return b"".join(
        (
            head,
            body,
            len(topic).to_bytes(version.topic_length_size, "big"),
            topic,
            len(properties).to_bytes(2, "big"),
            properties,
        )
    )
