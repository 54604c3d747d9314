"""Sharing a topic's queues among the members of a consumer group.

Every member runs the same function over the same sorted inputs -- every queue of the topic and every client
id the broker lists for the group -- and keeps the share that comes out for its own id. Nobody coordinates,
so the functions must be deterministic and identical to Java's: a group mixing Java, C++ and Python members
only covers each queue exactly once if all of them compute the same split.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from consumer.config import AllocateStrategyName
from rocketmq_wire.bodies.message_queue import MessageQueue

logger = logging.getLogger("consumer.allocate")


class AllocateStrategy(Protocol):
    """``(group, own client id, every queue sorted, every client id sorted) -> this member's queues``."""

    def __call__(
        self, group: str, client_id: str, queues: Sequence[MessageQueue], client_ids: Sequence[str]
    ) -> list[MessageQueue]: ...


def queue_sort_key(queue: MessageQueue) -> tuple[str, str, int]:
    """Java's ``MessageQueue.compareTo``: topic, then broker name, then queue id."""
    return (queue.topic or "", queue.broker_name or "", queue.queue_id)


def sorted_queues(queues: Iterable[MessageQueue]) -> list[MessageQueue]:
    return sorted(queues, key=queue_sort_key)


def _check(client_id: str, queues: Sequence[MessageQueue], client_ids: Sequence[str]) -> None:
    if not client_id:
        raise ValueError("the current client id is empty")
    if not queues:
        raise ValueError("there are no queues to allocate")
    if not client_ids:
        raise ValueError("there are no client ids to allocate to")


def allocate_averagely(
    group: str, client_id: str, queues: Sequence[MessageQueue], client_ids: Sequence[str]
) -> list[MessageQueue]:
    """Contiguous runs: with 8 queues and 3 members, the members get 3, 3 and 2 queues in order.

    The first ``len(queues) % len(client_ids)`` members get one queue more than the rest; with more members
    than queues, each of the first members gets one queue and the others none.
    """
    _check(client_id, queues, client_ids)
    if client_id not in client_ids:
        logger.info("group %s: client %s is not among the members %s", group, client_id, list(client_ids))
        return []
    index = list(client_ids).index(client_id)
    total, members = len(queues), len(client_ids)
    extra = total % members
    if total <= members:
        size = 1
    elif extra and index < extra:
        size = total // members + 1
    else:
        size = total // members
    start = index * size if extra and index < extra else index * size + extra
    count = min(size, total - start)
    return [queues[(start + i) % total] for i in range(max(0, count))]


def allocate_by_circle(
    group: str, client_id: str, queues: Sequence[MessageQueue], client_ids: Sequence[str]
) -> list[MessageQueue]:
    """Dealt like cards: member ``i`` gets queues ``i``, ``i + n``, ``i + 2n``... of ``n`` members."""
    _check(client_id, queues, client_ids)
    if client_id not in client_ids:
        logger.info("group %s: client %s is not among the members %s", group, client_id, list(client_ids))
        return []
    index = list(client_ids).index(client_id)
    return list(queues[index :: len(client_ids)])


def allocate_by_config(configured: Iterable[MessageQueue]) -> AllocateStrategy:
    """Always the given queues, whoever else is in the group (an operator pins a member to its queues)."""
    fixed = list(configured)

    def allocate(
        group: str, client_id: str, queues: Sequence[MessageQueue], client_ids: Sequence[str]
    ) -> list[MessageQueue]:
        return list(fixed)

    return allocate


_BY_NAME: dict[str, Callable[..., list[MessageQueue]]] = {
    AllocateStrategyName.AVERAGELY: allocate_averagely,
    AllocateStrategyName.CIRCLE: allocate_by_circle,
}


def strategy_named(
    name: str | AllocateStrategyName, configured: Iterable[MessageQueue] = ()
) -> AllocateStrategy:
    """The strategy ``averagely``, ``circle`` or ``by_config`` (which needs ``configured`` queues)."""
    try:
        kind = AllocateStrategyName(name)
    except ValueError:
        choices = ", ".join(s.value for s in AllocateStrategyName)
        raise ValueError(f"unknown allocation strategy {name!r}; choose one of {choices}") from None
    if kind is AllocateStrategyName.BY_CONFIG:
        queues = list(configured)
        if not queues:
            raise ValueError("the by_config strategy needs the queues to allocate")
        return allocate_by_config(queues)
    return _BY_NAME[kind]
