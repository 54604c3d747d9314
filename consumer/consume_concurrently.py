"""Concurrent consumption: pulled messages go to a bounded set of workers that call the handler.

Messages of one queue may be handled in any order and at the same time; the committed offset still only
moves past a message once it is done, because :class:`ProcessQueue` tracks the smallest offset in flight.
A failed message is handed back to the broker (CONSUMER_SEND_MSG_BACK), which redelivers it through the
group's retry topic after a delay, or to the dead-letter queue once it has failed ``max_reconsume_times``;
only then does the original count as done. If the broker cannot take it back, it is consumed again here
a little later, as Java does. In broadcasting mode a failed message is only logged: there is no group-wide
retry topic to put it in.

A handler that hangs would hold its queue's committed offset back for ever, so every
``expire_check_ms`` the first message of each queue is checked: once its handler has run longer than
``consume_timeout_minutes`` it is sent back (delay level 3, as Java's ``cleanExpiredMsg``) and leaves the
window. The handler is not interrupted -- Python cannot stop it safely any more than Java can -- but its
verdict on that message is ignored when it comes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence

from consumer.config import ConsumerConfig
from consumer.listener import ConcurrentHandler, ConsumeConcurrentlyContext, ConsumeStatus
from consumer.offset_store import OffsetStore
from consumer.process_queue import ProcessQueue
from consumer.stats import ConsumerStats
from consumer.subscription import restore_retry_topic
from rocketmq_wire.bodies.heartbeat import MessageModel
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.message import MessageExt

logger = logging.getLogger("consumer.concurrently")

#: ``(message, its queue, delay level) -> whether the broker took it back``.
SendBack = Callable[[MessageExt, MessageQueue, int], Awaitable[bool]]
#: The queues held now and their windows.
HeldQueues = Callable[[], Iterable[tuple[MessageQueue, ProcessQueue]]]

#: The delay level an expired message is sent back with (10 s), as in Java.
EXPIRED_DELAY_LEVEL = 3
#: At most this many expired messages of one queue are sent back per check, as in Java.
EXPIRED_PER_QUEUE = 16


def _no_queues() -> Iterable[tuple[MessageQueue, ProcessQueue]]:
    return ()


@dataclasses.dataclass(slots=True)
class _Request:
    messages: list[MessageExt]
    pq: ProcessQueue
    queue: MessageQueue


class ConcurrentConsumeService:
    """``consume_workers`` tasks taking batches of at most ``consume_batch_max_size`` messages."""

    def __init__(
        self,
        *,
        group: str,
        model: MessageModel,
        handler: ConcurrentHandler,
        config: ConsumerConfig,
        offsets: OffsetStore,
        send_back: SendBack,
        stats: ConsumerStats | None = None,
        held_queues: HeldQueues = _no_queues,
    ) -> None:
        self._group = group
        self._model = model
        self._handler = handler
        self._config = config
        self._offsets = offsets
        self._send_back = send_back
        self._stats = stats or ConsumerStats()
        self._held_queues = held_queues
        self._requests: asyncio.Queue[_Request] = asyncio.Queue()
        self._workers: list[asyncio.Task[None]] = []
        self._expiry: asyncio.Task[None] | None = None
        self._later: set[asyncio.Task[None]] = set()
        self._busy = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._closing = False

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._workers = [
            loop.create_task(self._work(), name=f"consume-{self._group}-{i}")
            for i in range(self._config.consume_workers)
        ]
        self._expiry = loop.create_task(self._check_expired_regularly(), name=f"expire-{self._group}")

    @property
    def backlog(self) -> int:
        """Batches waiting for a worker."""
        return self._requests.qsize()

    def submit(self, messages: Sequence[MessageExt], pq: ProcessQueue, queue: MessageQueue) -> None:
        """Queue ``messages`` (already in ``pq``) for the workers, in batches."""
        if self._closing:
            return
        size = self._config.consume_batch_max_size
        for start in range(0, len(messages), size):
            self._requests.put_nowait(_Request(list(messages[start : start + size]), pq, queue))

    async def shutdown(self, await_ms: float) -> None:
        """Stop taking batches and wait (at most ``await_ms``) for the handler calls under way, so their
        offsets can be committed; batches not started stay uncommitted and are read again by whoever owns
        their queue next."""
        self._closing = True
        if self._expiry is not None:
            self._expiry.cancel()
        for task in self._later:
            task.cancel()
        while not self._requests.empty():
            self._requests.get_nowait()
        try:
            async with asyncio.timeout(await_ms / 1000):
                await self._idle.wait()
        except TimeoutError:
            logger.warning("group %s: %d handler calls still running at shutdown", self._group, self._busy)
        for task in self._workers:
            task.cancel()
        expiry = [] if self._expiry is None else [self._expiry]
        await asyncio.gather(*self._workers, *self._later, *expiry, return_exceptions=True)

    async def _work(self) -> None:
        while True:
            request = await self._requests.get()
            if self._closing:
                continue
            self._busy += 1
            self._idle.clear()
            try:
                await self._consume(request)
            except Exception:
                logger.exception("group %s: consuming a batch of %s failed", self._group, request.queue)
            finally:
                self._busy -= 1
                if self._busy == 0:
                    self._idle.set()

    async def _consume(self, request: _Request) -> None:
        pq, queue, messages = request.pq, request.queue, request.messages
        if pq.dropped:
            return
        topic = queue.topic or ""
        for message in messages:
            restore_retry_topic(message, self._group)
        context = ConsumeConcurrentlyContext(message_queue=queue)
        pq.mark_started(messages)
        began = time.monotonic()
        try:
            status = await self._handler(messages, context)
        except Exception:
            logger.exception(
                "group %s: the handler failed on %d messages of %s", self._group, len(messages), queue
            )
            status = ConsumeStatus.RECONSUME_LATER
        spent_ms = (time.monotonic() - began) * 1000
        if status is None:
            logger.warning("group %s: the handler returned nothing; consuming again later", self._group)
            status = ConsumeStatus.RECONSUME_LATER
        if pq.dropped:
            self._stats.consume_time(topic, spent_ms)
            logger.info("group %s: %s was released while its messages were being handled", self._group, queue)
            return
        await self._finish(request, status, context, spent_ms)

    async def _finish(
        self,
        request: _Request,
        status: ConsumeStatus,
        context: ConsumeConcurrentlyContext,
        spent_ms: float,
    ) -> None:
        messages, pq, queue = request.messages, request.pq, request.queue
        ack = min(context.ack_index, len(messages) - 1) if status.succeeded else -1
        succeeded, failed = messages[: ack + 1], messages[ack + 1 :]
        expired = pq.forget_expired(messages)
        if expired:
            logger.info(
                "group %s: ignoring the late verdict on offsets %s of %s (gone after the consume timeout)",
                self._group,
                sorted(expired),
                queue,
            )
            succeeded = [m for m in succeeded if m.queue_offset not in expired]
            failed = [m for m in failed if m.queue_offset not in expired]
        self._stats.consumed(queue.topic or "", spent_ms, len(succeeded), len(failed))
        kept: list[MessageExt] = []
        if failed and self._model == MessageModel.BROADCASTING:
            for message in failed:
                logger.warning(
                    "group %s (broadcasting): message %s failed and is dropped",
                    self._group,
                    message.client_msg_id,
                )
        elif failed:
            for message in failed:
                if not await self._send_back(message, queue, context.delay_level_when_next_consume):
                    message.reconsume_times += 1
                    kept.append(message)
        done = [m for m in messages if not any(m is k for k in kept)]
        offset = pq.remove(done)
        if offset >= 0 and not pq.dropped:
            self._offsets.update(queue, offset, increase_only=True)
        if kept:
            self._consume_later(kept, pq, queue)

    def _consume_later(self, messages: list[MessageExt], pq: ProcessQueue, queue: MessageQueue) -> None:
        async def later() -> None:
            await asyncio.sleep(self._config.reconsume_later_delay_ms / 1000)
            self.submit(messages, pq, queue)

        task = asyncio.get_running_loop().create_task(later(), name=f"reconsume-{queue.queue_id}")
        self._later.add(task)
        task.add_done_callback(self._later.discard)

    # -- the consume timeout -------------------------------------------------------------------------------

    async def _check_expired_regularly(self) -> None:
        interval_s = self._config.expire_check_ms() / 1000
        while not self._closing:
            await asyncio.sleep(interval_s)
            try:
                await self.clean_expired()
            except Exception:
                logger.exception("group %s: checking for expired messages failed", self._group)

    async def clean_expired(self) -> int:
        """Send back (clustering) or drop (broadcasting) the messages whose handler has run past the consume
        timeout, from the head of each held queue; returns how many left their windows."""
        timeout_ms = self._config.consume_timeout_ms()
        cleaned = 0
        for queue, pq in list(self._held_queues()):
            for _ in range(EXPIRED_PER_QUEUE):
                if pq.dropped or self._closing:
                    break
                message = pq.expired_head(timeout_ms)
                if message is None:
                    break
                if not await self._give_up_on(message, queue):
                    break
                offset = pq.expire(message)
                if offset >= 0 and not pq.dropped:
                    self._offsets.update(queue, offset, increase_only=True)
                cleaned += 1
        return cleaned

    async def _give_up_on(self, message: MessageExt, queue: MessageQueue) -> bool:
        """Whether ``message`` may leave the window: it was sent back (clustering) or is dropped
        (broadcasting, where there is no retry topic to send it to)."""
        if self._model == MessageModel.BROADCASTING:
            logger.warning(
                "group %s (broadcasting): message %s of %s ran past the consume timeout and is dropped",
                self._group,
                message.client_msg_id,
                queue,
            )
            return True
        # a copy: the handler still running keeps seeing the message as it was given
        if not await self._send_back(dataclasses.replace(message), queue, EXPIRED_DELAY_LEVEL):
            logger.warning(
                "group %s: message %s of %s ran past the consume timeout but could not be sent back",
                self._group,
                message.client_msg_id,
                queue,
            )
            return False
        logger.info(
            "group %s: message %s (offset %d of %s) ran past the consume timeout and was sent back",
            self._group,
            message.client_msg_id,
            message.queue_offset,
            queue,
        )
        return True
