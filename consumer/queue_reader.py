"""Keeping one assigned queue pulled for a push consumer (Java's ``PullRequest`` and ``pullMessage``).

Each queue has its own task: long-poll the broker (it holds the pull up to 15 s when there is nothing new),
hand what arrives to the consume service, pull again. Before each pull it applies flow control -- at most
``pull_threshold_for_queue`` messages or ``pull_threshold_size_for_queue_mib`` of bodies held, and (for
concurrent consumption) a bounded offset span, so one slow message cannot let the window grow without
limit -- and waits for the handlers to make room rather than polling.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable

from consumer import commands
from consumer.config import ConsumerConfig
from consumer.errors import BrokerError, ConsumerError
from consumer.fetch import PullStatus
from consumer.offset_store import OffsetStore, ReadOffsetType
from consumer.process_queue import ProcessQueue
from consumer.puller import Puller
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.codes import ResponseCode
from rocketmq_wire.message import MessageExt, sysflag
from rocketmq_wire.topics import is_retry_topic
from rocketmq_wire.transport import RemotingError

logger = logging.getLogger("consumer.queue_reader")

#: Answers meaning the broker has not (yet) heard this subscription, or its SQL92 filter, from a heartbeat.
_REANNOUNCE_CODES = frozenset(
    {
        ResponseCode.SUBSCRIPTION_NOT_EXIST,
        ResponseCode.SUBSCRIPTION_NOT_LATEST,
        ResponseCode.FILTER_DATA_NOT_EXIST,
        ResponseCode.FILTER_DATA_NOT_LATEST,
    }
)
#: Push consumer defaults (Java's ``BROKER_SUSPEND_MAX_TIME_MILLIS`` and exception delay).
PUSH_BROKER_SUSPEND_MS = 15_000
PUSH_DELAY_WHEN_EXCEPTION_MS = 3_000
#: Waits of Java's pull service: cache full, broker flow control, consumer paused.
FLOW_CONTROL_DELAY_MS = 50
BROKER_FLOW_CONTROL_DELAY_MS = 20
PAUSED_DELAY_MS = 1_000
_MIB = 1024 * 1024


def _ignore_pull(queue: MessageQueue, rt_ms: float, messages: int) -> None:
    pass


class ReaderHooks:
    """What a reader needs from its consumer; plain callables so the reader stays independent of it."""

    def __init__(
        self,
        *,
        spec_for: Callable[[MessageQueue], commands.PullSpec | None],
        tags_for: Callable[[MessageQueue], frozenset[str] | None],
        deliver: Callable[[list[MessageExt], ProcessQueue, MessageQueue, bool], None],
        offset_moved: Callable[[MessageQueue, int], Awaitable[None]],
        paused: Callable[[], bool],
        unknown_to_broker: Callable[[], None] = lambda: None,
        pulled: Callable[[MessageQueue, float, int], None] = _ignore_pull,
    ) -> None:
        self.spec_for = spec_for
        self.tags_for = tags_for
        self.deliver = deliver
        self.offset_moved = offset_moved
        self.paused = paused
        #: The broker no longer knows this consumer's subscription (it restarted): heartbeat now rather
        #: than at the next 30 s round.
        self.unknown_to_broker = unknown_to_broker
        #: A pull found messages: ``(queue, round trip in ms, messages kept)``, for the consumer's figures.
        self.pulled = pulled


class QueueReader:
    """The pulling side of one queue; :meth:`start` runs it until the queue is dropped or :meth:`stop`."""

    def __init__(
        self,
        queue: MessageQueue,
        pq: ProcessQueue,
        next_offset: int,
        *,
        config: ConsumerConfig,
        puller: Puller,
        offsets: OffsetStore,
        hooks: ReaderHooks,
        orderly: bool,
        commit_offsets: bool,
    ) -> None:
        self.queue = queue
        self.pq = pq
        self.next_offset = next_offset
        #: The queue's max offset in the broker's last pull answer (None before one), for the lag figure.
        self.broker_max_offset: int | None = None
        self._config = config
        self._puller = puller
        self._offsets = offsets
        self._hooks = hooks
        self._orderly = orderly
        self._commit_offsets = commit_offsets
        self._task: asyncio.Task[None] | None = None
        self._suspend_ms = config.broker_suspend_max_ms or PUSH_BROKER_SUSPEND_MS
        self._error_delay_ms = (
            PUSH_DELAY_WHEN_EXCEPTION_MS
            if config.pull_delay_when_exception_ms is None
            else config.pull_delay_when_exception_ms
        )

    def start(self) -> None:
        if self._task is None:
            name = f"pull-{self.queue.topic}-{self.queue.broker_name}-{self.queue.queue_id}"
            self._task = asyncio.get_running_loop().create_task(self._run(), name=name)

    async def stop(self) -> None:
        """Stop pulling (a pull under way is abandoned; its answer would be ignored anyway)."""
        task, self._task = self._task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _run(self) -> None:
        while not self.pq.dropped:
            try:
                delay_ms = await self._once()
            except Exception:
                logger.exception("pulling %s failed", self.queue)
                delay_ms = self._error_delay_ms
            if delay_ms > 0 and not self.pq.dropped:
                await asyncio.sleep(delay_ms / 1000)

    def _flow_controlled(self) -> bool:
        pq, config = self.pq, self._config
        if pq.count > config.pull_threshold_for_queue:
            return True
        if pq.size_bytes / _MIB > config.pull_threshold_size_for_queue_mib:
            return True
        return not self._orderly and pq.max_span > config.consume_max_span

    async def _once(self) -> float:
        """One step; returns how long to wait before the next (ms)."""
        pq, queue = self.pq, self.queue
        if self._hooks.paused():
            return PAUSED_DELAY_MS
        if self._flow_controlled():
            await pq.wait_for_room(FLOW_CONTROL_DELAY_MS / 1000)
            return 0
        spec = self._hooks.spec_for(queue)
        if spec is None:
            logger.warning("no subscription for %s; pulling later", queue)
            return self._error_delay_ms
        if self._commit_offsets:
            spec = _with_commit(spec, await self._offsets.read(queue, ReadOffsetType.MEMORY))
        began_ms = pq.last_pull_ms = asyncio.get_running_loop().time() * 1000
        try:
            result = await self._puller.pull(
                queue,
                self.next_offset,
                spec,
                self._hooks.tags_for(queue),
                self._config.consumer_timeout_when_suspend_ms,
            )
        except BrokerError as exc:
            if not is_retry_topic(queue.topic or ""):
                logger.warning("pull of %s refused: %s", queue, exc)
            if exc.code == ResponseCode.FLOW_CONTROL:
                return BROKER_FLOW_CONTROL_DELAY_MS
            if exc.code in _REANNOUNCE_CODES:
                self._hooks.unknown_to_broker()
            return self._error_delay_ms
        except (ConsumerError, RemotingError) as exc:
            if not pq.dropped:
                logger.warning("pull of %s failed: %s", queue, exc)
            return self._error_delay_ms
        if pq.dropped:
            return 0
        if result.status is PullStatus.FOUND:
            self.broker_max_offset = result.max_offset
            self.next_offset = result.next_begin_offset
            rt_ms = asyncio.get_running_loop().time() * 1000 - began_ms
            self._hooks.pulled(queue, rt_ms, len(result.messages))
            if result.messages:
                dispatch = pq.put(result.messages)
                self._hooks.deliver(result.messages, pq, queue, dispatch)
                return self._config.pull_interval_ms
            return 0
        if result.status in (PullStatus.NO_NEW_MSG, PullStatus.NO_MATCHED_MSG):
            self.broker_max_offset = result.max_offset
            self.next_offset = result.next_begin_offset
            if pq.count == 0:
                # nothing held: the new position is as good as consumed (a tag filter skipped it all)
                self._offsets.update(queue, self.next_offset, increase_only=True)
            return 0
        logger.warning(
            "offset %d of %s is out of range; the broker says to continue at %d",
            self.next_offset,
            queue,
            result.next_begin_offset,
        )
        self.next_offset = result.next_begin_offset
        pq.drop()
        await self._hooks.offset_moved(queue, result.next_begin_offset)
        return 0


def _with_commit(spec: commands.PullSpec, committed: int) -> commands.PullSpec:
    """Clustering pulls carry the offset held in memory (-1 when none), and ask the broker to commit it
    when there is a positive one: a free commit on every pull."""
    flag = spec.sys_flag | sysflag.PULL_COMMIT_OFFSET if committed > 0 else spec.sys_flag
    return dataclasses.replace(spec, commit_offset=committed, sys_flag=flag)
