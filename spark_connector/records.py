"""A stored message as a row of the source's schema (:data:`spark_connector.columns.SOURCE_SCHEMA`).

``properties`` holds the user properties only -- the names a producer may set -- so that a DataFrame read
from one topic can be written to another unchanged; tags and keys have their own columns, the unique id is
``msg_id``, and the remaining system properties (``WAIT``, ``UNIQ_KEY``, ``DELAY`` …) are left out.
"""

from __future__ import annotations

import datetime
from typing import Any

from rocketmq_wire.message import Message, MessageExt
from rocketmq_wire.topics import without_namespace

_UTC = datetime.UTC


def _timestamp(millis: int) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(millis / 1000, tz=_UTC)


def message_row(message: MessageExt, broker_name: str, namespace: str | None) -> tuple[Any, ...]:
    """The row for ``message``: topic (namespace removed), queue_id, queue_offset, body, tags, keys,
    properties, born_timestamp, store_timestamp, msg_id (the producer's unique id if it set one, else the
    broker's offset id, as Java's ``getMsgId``), broker_name."""
    split, _system = Message.from_properties(message.topic, b"", message.properties)
    return (
        without_namespace(message.topic, namespace),
        message.queue_id,
        message.queue_offset,
        message.body,
        split.tags,
        split.keys,
        split.properties,
        _timestamp(message.born_timestamp),
        _timestamp(message.store_timestamp),
        message.client_msg_id,
        broker_name,
    )
