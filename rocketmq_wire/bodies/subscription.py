"""Turning a consumer's subscription expression into :class:`SubscriptionData` (Java's ``FilterAPI``).

Both ends need the same answer: the client puts the tags and their hash codes in its heartbeat and pull
requests, the broker matches the codes against each message's tag code. An expression is ``*`` (or empty)
for everything, else tags joined by ``||``; SQL92 expressions are passed through for the broker.
"""

from __future__ import annotations

from rocketmq_wire.bodies.heartbeat import EXPRESSION_TAG, SUB_ALL, SubscriptionData
from rocketmq_wire.errors import CodecError
from rocketmq_wire.javahash import java_string_hash

#: ``ExpressionType.SQL92``.
EXPRESSION_SQL92 = "SQL92"
#: What separates the tags of an expression (``TagA || TagB``).
TAG_SEPARATOR = "||"


def java_int(value: int) -> int:
    """An unsigned 32-bit hash as the signed ``int`` Java stores (tag codes are negative half the time)."""
    value &= 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def tag_code(tag: str) -> int:
    """A tag's code: its ``String.hashCode()``, signed."""
    return java_int(java_string_hash(tag))


def is_tag_type(expression_type: str | None) -> bool:
    """``ExpressionType.isTagType``: no type, an empty one or ``TAG``."""
    return not expression_type or expression_type == EXPRESSION_TAG


def build_subscription(
    topic: str, expression: str | None, expression_type: str | None = EXPRESSION_TAG
) -> SubscriptionData:
    """``FilterAPI.build``: the subscription a Java client would build for this expression.

    Exactly ``*`` or an empty expression takes everything. Otherwise the expression is split on ``||``
    (trailing empty parts dropped, as ``String.split`` does), each part trimmed, and every non-empty tag
    added once with its code; the expression itself is kept as written. A non-tag type keeps the
    expression for the broker to evaluate. An expression Java refuses raises :class:`CodecError`.
    """
    if not is_tag_type(expression_type):
        if not expression:
            raise CodecError(f"a {expression_type} subscription to {topic} needs an expression")
        return SubscriptionData(topic=topic, sub_string=expression, expression_type=expression_type)
    if not expression or expression == SUB_ALL:
        return SubscriptionData(topic=topic, sub_string=SUB_ALL, expression_type=EXPRESSION_TAG)
    parts = expression.split(TAG_SEPARATOR)
    while parts and parts[-1] == "":
        parts.pop()
    if not parts:
        raise CodecError(f"subscription expression {expression!r} for {topic} splits into no tags")
    tags: list[str] = []
    for part in parts:
        tag = part.strip()
        if tag and tag not in tags:
            tags.append(tag)
    return SubscriptionData(
        topic=topic,
        sub_string=expression,
        tags_set=tags,
        code_set=[tag_code(tag) for tag in tags],
        expression_type=EXPRESSION_TAG,
    )
