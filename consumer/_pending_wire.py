"""Protocol facts the consumer needs that ``rocketmq_wire`` does not hold yet.

TEMPORARY: each of these belongs in ``rocketmq_wire`` and lives here only until it is moved there:

* :func:`build_subscription` is Java's ``FilterAPI`` -- how a tag expression becomes the tag set and hash
  codes a heartbeat and a pull carry. The broker has its own copy (``broker.filtering.build_subscription``);
  both should import one from ``rocketmq_wire.bodies.heartbeat`` (or a ``rocketmq_wire.filter`` module).
* :class:`OffsetSerializeWrapper` is the file a Java broadcasting consumer keeps its offsets in
  (``LocalFileOffsetStore``), fastjson like any body; it belongs beside the other bodies.

Nothing here does I/O.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Self

from rocketmq_wire import fastjson
from rocketmq_wire.bodies.base import Fields, JsonBody, bean, same, to_long, write_map
from rocketmq_wire.bodies.heartbeat import EXPRESSION_TAG, SUB_ALL, SubscriptionData
from rocketmq_wire.bodies.java_collections import JavaTable, MapKind, read_map
from rocketmq_wire.bodies.message_queue import (
    MessageQueue,
    message_queue_hash,
    read_message_queue,
    write_message_queue,
)
from rocketmq_wire.javahash import java_string_hash

#: ``ExpressionType.SQL92``.
EXPRESSION_SQL92 = "SQL92"
#: Tags are separated by this in an expression (``TagA || TagB``).
TAG_SEPARATOR = "||"


def _signed32(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - 0x1_0000_0000 if value >= 0x8000_0000 else value


def is_tag_type(expression_type: str | None) -> bool:
    """A missing or empty expression type means tags, as in Java's ``ExpressionType.isTagType``."""
    return not expression_type or expression_type == EXPRESSION_TAG


def build_subscription(
    topic: str, expression: str | None, expression_type: str | None = EXPRESSION_TAG
) -> SubscriptionData:
    """``FilterAPI.build``: ``*`` (or nothing) takes every message; else tags separated by ``||``.

    The expression is kept as written (Java keeps the untrimmed text); the tag set holds each distinct
    trimmed tag, the code set their ``String.hashCode`` values. A non-tag expression (SQL92) is carried as
    is for the broker to evaluate. Raises ``ValueError`` for an expression that names no tag.
    """
    if not is_tag_type(expression_type):
        if not expression or not expression.strip():
            raise ValueError(f"a {expression_type} subscription needs an expression")
        return SubscriptionData(topic=topic, sub_string=expression, expression_type=expression_type)
    if expression is None or not expression.strip() or expression.strip() == SUB_ALL:
        return SubscriptionData(topic=topic, sub_string=SUB_ALL, expression_type=EXPRESSION_TAG)
    tags: list[str] = []
    for part in expression.split(TAG_SEPARATOR):
        tag = part.strip()
        if tag and tag not in tags:
            tags.append(tag)
    if not tags:
        raise ValueError(f"the expression {expression!r} names no tag")
    return SubscriptionData(
        topic=topic,
        sub_string=expression,
        tags_set=tags,
        code_set=[_signed32(java_string_hash(tag)) for tag in tags],
        expression_type=EXPRESSION_TAG,
    )


#: ``LocalFileOffsetStore`` keeps a ``ConcurrentHashMap<MessageQueue, AtomicLong>``.
LOCAL_OFFSET_TABLE = JavaTable(MapKind.CONCURRENT_HASH_MAP)


def _offset(value: Any, path: str) -> int:
    return to_long(value, path)


@dataclasses.dataclass(kw_only=True)
class OffsetSerializeWrapper(JsonBody):
    """A broadcasting consumer's offsets file: the next offset to consume, per queue."""

    offset_table: dict[MessageQueue, int] = dataclasses.field(default_factory=dict)

    def to_bean(self) -> fastjson.Bean:
        return bean(
            offsetTable=write_map(
                self.offset_table, message_queue_hash, LOCAL_OFFSET_TABLE, write_message_queue, same
            )
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        entries = obj.entries_of("offsetTable", read_message_queue, _offset)
        if entries is None:
            return cls()
        return cls(offset_table=dict(read_map(entries, message_queue_hash, LOCAL_OFFSET_TABLE)))
