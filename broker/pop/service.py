"""The broker's POP state machine: hand out messages under a checkpoint, take acks and changes of
invisible time, and revive what was not acknowledged in time into the group's POP retry topic.

Follows Apache's ``PopMessageProcessor`` (offsets per group and queue, the init mode, a store offset that
is out of range corrected), ``AckMessageProcessor`` (an ack of a checkpoint that is gone is taken and
changes nothing), ``ChangeInvisibleTimeProcessor`` (a new checkpoint starting at the message's offset) and
``PopReviveService.reviveRetry`` (the message stored again in ``%RETRY%group_topic``, queue 0, with its
reconsume times one higher and ``1ST_POP_TIME`` kept). Reaching the dead-letter topic is the consumer's
move, as with Apache (CONSUMER_SEND_MSG_BACK past its delivery limit).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Collection, Iterable
from pathlib import Path

from broker.clock import Clock
from broker.filtering import SubscriptionFilter
from broker.histogram import HistogramTable
from broker.message_service import MessageService, stored_properties
from broker.pop.checkpoints import Checkpoint, CheckpointTable, QueuePopState
from broker.pop.group_save import GroupSave
from broker.store import ConsumerOffsetStore, FlushDiskType, GetMessageStatus, MessageStore
from broker.store.message_store import total_physical_memory
from broker.topic_config_manager import TopicConfigManager
from rocketmq_wire.errors import CodecError
from rocketmq_wire.message import const
from rocketmq_wire.message.stored import MessageExt, decode_message
from rocketmq_wire.perm import PERM_READ, PERM_WRITE
from rocketmq_wire.pop_extra import ORDER_REVIVE_QUEUE, pop_retry_topic
from rocketmq_wire.topics import RETRY_GROUP_TOPIC_PREFIX

log = logging.getLogger("broker.pop")

#: Apache's buckets for ``rocketmq_pop_buffer_scan_time_consume`` (ms).
SCAN_TIME_BOUNDS = (1, 10, 100, 1000, 2000, 3000)
#: Apache's ``PopAckConstants.retryQueueNum``: a POP retry topic has one queue.
RETRY_QUEUE_NUMS = 1
#: Apache's ``maxPopPollingSize``: how many pops may wait for messages at once.
MAX_POLLING = 100_000
_BAD_OFFSET = (
    GetMessageStatus.OFFSET_TOO_SMALL,
    GetMessageStatus.OFFSET_OVERFLOW_BADLY,
    GetMessageStatus.OFFSET_FOUND_NULL,
)
_SKIPPED = (
    GetMessageStatus.NO_MATCHED_MESSAGE,
    GetMessageStatus.OFFSET_FOUND_NULL,
    GetMessageStatus.MESSAGE_WAS_REMOVING,
    GetMessageStatus.NO_MATCHED_LOGIC_QUEUE,
)


@dataclasses.dataclass(slots=True)
class QueuePop:
    """What one queue gave to one pop."""

    topic: str
    queue_id: int
    start_offset: int
    messages: list[bytes]
    offsets: list[int]
    #: Orderly pops: (offset, earlier deliveries) of the offsets handed out before, and the least count.
    order_counts: list[tuple[int, int]] = dataclasses.field(default_factory=list)
    min_count: int = 0


class PopService:
    """Checkpoints, acks, revive and the pops waiting for messages."""

    def __init__(
        self,
        *,
        config_dir: Path,
        clock: Clock,
        store: MessageStore,
        messages: MessageService,
        offsets: ConsumerOffsetStore,
        topics: TopicConfigManager,
        store_host: str,
    ) -> None:
        self._clock = clock
        self._store = store
        self._messages = messages
        self._offsets = offsets
        self._topics = topics
        self._store_host = store_host
        #: Under SYNC_FLUSH each version of the table is on disk before a request is answered; under
        #: ASYNC_FLUSH in the page cache (a killed broker keeps it), as that mode's messages are.
        self._table = CheckpointTable(
            config_dir, sync=store.config.flush_disk_type is FlushDiskType.SYNC_FLUSH
        )
        #: Something changed since the table was last written (an empty pop writes nothing).
        self._dirty = False
        self._group_save = GroupSave(
            self._snapshot, lambda data: self._table.write(data), in_thread=self._table.sync
        )
        self._waiters: dict[str, list[asyncio.Future[None]]] = {}
        self._waiting = 0
        #: Revived messages go through the same lock as pops, so a revive never races a pop's bookkeeping.
        self._revive_lock = asyncio.Lock()
        #: What the metrics count (Apache's ``PopMetricsManager``), where this design has Apache's moves.
        #: The checkpoint table stands in for Apache's revive topic: a checkpoint or an ack recorded in it
        #: counts as a CK or ACK "put" there, per (group, topic, kind, put status).
        self.revive_in: dict[tuple[str, str, str, str], int] = {}
        #: A due checkpoint taken up by the revive scan, per (group, topic, revive queue, kind).
        self.revive_out: dict[tuple[str, str, int, str], int] = {}
        #: Messages stored again into a POP retry topic, per (group, topic, put status).
        self.revive_retry: dict[tuple[str, str, str], int] = {}
        #: How long each revive scan over the checkpoint table took (ms), Apache's buffer scan time.
        self.scan_time: HistogramTable[tuple[()]] = HistogramTable(SCAN_TIME_BOUNDS)
        messages.on_arrival(self._arrived)

    def _put(self, group: str, topic: str, kind: str) -> None:
        key = (group, topic, kind, "PUT_OK")
        self.revive_in[key] = self.revive_in.get(key, 0) + 1

    def revive_behind(self, queue_ids: Collection[int]) -> dict[int, tuple[int, int]]:
        """Per revive queue: checkpoints past their invisible time and not yet revived, and how long (ms)
        the oldest of them has been due (Apache's revive lag and latency per revive queue)."""
        now = self._clock.now_ms()
        behind = {queue_id: (0, 0) for queue_id in queue_ids}
        for state in list(self._table.queues.values()):
            for ck in list(state.checkpoints):
                if ck.visible_at > now or ck.done or ck.revive_qid not in behind:
                    continue
                count, latency = behind[ck.revive_qid]
                behind[ck.revive_qid] = (count + 1, max(latency, now - ck.visible_at))
        return behind

    def load(self) -> None:
        self._table.load()

    # -- popping ---------------------------------------------------------------------------------

    def _state(self, group: str, topic: str, queue_id: int, init_mode: int) -> QueuePopState:
        key = (group, topic, queue_id)
        state = self._table.queues.get(key)
        if state is None:
            committed = self._offsets.query_offset(group, topic, queue_id)
            if committed < 0:
                committed = self._init_offset(topic, queue_id, init_mode)
                self._offsets.commit_offset(group, topic, queue_id, committed)
            state = self._table.queues[key] = QueuePopState(next_offset=committed)
            self._dirty = True
        return state

    def _init_offset(self, topic: str, queue_id: int, init_mode: int) -> int:
        """Where a group that never popped a queue starts (Apache's ``getInitOffset``): MIN (0), and any
        retry topic, at the queue's first message. MAX at the first message too while the queue still
        starts at 0 and that message is within the memory share (``initPopOffsetByCheckMsgInMem``, on by
        default: a new topic's first messages are not skipped), else at the last message."""
        store = self._store
        if init_mode == 0 or topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            return store.get_min_offset(topic, queue_id)
        if store.get_min_offset(topic, queue_id) <= 0:
            first = store.get_commit_log_offset(topic, queue_id, 0)
            limit = total_physical_memory() * store.config.access_message_in_memory_max_ratio // 100
            if first is not None and store.max_physical_offset - first < limit:
                return 0
        return max(0, store.get_max_offset(topic, queue_id) - 1)

    def pop_queue(
        self,
        *,
        group: str,
        topic: str,
        queue_id: int,
        init_mode: int,
        max_count: int,
        store_filter: SubscriptionFilter,
        pop_time: int,
        invisible_time: int,
        order: bool,
        revive_qid: int,
    ) -> tuple[QueuePop | None, int]:
        """Up to ``max_count`` messages of one queue under a new checkpoint, and how many remain.

        An orderly pop skips a queue that still has messages in flight (one batch per queue at a time).
        The caller saves the table (:meth:`save`) before answering.
        """
        state = self._state(group, topic, queue_id, init_mode)
        offset = state.next_offset
        if order and any(not ck.done for ck in state.checkpoints):
            return None, max(0, self._store.get_max_offset(topic, queue_id) - offset)
        result = self._store.get_messages(
            topic, queue_id, offset, max_count, store_filter.codes, message_filter=store_filter.record_filter
        )
        if result.status in _BAD_OFFSET and result.next_begin_offset != offset:
            log.warning(
                "pop offset of %s on %s/%d corrected: %d -> %d",
                group,
                topic,
                queue_id,
                offset,
                result.next_begin_offset,
            )
            offset = state.next_offset = result.next_begin_offset
            result = self._store.get_messages(
                topic,
                queue_id,
                offset,
                max_count,
                store_filter.codes,
                message_filter=store_filter.record_filter,
            )
        rest = max(0, result.max_offset - result.next_begin_offset)
        before = state.next_offset
        popped: QueuePop | None = None
        if result.messages:
            state.checkpoints.append(
                Checkpoint(
                    start_offset=offset,
                    pop_time=pop_time,
                    invisible_time=invisible_time,
                    offsets=list(result.queue_offsets),
                    revive_qid=revive_qid,
                )
            )
            state.next_offset = result.next_begin_offset
            self._put(group, topic, "CK")
            popped = QueuePop(topic, queue_id, offset, list(result.messages), list(result.queue_offsets))
            if order:
                earlier = [(o, state.deliveries.get(o, 0)) for o in popped.offsets]
                popped.order_counts = [(o, n) for o, n in earlier if n > 0]
                popped.min_count = min(n for _, n in earlier)
                for o, n in earlier:
                    state.deliveries[o] = n + 1
        elif result.status in _SKIPPED and result.next_begin_offset > offset:
            state.next_offset = result.next_begin_offset  # filtered out: nothing to hand out, move on
        if popped is not None or state.next_offset != before:
            self._commit(group, topic, queue_id, state)
        return popped, rest

    def _commit(self, group: str, topic: str, queue_id: int, state: QueuePopState) -> None:
        self._dirty = True
        state.checkpoints = [ck for ck in state.checkpoints if not ck.done]
        committed = state.committable_offset()
        if state.deliveries:
            done = {ck_offset for ck_offset in state.deliveries if ck_offset < committed}
            pending = {o for ck in state.checkpoints for o in ck.pending()}
            for ck_offset in done - pending:
                del state.deliveries[ck_offset]
        self._offsets.commit_offset(group, topic, queue_id, committed)

    def save(self) -> None:
        """Make the table durable now, on the caller's thread (loading and tests; a running broker saves
        with :meth:`save_durably`, and the two must not overlap: the file has one writer)."""
        if self._group_save.writing:
            raise RuntimeError("the POP table is being written by a shared save")
        if self._dirty:
            self._table.save()
            self._dirty = False

    async def save_durably(self) -> None:
        """Return once every change made so far is on disk; ``OSError`` when the write failed (then nothing
        may be acknowledged to the client), and the next call writes again. Concurrent callers share one
        write (:class:`broker.pop.group_save.GroupSave`)."""
        try:
            await self._group_save.save(self._dirty)
        except OSError:
            self._dirty = True
            raise

    async def drain_saves(self) -> None:
        """Wait for the writes asked for so far, then let go of the table's file (a later write opens it
        again)."""
        await self._group_save.drain()
        self._table.close()

    def _snapshot(self) -> bytes:
        self._dirty = False  # changes from here on need the next write
        return self._table.snapshot()

    # -- acks and changes ------------------------------------------------------------------------

    def ack(self, group: str, topic: str, queue_id: int, offset: int, ck_start: int, pop_time: int) -> bool:
        """Mark one message of a checkpoint done; ``False`` when no open checkpoint has it (already
        acknowledged or revived), which Apache answers as a success all the same."""
        return self.ack_all(group, topic, queue_id, [offset], ck_start, pop_time) > 0

    def ack_all(
        self, group: str, topic: str, queue_id: int, offsets: Iterable[int], ck_start: int, pop_time: int
    ) -> int:
        """Mark messages of one checkpoint done, as :meth:`ack` each would, but with one commit for them
        all (a batch ack names a whole pop's offsets); how many were still open."""
        state = self._table.queues.get((group, topic, queue_id))
        ck = state.find(ck_start, pop_time) if state is not None else None
        if state is None or ck is None:
            return 0
        pending = set(ck.pending())
        taken = 0
        for offset in offsets:
            if offset in pending:
                pending.discard(offset)
                ck.acked.add(offset)
                self._put(group, topic, "ACK")
                taken += 1
        if taken:
            self._commit(group, topic, queue_id, state)
        return taken

    def change_invisible(
        self,
        group: str,
        topic: str,
        queue_id: int,
        offset: int,
        ck_start: int,
        old_pop_time: int,
        pop_time: int,
        invisible_time: int,
        revive_qid: int,
    ) -> bool:
        """Hide one message ``invisible_time`` ms from ``pop_time`` under a checkpoint of its own."""
        if not self.ack(group, topic, queue_id, offset, ck_start, old_pop_time):
            return False
        state = self._table.queues[(group, topic, queue_id)]
        state.checkpoints.append(
            Checkpoint(
                start_offset=offset,
                pop_time=pop_time,
                invisible_time=invisible_time,
                offsets=[offset],
                revive_qid=revive_qid,
            )
        )
        self._commit(group, topic, queue_id, state)
        self._put(group, topic, "CK")
        return True

    def backlog(self, group: str, topic: str, queue_id: int, *, order: bool = False) -> int:
        """Messages of a queue the group has not been handed yet (``restNum``; NOTIFICATION's ``hasMsg``),
        without starting the queue for the group; an orderly queue with a batch in flight has none."""
        state = self._table.queues.get((group, topic, queue_id))
        if state is not None:
            if order and any(not ck.done for ck in state.checkpoints):
                return 0
            start = state.next_offset
        else:
            start = self._offsets.query_offset(group, topic, queue_id)
            if start < 0:  # never popped: where a pop would start it (Apache's notification asks MAX)
                start = self._init_offset(topic, queue_id, 1)
        return max(0, self._store.get_max_offset(topic, queue_id) - start)

    def in_flight(self, group: str, topic: str) -> int:
        """How many messages of ``topic`` the group holds unacknowledged (all queues)."""
        return sum(
            len(ck.pending())
            for (g, t, _), state in self._table.queues.items()
            if g == group and t == topic
            for ck in state.checkpoints
        )

    # -- revive ----------------------------------------------------------------------------------

    async def revive_once(self) -> int:
        """Store again, in the group's POP retry topic, every message whose invisible time ran out; the
        number revived. A message whose store failed stays in its checkpoint and is tried next time."""
        now = self._clock.now_ms()
        started = time.perf_counter()
        revived = 0
        async with self._revive_lock:
            for (group, topic, queue_id), state in list(self._table.queues.items()):
                revived_before = revived
                for ck in list(state.checkpoints):
                    if ck.visible_at > now:
                        continue
                    out = (group, topic, ck.revive_qid, "CK")
                    self.revive_out[out] = self.revive_out.get(out, 0) + 1
                    if ck.revive_qid == ORDER_REVIVE_QUEUE:
                        # An orderly queue is not revived elsewhere: its next pop starts again at the
                        # first message not acknowledged, so the order holds.
                        state.next_offset = min([*ck.pending(), state.next_offset])
                        if ck in state.checkpoints:  # an ack may have closed it meanwhile
                            state.checkpoints.remove(ck)
                        revived += 1
                        continue
                    for offset in ck.pending():
                        if await self._revive(group, topic, queue_id, offset, ck):
                            ck.acked.add(offset)
                            revived += 1
                        else:
                            break
                if revived > revived_before:
                    self._commit(group, topic, queue_id, state)
            if revived:
                await self.save_durably()
        self.scan_time.observe((), int((time.perf_counter() - started) * 1000))
        return revived

    async def _revive(self, group: str, topic: str, queue_id: int, offset: int, ck: Checkpoint) -> bool:
        result = self._store.get_messages(topic, queue_id, offset, 1)
        if not result.messages or result.queue_offsets[0] != offset:
            log.warning("revive: %s/%d offset %d is no longer stored; dropped", topic, queue_id, offset)
            return True
        try:
            original = decode_message(result.messages[0], 0, decompress_body=False)[0]
        except CodecError as exc:
            log.error("revive: %s/%d offset %d does not decode (%s); dropped", topic, queue_id, offset, exc)
            return True
        retry_topic = topic if topic.startswith(RETRY_GROUP_TOPIC_PREFIX) else pop_retry_topic(topic, group)
        self._topics.create_if_absent(retry_topic, RETRY_QUEUE_NUMS, PERM_READ | PERM_WRITE)
        properties = dict(original.properties)
        if original.reconsume_times == 0 or const.FIRST_POP_TIME not in properties:
            properties[const.FIRST_POP_TIME] = str(ck.pop_time)
        # Apache 5.5's revive names the group (5.3 did not); clients see it on the redelivered message.
        properties[const.ORIGIN_GROUP] = group
        message = MessageExt(
            topic=retry_topic,
            body=original.body,
            flag=original.flag,
            properties_string=stored_properties(properties),
            queue_id=0,
            sys_flag=original.sys_flag,
            born_timestamp=original.born_timestamp,
            born_host=self._store_host,
            store_host=self._store_host,
            reconsume_times=original.reconsume_times + 1,
        )
        put = await self._messages.put(message)
        retry = (group, topic, put.status.value)
        self.revive_retry[retry] = self.revive_retry.get(retry, 0) + 1
        if not put.status.stored:
            log.warning("revive of %s/%d offset %d not stored: %s", topic, queue_id, offset, put.status.name)
            return False
        return True

    # -- long polling ----------------------------------------------------------------------------

    def _arrived(self, topic: str, queue_id: int, max_offset: int, codes: tuple[int, ...]) -> None:
        for future in self._waiters.pop(topic, []):
            if not future.done():
                future.set_result(None)

    async def wait_for(self, topics: Collection[str], timeout_ms: int) -> bool:
        """Wait until a message arrives on one of ``topics`` or ``timeout_ms`` passes; ``False`` at once
        when :data:`MAX_POLLING` pops already wait (Apache's POLLING_FULL)."""
        if self._waiting >= MAX_POLLING:
            return False
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        for topic in topics:
            self._waiters.setdefault(topic, []).append(future)
        self._waiting += 1
        try:
            await asyncio.wait_for(asyncio.shield(future), timeout_ms / 1000)
        except TimeoutError:
            pass
        finally:
            self._waiting -= 1
            for topic in topics:
                waiting = self._waiters.get(topic)
                if waiting is not None and future in waiting:
                    waiting.remove(future)
                    if not waiting:
                        del self._waiters[topic]
        return True
