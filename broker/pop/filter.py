"""The seam between a POP subscription and the store's filtering.

A pop names its filter in its header (``expType``/``exp``); :func:`store_filter` turns it into the
:class:`~broker.filtering.SubscriptionFilter` a pull uses too: tag codes judged from the consume queue, a
SQL92 expression judged from each record's properties (compiled once, in the broker's shared compiler).
The POP retry topic is always read with :data:`ACCEPT_ALL`, as Apache reads it (``*``).
"""

from __future__ import annotations

from broker.filtering import ACCEPT_ALL, SubscriptionFilter, subscription_filter
from broker.sql92 import ExpressionCompiler
from rocketmq_wire.bodies.heartbeat import SubscriptionData

__all__ = ["ACCEPT_ALL", "SubscriptionFilter", "store_filter"]


def store_filter(subscription: SubscriptionData, compiler: ExpressionCompiler) -> SubscriptionFilter:
    """The filter of ``subscription``; raises :class:`~broker.sql92.CompileError` for an expression that
    does not compile (the pop is then refused, as Apache refuses it)."""
    return subscription_filter(subscription, compiler)
