"""Tag filtering: which stored messages a subscription accepts, judged from the consume queue alone.

A consume-queue entry carries the hash code of the message's tag, so a ``TagA || TagB`` subscription is
served by comparing hash codes without reading any message (Apache's ``ExpressionMessageFilter``). Two tags
with equal hash codes both pass; clients check the tag text themselves, as Java's do. Building the
subscription from an expression is the protocol's business (:mod:`rocketmq_wire.bodies.subscription`).
"""

from __future__ import annotations

from rocketmq_wire.bodies.heartbeat import SUB_ALL, SubscriptionData
from rocketmq_wire.bodies.subscription import is_tag_type, java_int


def tag_codes(subscription: SubscriptionData | None) -> frozenset[int] | None:
    """The tag hash codes a subscription accepts; ``None`` when it accepts every message."""
    if subscription is None or subscription.class_filter_mode:
        return None
    if not is_tag_type(subscription.expression_type):
        return None
    if subscription.sub_string is None or subscription.sub_string.strip() in ("", SUB_ALL):
        return None
    return frozenset(java_int(code) for code in subscription.code_set)


def accepts(codes: frozenset[int] | None, tag_code: int) -> bool:
    return codes is None or java_int(tag_code) in codes
