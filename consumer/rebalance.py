"""Deciding which queues this member of a group reads (Java's ``RebalanceImpl`` and ``RebalanceService``).

For each subscribed topic: in broadcasting mode every readable queue; in clustering mode the share the
allocation strategy computes from every queue and every member's client id (asked from a broker of the
topic). What to do with queues gained and lost is the consumer's business (a push consumer starts and stops
pulling them, a lite pull consumer its fetchers), so the consumer hands in :class:`QueueOwner` hooks.

A 5.x push consumer may leave the sharing to the brokers instead (Java's ``setClientRebalance(false)``):
then each round asks a broker of the topic for this member's queues (QUERY_ASSIGNMENT), and the broker says
for each whether to PULL it, as above, or POP it (the group's consume mode); POP queues go to a second set of
hooks.

Rounds run every ``rebalance_interval_ms`` and whenever a broker says the group changed
(NOTIFY_CONSUMER_IDS_CHANGED); only one round runs at a time, and a nudge during a round causes another.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Sequence

from consumer.allocate import AllocateStrategy, sorted_queues
from consumer.client import ConsumerClient
from consumer.errors import ConsumerError
from rocketmq_wire.bodies.heartbeat import MessageModel
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.bodies.pop import MessageQueueAssignment, MessageRequestMode
from rocketmq_wire.topics import is_retry_topic
from rocketmq_wire.transport import RemotingError

logger = logging.getLogger("consumer.rebalance")

#: How soon a round that could not take all its queues is tried again (Java 5.x's ``minInterval``).
UNBALANCED_RETRY_MS = 1000

#: ``(topic, every queue of it, the queues this member now owns)``, after a change.
RebalanceListener = Callable[[str, list[MessageQueue], list[MessageQueue]], None]
#: This member's queues of a topic as a broker assigns them; ``None`` when no broker could say.
AssignmentSource = Callable[[str], Awaitable[list[MessageQueueAssignment] | None]]


@dataclasses.dataclass(frozen=True, slots=True)
class QueueOwner:
    """What a consumer does when it gains or loses a queue.

    * ``owned(topic)``: the queues of ``topic`` it currently reads;
    * ``release(queue)``: stop reading it and commit its offset; ``False`` keeps it for now (an orderly
      handler is still running on it), so the next round tries again;
    * ``acquire(queue)``: start reading it; ``False`` if that cannot be done now (its lock is held
      elsewhere, or the broker cannot say where to start);
    * ``changed(topic, every queue, owned queues)``: the owned set changed (a push consumer heartbeats).
    """

    owned: Callable[[str], set[MessageQueue]]
    release: Callable[[MessageQueue], Awaitable[bool]]
    acquire: Callable[[MessageQueue], Awaitable[bool]]
    changed: Callable[[str, list[MessageQueue], list[MessageQueue]], Awaitable[None]]


class Rebalancer:
    """Runs rebalance rounds for one consumer."""

    def __init__(
        self,
        *,
        client: ConsumerClient,
        group: str,
        model: MessageModel,
        strategy: AllocateStrategy,
        topics: Callable[[], Sequence[str]],
        owner: QueueOwner,
        listener: RebalanceListener | None = None,
        assignment: AssignmentSource | None = None,
        pop_owner: QueueOwner | None = None,
    ) -> None:
        self._client = client
        self._group = group
        self._model = model
        self._strategy = strategy
        self._topics = topics
        self._owner = owner
        self._listener = listener
        self._assignment = assignment
        self._pop_owner = pop_owner
        if (assignment is None) != (pop_owner is None):
            raise ValueError("a broker-side assignment needs hooks for POP queues, and only it does")
        self._wake = asyncio.Event()
        self._round = asyncio.Lock()
        self._stopped = False
        self.rounds = 0
        #: Whether the last round got (and gave up) every queue it should have.
        self.balanced = True

    def request(self) -> None:
        """Ask for a round as soon as possible (a broker's nudge, a new subscription, a dropped queue)."""
        self._wake.set()

    def stop(self) -> None:
        """End :meth:`run` after the round under way (if any)."""
        self._stopped = True
        self._wake.set()

    async def run(self, stop: asyncio.Event, interval_ms: float) -> None:
        """Rounds until ``stop`` is set (call :meth:`stop` too, so the wait ends at once): at once, then
        every ``interval_ms`` or when :meth:`request`-ed -- or after :data:`UNBALANCED_RETRY_MS` when the
        last round could not take every queue it was given (a lock still held by the previous owner)."""
        self._wake.set()
        while not stop.is_set() and not self._stopped:
            wait_ms = interval_ms if self.balanced else min(interval_ms, UNBALANCED_RETRY_MS)
            try:
                async with asyncio.timeout(wait_ms / 1000):
                    await self._wake.wait()
            except TimeoutError:
                pass
            if stop.is_set() or self._stopped:
                return
            self._wake.clear()
            try:
                await self.rebalance()
            except Exception:
                logger.exception("rebalance of group %s failed", self._group)

    async def rebalance(self) -> None:
        """One round over every subscribed topic."""
        async with self._round:
            self.rounds += 1
            self.balanced = True
            for topic in list(self._topics()):
                try:
                    await self._rebalance_topic(topic)
                except (ConsumerError, RemotingError) as exc:
                    logger.warning("group %s: rebalancing topic %s failed: %s", self._group, topic, exc)

    async def release_all(self, topic: str) -> None:
        """Give up every queue of ``topic`` (it was unsubscribed)."""
        async with self._round:
            await self._apply(self._owner, topic, [], [])
            if self._pop_owner is not None:
                await self._apply(self._pop_owner, topic, [], [])

    async def _rebalance_topic(self, topic: str) -> None:
        queues = await self._client.queues_of(topic)
        if queues is None:
            if not is_retry_topic(topic):
                logger.warning("group %s: topic %s has no route (yet); nothing to read", self._group, topic)
            return
        if self._model == MessageModel.BROADCASTING:
            await self._apply(self._owner, topic, queues, queues)
            return
        if self._assignment is not None and self._pop_owner is not None:
            assigned = await self._assignment(topic)
            if assigned is None:
                self.balanced = False
                return
            pull = [a.message_queue for a in assigned if a.message_queue and a.mode != MessageRequestMode.POP]
            pop = [a.message_queue for a in assigned if a.message_queue and a.mode == MessageRequestMode.POP]
            await self._apply(self._owner, topic, queues, pull)
            await self._apply(self._pop_owner, topic, queues, pop)
            return
        mine = await self._allocate(topic, queues)
        if mine is not None:
            await self._apply(self._owner, topic, queues, mine)

    async def _allocate(self, topic: str, queues: list[MessageQueue]) -> list[MessageQueue] | None:
        addr = self._client.routes.any_broker_of(topic)
        if addr is None:
            logger.warning("group %s: no broker known for topic %s", self._group, topic)
            return None
        members = sorted(await self._client.api.consumer_ids(addr, self._group))
        if not members:
            logger.warning("group %s: broker %s lists no member", self._group, addr)
            return None
        if not queues:
            return []
        try:
            chosen = self._strategy(self._group, self._client.client_id, sorted_queues(queues), members)
        except Exception:
            logger.exception("group %s: the allocation strategy failed for topic %s", self._group, topic)
            return None
        return sorted_queues(set(chosen))

    async def _apply(
        self, owner: QueueOwner, topic: str, all_queues: list[MessageQueue], mine: list[MessageQueue]
    ) -> None:
        wanted = set(mine)
        current = owner.owned(topic)
        changed = False
        for queue in sorted_queues(current - wanted):
            if await owner.release(queue):
                changed = True
                logger.info("group %s: released %s", self._group, queue)
            else:
                self.balanced = False
        for queue in sorted_queues(wanted - current):
            if await owner.acquire(queue):
                changed = True
                logger.info("group %s: now reading %s", self._group, queue)
            else:
                self.balanced = False
        if changed:
            owned = sorted_queues(owner.owned(topic))
            await owner.changed(topic, all_queues, owned)
            if self._listener is not None:
                try:
                    self._listener(topic, all_queues, owned)
                except Exception:
                    logger.exception("the rebalance listener failed")
