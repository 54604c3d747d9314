"""Tag filtering: which stored messages a subscription accepts, judged from the consume queue alone.

A consume-queue entry carries the hash code of the message's tag, so a ``TagA || TagB`` subscription is
served by comparing hash codes without reading any message (Apache's ``ExpressionMessageFilter``). Two tags
with equal hash codes both pass; clients check the tag text themselves, as Java's do.
"""

from __future__ import annotations

from rocketmq_wire.bodies.heartbeat import EXPRESSION_TAG, SUB_ALL, SubscriptionData
from rocketmq_wire.javahash import java_string_hash


def _java_int(value: int) -> int:
    value &= 0xFFFFFFFF
    return value - 0x1_0000_0000 if value >= 0x8000_0000 else value


def is_tag_type(expression_type: str | None) -> bool:
    return expression_type is None or expression_type == "" or expression_type == EXPRESSION_TAG


def build_subscription(topic: str, sub_string: str | None, expression_type: str | None) -> SubscriptionData:
    """``FilterAPI.build``: ``*`` (or nothing) subscribes to all; otherwise ``||``-separated tags."""
    if not is_tag_type(expression_type):
        return SubscriptionData(topic=topic, sub_string=sub_string, expression_type=expression_type)
    if sub_string is None or sub_string.strip() in ("", SUB_ALL):
        return SubscriptionData(topic=topic, sub_string=SUB_ALL, expression_type=EXPRESSION_TAG)
    tags: list[str] = []
    for part in sub_string.split("||"):
        tag = part.strip()
        if tag and tag not in tags:
            tags.append(tag)
    return SubscriptionData(
        topic=topic,
        sub_string=sub_string,
        tags_set=tags,
        code_set=[_java_int(java_string_hash(tag)) for tag in tags],
        expression_type=EXPRESSION_TAG,
    )


def tag_codes(subscription: SubscriptionData | None) -> frozenset[int] | None:
    """The tag hash codes a subscription accepts; ``None`` when it accepts every message."""
    if subscription is None or subscription.class_filter_mode:
        return None
    if not is_tag_type(subscription.expression_type):
        return None
    if subscription.sub_string is None or subscription.sub_string.strip() in ("", SUB_ALL):
        return None
    return frozenset(_java_int(code) for code in subscription.code_set)


def accepts(codes: frozenset[int] | None, tag_code: int) -> bool:
    return codes is None or _java_int(tag_code) in codes
