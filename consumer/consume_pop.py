"""A push consumer's POP queues: popping them and handing what comes to the handler (Java's
``DefaultMQPushConsumerImpl.popMessage`` and ``ConsumeMessagePopConcurrentlyService``).

A broker assigns POP queues to a member when the group's consume mode says POP (see :mod:`.rebalance`). For
each, a :class:`PopReader` long-polls POP_MESSAGE (15 s, up to ``pop_batch_nums`` messages hidden for
``pop_invisible_time_ms``) and passes the messages to a :class:`PopConsumeService`, while no more than
``pop_threshold_for_queue`` of the queue's messages wait for their ack. The service calls the handler and
then, per message, acknowledges it (success) or hides it for the next POP delay level (10 s, 30 s, 1 min ...
2 h): the broker then hands it out again, to any member, with its reconsume times one higher. There are no
offsets to commit: the broker keeps the group's place.

As in Java, a batch whose invisible time ran out before (or while) the handler ran is left alone: the broker
is already handing it out again. A message failed ``max_reconsume_times`` times (16 by default) is no longer
delayed but acknowledged -- once it is older than twice the longest delay -- and so dropped; Java's push
consumer does that too, while its dead-letter move is the 5.x proxy's (see :class:`consumer.SimpleConsumer`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Sequence

from consumer.config import ConsumerConfig
from consumer.errors import ConsumerError
from consumer.listener import ConcurrentHandler, ConsumeConcurrentlyContext, ConsumeStatus
from consumer.pop_requests import receipt_handle
from consumer.stats import ConsumerStats
from consumer.subscription import restore_retry_topic
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.message import MessageExt
from rocketmq_wire.pop_extra import ExtraInfo
from rocketmq_wire.transport import RemotingError

logger = logging.getLogger("consumer.pop")

#: Java's ``popDelayLevel`` (seconds): how long a failed delivery stays hidden, by times already retried.
POP_DELAY_LEVELS_S = (10, 30, 60, 120, 180, 240, 300, 360, 420, 480, 540, 600, 1200, 1800, 3600, 7200)
#: How long a pop waits on a broker with nothing to give (Java's ``BROKER_SUSPEND_MAX_TIME_MILLIS``).
POP_POLL_MS = 15_000
#: Pauses: too many messages of the queue waiting for their ack; the broker refused or failed.
FLOW_CONTROL_PAUSE_S = 0.05
FAILURE_PAUSE_S = 3.0

#: ``(spec without the poll's own fields) -> PopResult``: one POP_MESSAGE to the queue's broker master.
Pop = Callable[[MessageQueue, int, int], Awaitable[list[MessageExt]]]
#: ``(message, invisible ms) -> None``: CHANGE_MESSAGE_INVISIBLETIME.
Hide = Callable[[MessageExt, int], Awaitable[None]]


@dataclasses.dataclass(slots=True)
class PopProcessQueue:
    """One POP queue's state: dropped once the broker stops assigning it; how many messages await an ack."""

    dropped: bool = False
    waiting_ack: int = 0
    last_pop_ms: int = 0

    def drop(self) -> None:
        self.dropped = True


def delay_seconds(level: int) -> int:
    """The hiding time for a POP delay level (past the table: its last entry)."""
    return POP_DELAY_LEVELS_S[min(max(level, 0), len(POP_DELAY_LEVELS_S) - 1)]


def expired(handle: ExtraInfo, now_ms: int) -> bool:
    """Whether the broker is already handing the message out again."""
    return (
        handle.pop_time <= 0
        or handle.invisible_time <= 0
        or now_ms - handle.pop_time >= handle.invisible_time
    )


class PopReader:
    """Pops one assigned queue until it is dropped."""

    def __init__(
        self,
        queue: MessageQueue,
        pq: PopProcessQueue,
        *,
        config: ConsumerConfig,
        pop: Pop,
        submit: Callable[[list[MessageExt], PopProcessQueue, MessageQueue], None],
        paused: Callable[[], bool],
    ) -> None:
        self.queue = queue
        self.pq = pq
        self._config = config
        self._pop = pop
        self._submit = submit
        self._paused = paused
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"pop-{self.queue}")

    async def stop(self) -> None:
        self.pq.drop()
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        config = self._config
        while not self.pq.dropped:
            if self._paused() or self.pq.waiting_ack > config.pop_threshold_for_queue:
                await asyncio.sleep(FLOW_CONTROL_PAUSE_S)
                continue
            self.pq.last_pop_ms = time.time_ns() // 1_000_000
            try:
                messages = await self._pop(self.queue, config.pop_batch_nums, config.pop_invisible_time_ms)
            except (ConsumerError, RemotingError) as exc:
                logger.warning("popping %s failed: %s", self.queue, exc)
                await asyncio.sleep(FAILURE_PAUSE_S)
                continue
            if messages and not self.pq.dropped:
                self.pq.waiting_ack += len(messages)
                self._submit(messages, self.pq, self.queue)


