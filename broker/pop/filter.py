"""The seam between a POP subscription and the store's filtering.

A pop names its filter in its header (``expType``/``exp``); :func:`store_filter` turns the subscription
into what :meth:`broker.store.MessageStore.get_messages` takes. Tags are judged from the consume queue
(:mod:`broker.filtering`); an expression type this broker cannot evaluate gives ``None``, which the pop
processor refuses as the pull processor does. SQL92 plugs in here, by returning a ``message_filter``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from broker.filtering import tag_codes
from rocketmq_wire.bodies.heartbeat import SubscriptionData
from rocketmq_wire.bodies.subscription import is_tag_type


@dataclasses.dataclass(frozen=True, slots=True)
class StoreFilter:
    """Tag hash codes to accept (``None``: all) and a check of each stored record (``None``: none)."""

    codes: frozenset[int] | None
    message_filter: Callable[[bytes], bool] | None = None


#: Accepts every message (the POP retry topic is always read unfiltered, as Apache reads it).
ACCEPT_ALL = StoreFilter(None)


def store_filter(subscription: SubscriptionData) -> StoreFilter | None:
    """The store filter of ``subscription``; ``None`` when its expression type is not supported."""
    if is_tag_type(subscription.expression_type):
        return StoreFilter(tag_codes(subscription))
    return None
