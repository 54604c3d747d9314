"""Topic attributes (RocketMQ 5): the ``+key=value,-key`` modification text of a topic create or update.

A 5.x topic carries attributes beside its queues and permissions: ``message.type`` (NORMAL, FIFO, DELAY,
TRANSACTION or MIXED; the Proxy and the gRPC clients refuse a send of another type), ``queue.type``,
``cleanup.policy`` and ``reserve.time``. UPDATE_AND_CREATE_TOPIC carries the change as one string in its
``attributes`` header field: ``+name=value`` adds or changes one, ``-name`` removes one, items separated by
commas, in the iteration order of the Java ``HashMap`` the client parsed them into. The broker validates
names and values (and that only ``+`` items come with a new topic, and only changeable attributes change);
:func:`parse_modification` checks only what Apache's client checks before sending.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Final

from rocketmq_wire.errors import CodecError
from rocketmq_wire.javahash import hashmap_order

ADD: Final = "+"
DELETE: Final = "-"

MESSAGE_TYPE: Final = "message.type"
QUEUE_TYPE: Final = "queue.type"
CLEANUP_POLICY: Final = "cleanup.policy"
RESERVE_TIME: Final = "reserve.time"
#: A LITE topic's lite topics' expiration (5.5): -1 by default, at most 43200 (30 days in minutes).
LITE_TOPIC_EXPIRATION: Final = "lite.topic.expiration"


class TopicMessageType(enum.Enum):
    """``message.type`` values (Java's ``TopicMessageType``; MIXED needs ``enableMixedMessageType``).

    PRIORITY and LITE are 5.5's: a LITE topic is the parent of lite topics (``docs/lite-topics.md``).
    """

    NORMAL = "NORMAL"
    FIFO = "FIFO"
    DELAY = "DELAY"
    TRANSACTION = "TRANSACTION"
    PRIORITY = "PRIORITY"
    LITE = "LITE"
    MIXED = "MIXED"


def parse_modification(text: str) -> dict[str, str]:
    """``+a=b,-c`` as Java's ``AttributeParser.parseToMap`` reads it: keys keep their sign, removals map to
    an empty value; an item without its sign, or a key given twice, is a :class:`CodecError`."""
    result: dict[str, str] = {}
    if not text:
        return result
    for item in text.split(","):
        key, sep, value = item.partition("=")
        if sep:
            if ADD not in key:
                raise CodecError(f"attribute {item!r}: an added or changed attribute is written +name=value")
            if not value or "=" in value:
                raise CodecError(f"attribute {item!r}: give one value after '='")
        elif DELETE not in key:
            raise CodecError(f"attribute {item!r}: a removed attribute is written -name")
        if key in result:
            raise CodecError(f"attribute {key!r} is given twice")
        result[key] = value
    return result


def modification(attributes: Mapping[str, str] = {}, remove: Iterable[str] = ()) -> dict[str, str]:
    """Plain names to set (``{"message.type": "FIFO"}``) and names to remove, as signed modification keys."""
    result: dict[str, str] = {}
    for name, value in attributes.items():
        _check_name(name)
        if not value or any(c in value for c in ",="):
            raise CodecError(f"attribute {name!r}: the value {value!r} is empty or holds ',' or '='")
        result[ADD + name] = value
    for name in remove:
        _check_name(name)
        if name in attributes:
            raise CodecError(f"attribute {name!r} is both set and removed")
        result[DELETE + name] = ""
    return result


def _check_name(name: str) -> None:
    # The broker refuses a name holding either sign; a comma or '=' would split the text elsewhere.
    if not name or any(c in name for c in "+-,="):
        raise CodecError(f"attribute name {name!r} is empty or holds one of + - , =")


def format_modification(mods: Mapping[str, str]) -> str:
    """The ``attributes`` header value for signed keys, as Java's ``AttributeParser.parseToString`` writes
    the ``HashMap`` it parsed them into (so its items come in that map's order)."""
    return ",".join(f"{key}={mods[key]}" if mods[key] else key for key in hashmap_order(mods))
