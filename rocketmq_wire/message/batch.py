"""SEND_BATCH_MESSAGE bodies: the messages of a batch, each as a producer encodes it.

Each entry holds only what the producer knows (flag, body, properties); Java writes zero for the magic and CRC
fields and the broker fills in the rest when it stores the entries. The request header carries the batch's
own properties, which a broker appends to each entry's (:func:`merge_batch_properties`).
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Iterable, Mapping

from rocketmq_wire.accel import speedups as _c
from rocketmq_wire.errors import CodecError
from rocketmq_wire.javatext import JAVA_UTF8
from rocketmq_wire.message.const import PROPERTY_SEPARATOR
from rocketmq_wire.message.layout import BATCH_FIXED
from rocketmq_wire.message.properties import decode_properties, properties_text

_MAX_SHORT = 0x7FFF


@dataclasses.dataclass(slots=True)
class BatchEntry:
    """One message of a batch body; ``magic`` and ``body_crc`` are kept only to re-encode what was read."""

    body: bytes
    properties_string: str = ""
    flag: int = 0
    magic: int = 0
    body_crc: int = 0

    @property
    def properties(self) -> Mapping[str, str]:
        return decode_properties(self.properties_string)


def encode_batch(entries: Iterable[BatchEntry]) -> bytes:
    parts: list[bytes] = []
    for index, entry in enumerate(entries):
        properties = entry.properties_string.encode("utf-8", JAVA_UTF8)
        if len(properties) > _MAX_SHORT:
            raise CodecError(
                f"batch entry {index}: properties of {len(properties)} bytes exceed {_MAX_SHORT}"
            )
        total = BATCH_FIXED.size + len(entry.body) + 2 + len(properties)
        try:
            head = BATCH_FIXED.pack(total, entry.magic, entry.body_crc, entry.flag, len(entry.body))
        except struct.error as exc:
            raise CodecError(f"batch entry {index}: a field does not fit the batch layout: {exc}") from None
        parts += (head, entry.body, len(properties).to_bytes(2, "big"), properties)
    return b"".join(parts)


def decode_batch(data: bytes | bytearray | memoryview) -> list[BatchEntry]:
    raw = data if isinstance(data, bytes) else bytes(data)
    if _c is not None:
        fast = _c.decode_batch(BatchEntry, raw)
        if fast is not None:
            return fast
    entries: list[BatchEntry] = []
    pos = 0
    end_of_data = len(raw)
    while pos < end_of_data:
        index = len(entries)
        if end_of_data - pos < BATCH_FIXED.size:
            raise CodecError(
                f"batch entry {index} at byte {pos} is truncated: {end_of_data - pos} bytes left, "
                f"the fixed part needs {BATCH_FIXED.size}"
            )
        total, magic, crc, flag, body_length = BATCH_FIXED.unpack_from(raw, pos)
        end = pos + total
        if total < BATCH_FIXED.size + 2 or end > end_of_data:
            raise CodecError(
                f"batch entry {index} at byte {pos} declares {total} bytes; {end_of_data - pos} are left"
            )
        cursor = pos + BATCH_FIXED.size
        if body_length < 0 or cursor + body_length + 2 > end:
            raise CodecError(
                f"batch entry {index} at byte {pos}: body length {body_length} overruns the entry"
            )
        body = raw[cursor : cursor + body_length]
        cursor += body_length
        properties_length = (raw[cursor] << 8) | raw[cursor + 1]
        cursor += 2
        if cursor + properties_length != end:
            raise CodecError(
                f"batch entry {index} at byte {pos} declares {total} bytes but its fields take "
                f"{cursor + properties_length - pos}"
            )
        entries.append(BatchEntry(body, properties_text(raw[cursor:end]), flag, magic, crc))
        pos = end
    return entries


def merge_batch_properties(entry_properties: str, batch_properties: str) -> str:
    """The properties a broker stores for one batch entry: the entry's, then the batch's.

    A separator goes between the two only when the entry's string does not already end with one (a 4.9.x
    producer's does not, a 5.x producer's does), so names may repeat; readers keep the last value.
    """
    if entry_properties and batch_properties and not entry_properties.endswith(PROPERTY_SEPARATOR):
        return f"{entry_properties}{PROPERTY_SEPARATOR}{batch_properties}"
    return entry_properties + batch_properties
