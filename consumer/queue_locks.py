"""Broker-side queue locks for orderly consumption in clustering mode (Java's ``RebalanceImpl.lock*``).

A queue moving from one member to another must never be consumed by both at once, or order breaks. So a
member only consumes a queue whose lock it holds on the queue's broker: it asks for it when the queue is
allocated to it, renews every lock it holds every 20 s (brokers let an unrenewed lock go after 60 s), and
gives locks back when it releases queues or shuts down. Locks are asked for broker by broker, in batches.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from consumer.client import ConsumerClient
from consumer.errors import ConsumerError
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.transport import RemotingError

logger = logging.getLogger("consumer.queue_locks")


def by_broker(queues: Iterable[MessageQueue]) -> dict[str, list[MessageQueue]]:
    grouped: dict[str, list[MessageQueue]] = {}
    for queue in queues:
        grouped.setdefault(queue.broker_name or "", []).append(queue)
    return grouped


class QueueLocks:
    """Lock requests of one consumer for its group; failures are logged and count as "not locked"."""

    def __init__(self, client: ConsumerClient, group: str) -> None:
        self._client = client
        self._group = group

    async def lock(self, queues: list[MessageQueue]) -> set[MessageQueue]:
        """The queues of ``queues`` (all on one broker) this consumer now holds the lock of."""
        if not queues:
            return set()
        client = self._client
        try:
            addr = await client.master_of(queues[0])
            return set(await client.api.lock(addr, self._group, client.client_id, queues))
        except (ConsumerError, RemotingError) as exc:
            logger.warning(
                "locking %d queues of broker %s failed: %s", len(queues), queues[0].broker_name, exc
            )
            return set()

    async def lock_all(self, queues: Iterable[MessageQueue]) -> set[MessageQueue]:
        """Lock (or renew) ``queues``, one request per broker; returns those held now."""
        held: set[MessageQueue] = set()
        for batch in by_broker(queues).values():
            held |= await self.lock(batch)
        return held

    async def unlock(self, queues: Iterable[MessageQueue]) -> None:
        """Give the locks of ``queues`` back, one request per broker, waiting for each broker's answer."""
        client = self._client
        for broker_name, batch in by_broker(queues).items():
            try:
                addr = await client.master_of(batch[0])
                await client.api.unlock(addr, self._group, client.client_id, batch, oneway=False)
            except (ConsumerError, RemotingError) as exc:
                logger.warning("unlocking queues of broker %s failed: %s", broker_name, exc)
