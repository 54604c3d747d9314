"""Queue locks for orderly consumption (LOCK_BATCH_MQ / UNLOCK_BATCH_MQ).

An orderly consumer must hold a queue's lock on the broker before consuming it, so that two members of a
group never consume one queue at once during a rebalance. A lock lapses when its holder has not renewed it
for ``max_live_ms`` (Apache: 60 s); a lapsed lock can be taken by another client.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterable

from broker.clock import Clock
from rocketmq_wire.bodies.message_queue import MessageQueue

log = logging.getLogger("broker.locks")

DEFAULT_LOCK_MAX_LIVE_MS = 60_000


@dataclasses.dataclass(slots=True)
class LockEntry:
    client_id: str
    last_update_timestamp: int


class RebalanceLockManager:
    def __init__(self, clock: Clock, max_live_ms: int = DEFAULT_LOCK_MAX_LIVE_MS) -> None:
        self._clock = clock
        self.max_live_ms = max_live_ms
        self._table: dict[str, dict[MessageQueue, LockEntry]] = {}

    def _expired(self, entry: LockEntry, now: int) -> bool:
        return now - entry.last_update_timestamp > self.max_live_ms

    def try_lock_batch(
        self, group: str, queues: Iterable[MessageQueue], client_id: str
    ) -> list[MessageQueue]:
        """Lock (or renew) each queue for ``client_id``; returns the queues it now holds, in request order."""
        now = self._clock.now_ms()
        locks = self._table.setdefault(group, {})
        granted: list[MessageQueue] = []
        for queue in queues:
            entry = locks.get(queue)
            if entry is None:
                locks[queue] = LockEntry(client_id, now)
                log.info("queue locked: group %s %s by %s", group, queue, client_id)
            elif entry.client_id == client_id:
                entry.last_update_timestamp = now
            elif self._expired(entry, now):
                log.warning(
                    "queue lock of %s expired, group %s %s now locked by %s",
                    entry.client_id,
                    group,
                    queue,
                    client_id,
                )
                locks[queue] = LockEntry(client_id, now)
            else:
                log.warning(
                    "queue locked by another client: group %s %s held by %s", group, queue, entry.client_id
                )
                continue
            granted.append(queue)
        return granted

    def unlock_batch(self, group: str, queues: Iterable[MessageQueue], client_id: str) -> None:
        locks = self._table.get(group)
        if locks is None:
            return
        for queue in queues:
            entry = locks.get(queue)
            if entry is not None and entry.client_id == client_id:
                del locks[queue]
                log.info("queue unlocked: group %s %s by %s", group, queue, client_id)
        if not locks:
            del self._table[group]

    def holder(self, group: str, queue: MessageQueue) -> str | None:
        """The client holding a live lock on the queue, if any."""
        entry = self._table.get(group, {}).get(queue)
        if entry is None or self._expired(entry, self._clock.now_ms()):
            return None
        return entry.client_id
