"""Topic attributes (RocketMQ 5): which a topic may carry, and how an UPDATE_AND_CREATE_TOPIC changes them.

A request carries a modification string, ``+message.type=FIFO,-reserve.time``: ``+`` adds or changes, ``-``
removes. Apache's broker reads it into a map, then merges it into the topic's current attributes by four
rules that clients can observe through their error remarks: a new topic takes only additions; an unknown key,
a value outside the attribute's range and a change to an unchangeable attribute (``queue.type``,
``cleanup.policy``) are refused. The remarks and their order of checks are Apache's (``AttributeParser``,
``AttributeUtil``, ``TopicAttributes`` of 5.3/5.5), since tools show them to users as they come.

The broker keeps attributes and serves them (GET_TOPIC_CONFIG, topics.json, registration); it does not check
a message's type against its topic's on send, as Apache's broker does not (Apache's Proxy does, and reads
the type from this broker). The one attribute a send is checked against is ``cleanup.policy``: a compacted
topic keeps the newest message per key, so Apache's broker refuses a message without keys to it
(:data:`KEY_MISSING_REMARK`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rocketmq_wire.javahash import hashmap_order

MESSAGE_TYPE = "message.type"
CLEANUP_POLICY = "cleanup.policy"
MIXED = "MIXED"
#: Apache's answer (INVALID_PARAMETER) to a MIXED topic while ``enableMixedMessageType`` is off.
MIXED_REFUSAL = "MIXED message type is not supported."
JAVA_LONG_MAX = (1 << 63) - 1
#: Apache's answer (MESSAGE_ILLEGAL) to a single send without keys to a topic whose cleanup policy is
#: COMPACTION (batches are not checked, as Apache checks only ``sendMessage``).
KEY_MISSING_REMARK = "Required message key is missing"


class AttributeRefused(Exception):
    """A modification Apache refuses; ``remark`` is Apache's text for it."""

    def __init__(self, remark: str) -> None:
        super().__init__(remark)
        self.remark = remark


@dataclass(frozen=True, slots=True)
class _EnumAttribute:
    changeable: bool
    universe: tuple[str, ...]

    def verify(self, value: str) -> None:
        if value not in self.universe:
            # Java prints its HashSet, in the set's iteration order.
            raise AttributeRefused(f"value is not in set: [{', '.join(hashmap_order(self.universe))}]")


@dataclass(frozen=True, slots=True)
class _LongRangeAttribute:
    changeable: bool
    low: int
    high: int

    def verify(self, value: str) -> None:
        try:
            number = int(value, 10)
        except ValueError:
            raise AttributeRefused(f'For input string: "{value}"') from None
        if not self.low <= number <= self.high:
            raise AttributeRefused(f"value is not in range({self.low}, {self.high})")


#: Apache's ``TopicAttributes.ALL``.
ATTRIBUTES: Mapping[str, _EnumAttribute | _LongRangeAttribute] = {
    "queue.type": _EnumAttribute(False, ("BatchCQ", "SimpleCQ")),
    CLEANUP_POLICY: _EnumAttribute(False, ("DELETE", "COMPACTION")),
    MESSAGE_TYPE: _EnumAttribute(True, ("UNSPECIFIED", "NORMAL", "FIFO", "DELAY", "TRANSACTION", MIXED)),
    "reserve.time": _LongRangeAttribute(True, -1, JAVA_LONG_MAX),
}


def parse_request(text: str | None) -> dict[str, str]:
    """The request's modification string as Apache's ``AttributeParser.parseToMap`` reads it: signed keys
    (``+name`` / ``-name``) to values ('' for a removal)."""
    if not text:
        return {}
    found: dict[str, str] = {}
    for item in text.split(","):
        if "=" in item:
            parts = item.split("=")
            key, value = parts[0], parts[1] if len(parts) > 1 else ""
            if "+" not in key:
                raise AttributeRefused(f"add/alter attribute format is wrong: {key}")
        else:
            key, value = item, ""
            if "-" not in key:
                raise AttributeRefused(f"delete attribute format is wrong: {key}")
        if key in found:
            raise AttributeRefused(f"key duplication: {key}")
        found[key] = value
    return found


def mixed_requested(requested: Mapping[str, str]) -> bool:
    """Whether the request adds ``message.type=MIXED`` (refused unless ``enableMixedMessageType``)."""
    return requested.get("+" + MESSAGE_TYPE) == MIXED


def alter(create: bool, current: Mapping[str, str], requested: Mapping[str, str]) -> dict[str, str]:
    """The topic's attributes after ``requested`` (signed keys): ``AttributeUtil.alterCurrentAttributes``."""
    init: dict[str, str] = {}
    add: dict[str, str] = {}
    update: dict[str, str] = {}
    delete: dict[str, str] = {}
    seen: set[str] = set()
    for key, value in requested.items():
        name = key[1:]
        if not name or "+" in name or "-" in name:
            raise AttributeRefused("kv string format wrong.")
        if name in seen:
            raise AttributeRefused(f"alter duplication key. key: {name}")
        seen.add(name)
        if create:
            if not key.startswith("+"):
                raise AttributeRefused(f"only add attribute is supported while creating topic. key: {name}")
            init[name] = value
        elif key.startswith("+"):
            (update if name in current else add)[name] = value
        elif key.startswith("-"):
            if name not in current:
                raise AttributeRefused(f"attempt to delete a nonexistent key: {name}")
            delete[name] = value
        else:
            raise AttributeRefused(f"wrong format key: {name}")
    _validate(init, initial=True, removing=False)
    _validate(add, initial=False, removing=False)
    _validate(update, initial=False, removing=False)
    _validate(delete, initial=False, removing=True)
    final = {**current, **init, **add, **update}
    for name in delete:
        final.pop(name, None)
    return final


def _validate(changes: Mapping[str, str], *, initial: bool, removing: bool) -> None:
    for name, value in changes.items():
        attribute = ATTRIBUTES.get(name)
        if attribute is None:
            raise AttributeRefused(f"unsupported key: {name}")
        if not initial and not attribute.changeable:
            raise AttributeRefused(f"attempt to update an unchangeable attribute. key: {name}")
        if not removing:
            attribute.verify(value)


def is_compacted(attributes: Mapping[str, str] | None) -> bool:
    """Whether a topic with these attributes is compacted (no attribute means DELETE, the default)."""
    return attributes is not None and attributes.get(CLEANUP_POLICY) == "COMPACTION"


def keys_missing(keys: str | None) -> bool:
    """Whether a message's ``KEYS`` property counts as no key for a compacted topic: Apache's
    ``StringUtils.isBlank`` (absent, empty or only whitespace)."""
    return keys is None or not keys.strip()
