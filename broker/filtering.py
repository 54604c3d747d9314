"""Which stored messages a subscription accepts: by tag from the consume queue, by SQL92 from properties.

A consume-queue entry carries the hash code of the message's tag, so a ``TagA || TagB`` subscription is
served by comparing hash codes without reading any message (Apache's ``ExpressionMessageFilter``). Two tags
with equal hash codes both pass; clients check the tag text themselves, as Java's do. Building the
subscription from an expression is the protocol's business (:mod:`rocketmq_wire.bodies.subscription`).

A SQL92 subscription is judged from each message's properties instead, once the record is read
(:mod:`broker.sql92`). :func:`subscription_filter` gives one :class:`SubscriptionFilter` for either kind, so
a pull and a pop ask the same object "does this tag code pass" and "do these properties pass".
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from broker.sql92 import CompileError, ExpressionCompiler, Properties, Term, matches
from rocketmq_wire.bodies.heartbeat import SUB_ALL, SubscriptionData
from rocketmq_wire.bodies.subscription import EXPRESSION_SQL92, is_tag_type, java_int
from rocketmq_wire.errors import CodecError
from rocketmq_wire.message.stored import decode_message

log = logging.getLogger("broker.filtering")

#: What Apache's ``FilterFactory`` answers for an expression type it has no filter for: a null it then calls,
#: so its check reports Java's NullPointerException text (JDK 14+ spells out the call).
_NO_FILTER_FOR_TYPE = (
    'Cannot invoke "org.apache.rocketmq.filter.FilterSpi.compile(String)" because the return value of '
    '"org.apache.rocketmq.filter.FilterFactory.get(String)" is null'
)


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


def compile_expression(compiler: ExpressionCompiler, expression_type: str, expression: str | None) -> Term:
    """A non-tag expression compiled by the filter its type names (only SQL92 exists, as in Apache);
    :class:`CompileError` with Apache's remark when it does not compile or the type has no filter."""
    if expression_type != EXPRESSION_SQL92:
        raise CompileError(_NO_FILTER_FOR_TYPE)
    return compiler.compile(expression or "")


@dataclass(frozen=True, slots=True)
class SubscriptionFilter:
    """One subscription's filter: tag codes judged from the consume queue, then an expression judged from
    the message's properties. ``None`` in either place lets everything through that step."""

    codes: frozenset[int] | None = None
    expression: Term | None = None

    def accepts_tag(self, tag_code: int) -> bool:
        """Whether a consume-queue entry with this tag hash code may be selected (before reading it)."""
        return self.codes is None or java_int(tag_code) in self.codes

    def accepts_properties(self, properties: Properties) -> bool:
        """Whether a message with these properties is selected (always, without an expression)."""
        return self.expression is None or matches(self.expression, properties)

    def accepts_record(self, record: bytes) -> bool:
        """:meth:`accepts_properties` of a stored record, as the store hands it over."""
        if self.expression is None:
            return True
        try:
            message, _ = decode_message(record, decompress_body=False)
            properties = message.properties
        except CodecError as error:
            log.warning("cannot read the properties of a stored message to filter it: %s", error)
            return False
        return matches(self.expression, properties)

    @property
    def record_filter(self) -> Callable[[bytes], bool] | None:
        """The store's per-record test, ``None`` when there is nothing to test past the tag codes."""
        return None if self.expression is None else self.accepts_record


#: A subscription that takes every message.
ACCEPT_ALL = SubscriptionFilter()


def subscription_filter(
    subscription: SubscriptionData | None, compiler: ExpressionCompiler
) -> SubscriptionFilter:
    """The filter of a subscription: tag codes for a tag subscription, the compiled expression for a SQL92
    one (from ``compiler``'s cache). Raises :class:`~broker.sql92.CompileError` when a non-tag expression
    does not compile; what that means is the caller's (Apache's pull then filters nothing, its check and a
    heartbeat-based pull refuse)."""
    if subscription is None or subscription.class_filter_mode:
        return ACCEPT_ALL
    if is_tag_type(subscription.expression_type):
        codes = tag_codes(subscription)
        return ACCEPT_ALL if codes is None else SubscriptionFilter(codes)
    assert subscription.expression_type is not None
    return SubscriptionFilter(
        expression=compile_expression(compiler, subscription.expression_type, subscription.sub_string)
    )