class AckBatcher:
    """Acknowledgements of handled messages, sent in the background and merged while one is on its way.

    Java's push consumer sends one ACK_MESSAGE per message and does not wait for it. Here a worker hands
    the message over and goes on; whatever accumulates while a send is under way goes out next as one call
    of ``send`` (one BATCH_ACK_MESSAGE per broker and topic where the broker has it). A failed ack is
    logged: its message comes back when its invisible time is up, as any unacknowledged one.
    """

    def __init__(self, send: Callable[[list[MessageExt]], Awaitable[None]], group: str) -> None:
        self._send = send
        self._group = group
        self._pending: list[MessageExt] = []
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run(), name=f"pop-acks-{self._group}")

    def add(self, messages: Sequence[MessageExt]) -> None:
        self._pending.extend(messages)
        self._idle.clear()
        self._wake.set()

    async def stop(self) -> None:
        """Send what is pending, then end."""
        if self._task is None:
            return
        if self._pending:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(5):
                    await self._idle.wait()
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)

    async def _run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            batch, self._pending = self._pending, []
            if batch:
                try:
                    await self._send(batch)
                except (ConsumerError, RemotingError, ValueError) as exc:
                    logger.warning(
                        "group %s: acknowledging %d messages failed: %s", self._group, len(batch), exc
                    )
            if not self._pending:
                self._idle.set()


@dataclasses.dataclass(slots=True)
class _Request:
    messages: list[MessageExt]
    pq: PopProcessQueue
    queue: MessageQueue


class PopConsumeService:
    """``consume_workers`` tasks calling the handler with batches of ``consume_batch_max_size`` messages."""

    def __init__(
        self,
        *,
        group: str,
        handler: ConcurrentHandler,
        config: ConsumerConfig,
        ack: Callable[[list[MessageExt]], Awaitable[None]],
        hide: Hide,
        stats: ConsumerStats,
    ) -> None:
        self._group = group
        self._handler = handler
        self._config = config
        self._acks = AckBatcher(ack, group)
        self._hide = hide
        self._stats = stats
        self._requests: asyncio.Queue[_Request] = asyncio.Queue()
        self._workers: list[asyncio.Task[None]] = []
        self._closing = False

    @property
    def max_reconsume_times(self) -> int:
        """Java's default for a push consumer is 16."""
        value = self._config.max_reconsume_times
        return 16 if value is None or value == -1 else value

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._acks.start()
        self._workers = [
            loop.create_task(self._work(), name=f"pop-consume-{self._group}-{i}")
            for i in range(self._config.consume_workers)
        ]

    def submit(self, messages: Sequence[MessageExt], pq: PopProcessQueue, queue: MessageQueue) -> None:
        if self._closing:
            return
        size = self._config.consume_batch_max_size
        for start in range(0, len(messages), size):
            self._requests.put_nowait(_Request(list(messages[start : start + size]), pq, queue))

    async def shutdown(self) -> None:
        """Stop the workers; messages not handled reappear for the group when their invisible time is up."""
        self._closing = True
        for task in self._workers:
            task.cancel()
        await asyncio.gather(*self._workers, return_exceptions=True)
        await self._acks.stop()

    async def _work(self) -> None:
        while True:
            request = await self._requests.get()
            try:
                await self._consume(request)
            except Exception:
                logger.exception(
                    "group %s: consuming popped messages of %s failed", self._group, request.queue
                )

    async def _consume(self, request: _Request) -> None:
        messages, pq, queue = request.messages, request.pq, request.queue
        handle = receipt_handle(messages[0])
        if pq.dropped or expired(handle, time.time_ns() // 1_000_000):
            pq.waiting_ack -= len(messages)
            logger.info(
                "group %s: %d popped messages of %s expired unhandled", self._group, len(messages), queue
            )
            return
        for message in messages:
            restore_retry_topic(message, self._group)
        context = ConsumeConcurrentlyContext(message_queue=queue)
        began = time.monotonic()
        status: ConsumeStatus | None
        try:
            status = await self._handler(messages, context)
        except Exception:
            logger.exception(
                "group %s: the handler raised on %d messages of %s", self._group, len(messages), queue
            )
            status = None
        rt_ms = (time.monotonic() - began) * 1000
        topic = queue.topic or ""
        if pq.dropped or expired(handle, time.time_ns() // 1_000_000):
            pq.waiting_ack -= len(messages)
            self._stats.consume_time(topic, rt_ms)
            return
        if status is ConsumeStatus.CONSUME_SUCCESS:
            done = min(context.ack_index, len(messages) - 1) + 1
        else:
            done = 0
        self._stats.consumed(topic, rt_ms, done, len(messages) - done)
        if done:
            self._acks.add(messages[:done])
        for message in messages[done:]:
            await self._later(message, context.delay_level_when_next_consume)
        pq.waiting_ack -= len(messages)

    async def _later(self, message: MessageExt, delay_level: int) -> None:
        """Hide a failed message for its next delay; past the retry limit, drop it once it is old enough."""
        if message.reconsume_times >= self.max_reconsume_times:
            age_ms = time.time_ns() // 1_000_000 - message.born_timestamp
            longest_ms = POP_DELAY_LEVELS_S[-1] * 1000
            if age_ms > 2 * longest_ms:
                logger.warning(
                    "group %s: message %s failed %d times; acknowledged and dropped",
                    self._group,
                    message.msg_id,
                    message.reconsume_times,
                )
                self._acks.add([message])
                return
            level = next(
                (
                    i + 1
                    for i in reversed(range(len(POP_DELAY_LEVELS_S)))
                    if age_ms >= POP_DELAY_LEVELS_S[i] * 1000
                ),
                0,
            )
        else:
            level = delay_level if delay_level > 0 else message.reconsume_times
        await self._quietly(self._hide(message, delay_seconds(level) * 1000), "delaying", message)

    async def _quietly(self, call: Awaitable[None], what: str, message: MessageExt) -> None:
        """Change failures are logged, not raised: the message then reappears after its time."""
        try:
            await call
        except (ConsumerError, RemotingError, ValueError) as exc:
            logger.warning("group %s: %s message %s failed: %s", self._group, what, message.msg_id, exc)
