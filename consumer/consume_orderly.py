"""Orderly consumption: the messages of one queue are handled one batch at a time, in offset order.

Order across the group needs more than one task per queue: in clustering mode a queue must be read by one
member at a time even while the group rebalances, so a member only consumes a queue whose lock it holds on
the broker (LOCK_BATCH_MQ, renewed every 20 s and treated as lost after 30 s without renewal). A failing
batch is not sent back -- that would let later messages overtake it -- but handed in again after a pause;
only past ``max_reconsume_times`` (unlimited by default) does a message go to the dead-letter queue.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence

from consumer.config import ConsumerConfig
from consumer.consume_concurrently import SendBack
from consumer.listener import ConsumeOrderlyContext, ConsumeStatus, OrderlyHandler
from consumer.offset_store import OffsetStore
from consumer.process_queue import ProcessQueue
from consumer.stats import ConsumerStats
from consumer.subscription import restore_retry_topic
from rocketmq_wire.bodies.heartbeat import MessageModel
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.message import MessageExt

logger = logging.getLogger("consumer.orderly")

#: ``(queue) -> whether this consumer now holds its lock`` (and marks the process queue).
LockOne = Callable[[MessageQueue], Awaitable[bool]]

#: Delay before trying again to lock a queue whose lock is not held (Java: 100 ms, then 10 ms).
_RELOCK_DELAY_S = 0.1
#: Delivering the dead-letter way: a negative delay level.
_TO_DEAD_LETTER = -1


class OrderlyConsumeService:
    """One task per queue with messages, started when messages arrive and ending when none are left."""

    def __init__(
        self,
        *,
        group: str,
        model: MessageModel,
        handler: OrderlyHandler,
        config: ConsumerConfig,
        offsets: OffsetStore,
        send_back: SendBack,
        lock_one: LockOne,
        stats: ConsumerStats | None = None,
    ) -> None:
        self._group = group
        self._model = model
        self._handler = handler
        self._config = config
        self._offsets = offsets
        self._send_back = send_back
        self._lock_one = lock_one
        self._stats = stats or ConsumerStats()
        self._running: dict[MessageQueue, asyncio.Task[None]] = {}
        self._busy = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._closing = False
        self._max_reconsume = config.orderly_max_reconsume_times()

    def start(self) -> None:
        """Nothing runs until messages arrive."""

    def submit(
        self, messages: Sequence[MessageExt], pq: ProcessQueue, queue: MessageQueue, dispatch: bool
    ) -> None:
        """Messages were put in ``pq``; start the queue's task if ``pq.put`` said none is running."""
        if dispatch and not self._closing and queue not in self._running:
            task = asyncio.get_running_loop().create_task(
                self._run(queue, pq), name=f"orderly-{queue.queue_id}"
            )
            self._running[queue] = task

    async def shutdown(self, await_ms: float) -> None:
        """Let batches under way finish (at most ``await_ms``), then stop every queue's task."""
        self._closing = True
        try:
            async with asyncio.timeout(await_ms / 1000):
                await self._idle.wait()
        except TimeoutError:
            logger.warning("group %s: orderly handlers still running at shutdown", self._group)
        tasks = list(self._running.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _needs_lock(self, pq: ProcessQueue) -> bool:
        return self._model == MessageModel.CLUSTERING and (
            not pq.locked or pq.lock_expired(self._config.lock_max_live_ms)
        )

    async def _run(self, queue: MessageQueue, pq: ProcessQueue) -> None:
        try:
            while not self._closing and not pq.dropped:
                if self._needs_lock(pq):
                    if not await self._lock_one(queue):
                        await asyncio.sleep(_RELOCK_DELAY_S)
                    continue
                messages = pq.take(self._config.consume_batch_max_size)
                if not messages:
                    return
                await self._consume(queue, pq, messages)
        finally:
            if self._running.get(queue) is asyncio.current_task():
                del self._running[queue]
            if pq.dropped or self._closing:
                pq.consuming = False

    async def _consume(self, queue: MessageQueue, pq: ProcessQueue, messages: list[MessageExt]) -> None:
        for message in messages:
            restore_retry_topic(message, self._group)
        context = ConsumeOrderlyContext(message_queue=queue)
        async with pq.consume_lock:
            if pq.dropped:
                return
            self._busy += 1
            self._idle.clear()
            began = time.monotonic()
            try:
                status = await self._call(queue, messages, context)
            finally:
                self._busy -= 1
                if self._busy == 0:
                    self._idle.set()
        done = len(messages) if status.succeeded else 0
        self._stats.consumed(queue.topic or "", (time.monotonic() - began) * 1000, done, len(messages) - done)
        if status.succeeded:
            offset = pq.commit()
        elif await self._suspend_again(queue, messages):
            pq.consume_again(messages)
            pause = context.suspend_current_queue_ms
            if pause < 0:
                pause = self._config.suspend_current_queue_ms
            await asyncio.sleep(max(10.0, pause) / 1000)
            return
        else:
            offset = pq.commit()
        if offset >= 0 and not pq.dropped:
            self._offsets.update(queue, offset, increase_only=False)

    async def _call(
        self, queue: MessageQueue, messages: list[MessageExt], context: ConsumeOrderlyContext
    ) -> ConsumeStatus:
        try:
            status = await self._handler(messages, context)
        except Exception:
            logger.exception("group %s: the orderly handler failed on %s", self._group, queue)
            return ConsumeStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        if status is None:
            logger.warning(
                "group %s: the orderly handler returned nothing; suspending %s", self._group, queue
            )
            return ConsumeStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        return status

    async def _suspend_again(self, queue: MessageQueue, messages: list[MessageExt]) -> bool:
        """Count one more failure on each message; those past the limit go to the dead-letter queue. Returns
        whether the batch must be handed in again (some message is still below the limit, or could not be
        moved)."""
        again = False
        for message in messages:
            if message.reconsume_times >= self._max_reconsume:
                if not await self._send_back(message, queue, _TO_DEAD_LETTER):
                    again = True
                    message.reconsume_times += 1
            else:
                again = True
                message.reconsume_times += 1
        return again
