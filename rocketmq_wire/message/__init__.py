"""The message format: properties, ids, flags, batch bodies, stored records and compression. No I/O."""

from __future__ import annotations

from rocketmq_wire.message.batch import BatchEntry, decode_batch, encode_batch, merge_batch_properties
from rocketmq_wire.message.compression import (
    CompressionType,
    compress,
    compressed_sys_flag,
    compression_type_of,
    decompress,
    decompress_for_flag,
)
from rocketmq_wire.message.hosts import format_host, parse_host
from rocketmq_wire.message.ids import (
    OffsetMessageId,
    UniqueIdGenerator,
    UniqueIdLayout,
    UniqueIdParts,
    decode_cpp_unique_id,
    decode_offset_msg_id,
    decode_unique_id,
    default_unique_id_generator,
    encode_offset_msg_id,
    new_unique_id,
    offset_msg_id_of,
    unique_id_timestamp_ms,
)
from rocketmq_wire.message.layout import BLANK_MAGIC, MAGIC_V1, MAGIC_V2, MessageVersion
from rocketmq_wire.message.message import Message, join_keys
from rocketmq_wire.message.properties import (
    DECODED_MAP_CAPACITY_5X,
    PropertiesFlavour,
    decode_properties,
    decode_properties_bytes,
    detect_flavour,
    encode_java_properties,
    encode_properties,
    java_ordered,
    validate_user_property,
)
from rocketmq_wire.message.recall import RecallHandle
from rocketmq_wire.message.stored import (
    MessageExt,
    body_crc,
    decode_message,
    decode_messages,
    encode_stored_message,
    split_keys,
)

__all__ = [
    "BLANK_MAGIC",
    "DECODED_MAP_CAPACITY_5X",
    "MAGIC_V1",
    "MAGIC_V2",
    "BatchEntry",
    "CompressionType",
    "Message",
    "MessageExt",
    "MessageVersion",
    "OffsetMessageId",
    "PropertiesFlavour",
    "RecallHandle",
    "UniqueIdGenerator",
    "UniqueIdLayout",
    "UniqueIdParts",
    "body_crc",
    "compress",
    "compressed_sys_flag",
    "compression_type_of",
    "decode_batch",
    "decode_cpp_unique_id",
    "decode_message",
    "decode_messages",
    "decode_offset_msg_id",
    "decode_properties",
    "decode_properties_bytes",
    "decode_unique_id",
    "decompress",
    "decompress_for_flag",
    "default_unique_id_generator",
    "detect_flavour",
    "encode_batch",
    "encode_java_properties",
    "encode_offset_msg_id",
    "encode_properties",
    "encode_stored_message",
    "format_host",
    "java_ordered",
    "join_keys",
    "merge_batch_properties",
    "new_unique_id",
    "offset_msg_id_of",
    "parse_host",
    "split_keys",
    "unique_id_timestamp_ms",
    "validate_user_property",
]
