"""Timer messages (RocketMQ 5): a message carrying a delivery time waits in ``rmq_sys_wheel_timer``.

On its way in, a message with ``TIMER_DELIVER_MS`` / ``TIMER_DELAY_MS`` / ``TIMER_DELAY_SEC`` is checked and
re-addressed as Apache's ``HookUtils.transformTimerMessage`` does: the delivery time is floored to
``timerPrecisionMs`` (an exact multiple moves one step earlier), kept as ``TIMER_OUT_MS``, and the real topic
and queue are kept as ``REAL_TOPIC`` / ``REAL_QID``. The message is then stored like any other, in queue 0 of
the system topic, so a send is acknowledged only once it is as durable as the flush mode makes messages.

What waits is indexed compactly (:mod:`broker.timer_index`, eight bytes per pending timer plus a fixed cost
per slot), rebuilt on start by reading the timer queue from the durable checkpoint on; see
:mod:`broker.store.timer_log` for how a delivery is made to happen exactly once across a crash. A delivered
copy keeps the original's properties (``UNIQ_KEY`` among them, so its message id is the one the sender got)
and gains ``TIMER_ENQUEUE_MS`` / ``TIMER_DEQUEUE_MS``, as Apache's does. ``REAL_TOPIC`` / ``REAL_QID`` stay
in the stored copy too: Apache's ``convertMessage`` writes the properties string before it takes them out
of the map, so its consumers see them (5.3.3 and 5.5.0 alike).

A recall (RECALL_MESSAGE) is itself a timer message carrying ``TIMER_DEL_UNIQKEY`` for the same slot; when
the slot falls due, every message whose ``REAL_TOPIC+UNIQ_KEY`` one of the slot's markers names is dropped.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import dataclasses
import logging
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from broker.clock import Clock, wait_event
from broker.config import BrokerConfig
from broker.histogram import HistogramTable
from broker.message_service import MessageService, stored_properties
from broker.store import FlushDiskType, GetMessageStatus, PutMessageResult, PutMessageStatus
from broker.store.timer_log import TimerLog
from broker.timer_index import TimerIndex
from rocketmq_wire import ResponseCode, topics
from rocketmq_wire.errors import CodecError
from rocketmq_wire.message import const
from rocketmq_wire.message.stored import MessageExt, decode_message

log = logging.getLogger("broker.timer")

_T = TypeVar("_T")

#: Apache's ``TimerMessageStore.TIMER_TOPIC``.
TIMER_TOPIC = topics.WHEEL_TIMER_TOPIC
#: Where the timer's own files live, under the store root.
TIMER_DIR = "timer"
#: Pause before retrying a due message whose re-store failed for a passing reason.
RETRY_AFTER_FAILURE_MS = 1000
_READ_BATCH = 32
#: Apache's buckets for ``rocketmq_delay_message_latency`` (seconds): 1 min, 10 min, 1 h, 12 h, 1 day, 3 days.
DELAY_LATENCY_BOUNDS = (60, 600, 3600, 12 * 3600, 24 * 3600, 3 * 24 * 3600)
#: Apache's ``timer_bound_s`` windows of ``rocketmq_timer_message_snapshot`` (its ``TimerMetrics`` list).
SNAPSHOT_BOUNDS_S = (5, 60, 300, 900, 3600, 4 * 3600, 8 * 3600, 24 * 3600)
#: Due messages stored together (one intent append, one done append).
_DELIVERY_BATCH = 128
#: At most this many bytes of copies go in one append (well inside a commit-log file).
_DELIVERY_BATCH_BYTES = 1024 * 1024
_PERMANENT_FAILURES = (PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED)


def java_parse_long(text: str) -> int:
    """``Long.parseLong``: an optional sign and decimal digits only, within 64 bits; else ValueError."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or not body.isascii() or not body.isdigit():
        raise ValueError(text)
    value = int(text)
    if not -(2**63) <= value < 2**63:
        raise ValueError(text)
    return value


def delete_key(real_topic: str, unique_key: str) -> str:
    """How a recall names the message it takes back (Apache's ``buildDeleteKey``)."""
    return f"{real_topic}+{unique_key}"


def floor_to_precision(deliver_ms: int, precision_ms: int) -> int:
    """Apache's floor: down to the slot, and a time exactly on a slot boundary one slot earlier."""
    if deliver_ms % precision_ms == 0:
        return deliver_ms - precision_ms
    return deliver_ms // precision_ms * precision_ms


#: The precisions Apache's ``setTimerPrecisionMs`` accepts; any other value is taken down to one of them.
PRECISIONS_MS = (100, 200, 500, 1000)


def snap_precision(value: int) -> int:
    """The precision Apache's broker runs with for a configured ``timerPrecisionMs``."""
    chosen = PRECISIONS_MS[0]
    for candidate in PRECISIONS_MS[1:]:
        if value < candidate:
            return chosen
        chosen = candidate
    return chosen


def flow_control_remark(congest_num: int) -> str:
    return (
        f"timer message is under flow control, max num limit is {congest_num * 2} or the current value is "
        f"greater than {congest_num} and less than {congest_num * 2}, trigger random flow control"
    )


@dataclass(frozen=True, slots=True)
class TimerRefusal:
    """Why a timer message is not stored: Apache's response code and remark."""

    code: int
    remark: str


def illegal_remark(max_delay_sec: int) -> str:
    return (
        "timer message illegal, the delay time should not be bigger than the max delay "
        f"{max_delay_sec * 1000}ms; or if set del msg, the delay time should be bigger than the current time"
    )


@dataclass(slots=True)
class TimerSettings:
    """The settings the service reads on each use (UPDATE_BROKER_CONFIG may change them)."""

    wheel_enable: Callable[[], bool]
    precision_ms: Callable[[], int]
    max_delay_sec: Callable[[], int]
    #: ``timerCongestNumEachSlot``: past this many timers in one slot, sends to it are refused at random,
    #: and always past twice as many (Apache's default, the largest int, never refuses).
    congest_num_each_slot: Callable[[], int] = lambda: 2**31 - 1


class TimerMessageService:
    def __init__(
        self,
        messages: MessageService,
        clock: Clock,
        settings: TimerSettings,
        timer_log: TimerLog,
        topic_exists: Callable[[str], bool],
    ) -> None:
        self._messages = messages
        self._clock = clock
        self.settings = settings
        self._log = timer_log
        self._topic_exists = topic_exists
        #: slot (floored delivery ms) -> timer-queue offsets waiting in it
        self._index = TimerIndex()
        self._random = random.Random()
        #: The next timer-queue offset not yet read into the index.
        self._indexed = 0
        self._event = asyncio.Event()
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self.delivered_count = 0
        self.recalled_count = 0
        #: Per real topic: timer messages waiting (recall markers count -1, as Apache's metrics do), and
        #: when that last changed.
        self.timing_count: dict[str, tuple[int, int]] = {}
        #: Everything due up to this time has been delivered (the wheel's read time).
        self.read_through_ms = 0
        #: Per real topic: entries read into the index, and copies delivered (the metrics' counters).
        self.enqueued: dict[str, int] = {}
        self.dequeued: dict[str, int] = {}
        #: Per real topic (1-tuple): whole seconds from a timer message's birth to its delivery time.
        self.set_latency: HistogramTable[tuple[str]] = HistogramTable(DELAY_LATENCY_BOUNDS)

    def now_ms(self) -> int:
        return self._clock.now_ms()

    # -- on the way in ----------------------------------------------------------------------------------

    def transform(
        self, properties: dict[str, str], topic: str, queue_id: int
    ) -> tuple[str, int] | TimerRefusal:
        """Where a message is stored: its own queue or the timer topic's; or why it is refused.

        ``properties`` is changed in place, as Apache changes the message's (a message with a delay level
        loses its timer properties; a timer message gains ``TIMER_OUT_MS``, ``REAL_TOPIC``, ``REAL_QID``).
        """
        level = properties.get(const.DELAY, "")
        if level not in ("", "0") and _positive(level):
            for name in (const.TIMER_DELIVER_MS, const.TIMER_DELAY_SEC, const.TIMER_DELAY_MS):
                properties.pop(name, None)
            return topic, queue_id
        if topic == TIMER_TOPIC or const.TIMER_OUT_MS in properties:
            return topic, queue_id
        if (  # every send passes here: no generator, just three lookups
            const.TIMER_DELIVER_MS not in properties
            and const.TIMER_DELAY_MS not in properties
            and const.TIMER_DELAY_SEC not in properties
        ):
            return topic, queue_id
        settings = self.settings
        if not settings.wheel_enable():
            return TimerRefusal(
                ResponseCode.SYSTEM_ERROR, "accurate timer message is not enabled, timerWheelEnable is false"
            )
        max_delay_sec = settings.max_delay_sec()
        now = self._clock.now_ms()
        try:
            if const.TIMER_DELAY_SEC in properties:
                deliver_ms = now + java_parse_long(properties[const.TIMER_DELAY_SEC]) * 1000
            elif const.TIMER_DELAY_MS in properties:
                deliver_ms = now + java_parse_long(properties[const.TIMER_DELAY_MS])
            else:
                deliver_ms = java_parse_long(properties[const.TIMER_DELIVER_MS])
        except ValueError:
            return TimerRefusal(ResponseCode.MESSAGE_ILLEGAL, illegal_remark(max_delay_sec))
        if deliver_ms > now:
            if deliver_ms - now > max_delay_sec * 1000:
                return TimerRefusal(ResponseCode.MESSAGE_ILLEGAL, illegal_remark(max_delay_sec))
            deliver_ms = floor_to_precision(deliver_ms, snap_precision(settings.precision_ms()))
            congest = settings.congest_num_each_slot()
            if self._congested(self._index.count_in(deliver_ms), congest):
                return TimerRefusal(ResponseCode.SYSTEM_ERROR, flow_control_remark(congest))
            properties[const.TIMER_OUT_MS] = str(deliver_ms)
            properties[const.REAL_TOPIC] = topic
            properties[const.REAL_QID] = str(queue_id)
            return TIMER_TOPIC, 0
        if const.TIMER_DEL_UNIQKEY in properties:
            return TimerRefusal(ResponseCode.MESSAGE_ILLEGAL, illegal_remark(max_delay_sec))
        return topic, queue_id

    def _congested(self, count: int, limit: int) -> bool:
        """Apache's ``isReject``: no below the limit, yes from twice it, at random in between."""
        if count <= limit:
            return False
        if count >= limit * 2:
            return True
        return self._random.randrange(1000) > 1000 * (count - limit) / (limit + 0.1)

    def place(self, message: MessageExt) -> MessageExt | TimerRefusal:
        """``message`` as it is to be stored: unchanged, or re-addressed to the timer topic."""
        properties = dict(message.properties)
        placed = self.transform(properties, message.topic, message.queue_id)
        if isinstance(placed, TimerRefusal):
            return placed
        if placed == (message.topic, message.queue_id) and properties == message.properties:
            return message
        return dataclasses.replace(
            message, topic=placed[0], queue_id=placed[1], properties_string=stored_properties(properties)
        )

    # -- the index ----------------------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Timer-queue entries (messages and recall markers) indexed and not yet handled."""
        return len(self._index)

    def slot_count(self) -> int:
        return self._index.slot_count

    def index_new(self) -> int:
        """Read the timer queue's new entries into the index; how many were added."""
        store = self._messages.store
        added = 0
        while True:
            offset = self._indexed
            result = store.get_messages(TIMER_TOPIC, 0, offset, _READ_BATCH)
            if result.status is not GetMessageStatus.FOUND:
                if result.next_begin_offset > offset:
                    self._indexed = result.next_begin_offset
                    continue
                return added
            for data, queue_offset in zip(result.messages, result.queue_offsets, strict=True):
                self._indexed = queue_offset + 1
                if self._log.is_done(queue_offset):
                    continue
                try:
                    message, _ = decode_message(data, 0, decompress_body=False)
                    slot = int(message.properties.get(const.TIMER_OUT_MS, ""))
                except (CodecError, ValueError):
                    log.exception("skipping an unreadable timer message at offset %d", queue_offset)
                    continue
                self._index.add(slot, queue_offset)
                marker = const.TIMER_DEL_UNIQKEY in message.properties
                real_topic = message.properties.get(const.REAL_TOPIC, "")
                self._count(real_topic, -1 if marker else 1)
                self.enqueued[real_topic] = self.enqueued.get(real_topic, 0) + 1
                self.set_latency.observe((real_topic,), (slot - message.born_timestamp) // 1000)
                added += 1

    def _count(self, topic: str, change: int) -> None:
        count, _ = self.timing_count.get(topic, (0, 0))
        self.timing_count[topic] = (count + change, self._clock.now_ms())

    @property
    def indexed_offset(self) -> int:
        """The timer-queue offset read up to."""
        return self._indexed

    @property
    def progress(self) -> TimerLog:
        return self._log

    def enqueue_behind(self) -> tuple[int, int]:
        """Timer messages stored but not yet read into the index, and the age (ms) of the oldest of them."""
        store = self._messages.store
        behind = max(0, store.get_max_offset(TIMER_TOPIC, 0) - self._indexed)
        if not behind:
            return 0, 0
        stamp = store.get_store_time(TIMER_TOPIC, 0, self._indexed)
        return behind, max(0, self._clock.now_ms() - stamp) if stamp > 0 else 0

    def dequeue_behind(self) -> tuple[int, int]:
        """Entries already due and not yet delivered, and how long ago (ms) the earliest of them fell due."""
        now = self._clock.now_ms()
        due = [(slot, count) for slot, count in self._index.counts() if slot <= now]
        if not due:
            return 0, 0
        return sum(count for _, count in due), now - min(slot for slot, _ in due)

    def due_within(self, bounds_s: Sequence[int]) -> list[int]:
        """Entries falling due in each window ``[previous bound, bound)`` seconds from now (the first from
        now), as Apache's timer snapshot counts them; later ones are not counted."""
        precision = max(1, self.settings.precision_ms())
        now = self._clock.now_ms() // precision * precision
        edges = [bound * 1000 for bound in bounds_s]
        counts = [0] * len(edges)
        for slot, count in self._index.counts():
            window = bisect.bisect_right(edges, slot - now)
            if slot >= now and window < len(edges):
                counts[window] += count
        return counts

    def lowest_pending(self) -> int:
        """The lowest timer-queue offset still pending (everything below it is handled)."""
        lowest = self._index.lowest_offset()
        return self._indexed if lowest is None else min(lowest, self._indexed)

    # -- lifecycle ------------------------------------------------------------------------------------------

    def load(self) -> None:
        """Rebuild the index: from the checkpoint on, everything the timer log does not mark done."""
        self._log.open()
        self._indexed = self._log.checkpoint
        self._reconcile_intents()
        self.index_new()
        log.info("timer index rebuilt: %d pending in %d slots", len(self._index), self._index.slot_count)

    def _reconcile_intents(self) -> None:
        """Deliveries begun before a crash: done if the delivered copy reached the store, else pending."""
        store = self._messages.store
        for offset, real_from in self._log.open_intents():
            found = store.get_messages(TIMER_TOPIC, 0, offset, 1)
            if found.status is not GetMessageStatus.FOUND:
                continue
            try:
                original, _ = decode_message(found.messages[0], 0, decompress_body=False)
            except CodecError:
                continue
            props = original.properties
            real_topic = props.get(const.REAL_TOPIC, "")
            real_qid = props.get(const.REAL_QID, "")
            if not real_qid.isdigit():
                continue
            if self._copy_exists(real_topic, int(real_qid), real_from, props):
                log.info("timer message at %d was delivered before the crash", offset)
                self._log.mark_done([offset])

    def _copy_exists(self, topic: str, queue_id: int, start: int, props: Mapping[str, str]) -> bool:
        store = self._messages.store
        unique = props.get(const.UNIQ_KEY)
        out_ms = props.get(const.TIMER_OUT_MS)
        offset = start
        while True:
            result = store.get_messages(topic, queue_id, offset, _READ_BATCH)
            if result.status is not GetMessageStatus.FOUND:
                if result.next_begin_offset > offset:
                    offset = result.next_begin_offset
                    continue
                return False
            for data, queue_offset in zip(result.messages, result.queue_offsets, strict=True):
                offset = queue_offset + 1
                try:
                    copy, _ = decode_message(data, 0, decompress_body=False)
                except CodecError:
                    continue
                cp = copy.properties
                if cp.get(const.UNIQ_KEY) == unique and cp.get(const.TIMER_OUT_MS) == out_ms:
                    return True

    def start(self) -> None:
        if self._task is None:
            self._messages.on_arrival(self._arrived)
            self._task = asyncio.create_task(self._run(), name="timer-delivery")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        async with self._lock:
            self.checkpoint()
        self._log.close()

    def checkpoint(self) -> None:
        """Advance the durable checkpoint to the lowest pending offset (drops the log's older records);
        nothing to do when no entry was finished since the last time."""
        if self._log.finished_since_checkpoint:
            self._log.advance_checkpoint(self.lowest_pending())

    async def checkpoint_now(self) -> None:
        async with self._lock:
            await asyncio.to_thread(self.checkpoint)

    # -- delivering -------------------------------------------------------------------------------------

    def _arrived(self, topic: str, queue_id: int, max_offset: int, tag_codes: tuple[int, ...]) -> None:
        if topic == TIMER_TOPIC:
            self._event.set()

    async def _run(self) -> None:
        while True:
            self._event.clear()
            try:
                wait_ms = await self.deliver_due()
            except OSError:
                # The progress log could not be written: nothing is lost (the entries stay pending), and
                # the next pass tries again.
                log.exception("timer delivery failed; retrying in %d ms", RETRY_AFTER_FAILURE_MS)
                wait_ms = RETRY_AFTER_FAILURE_MS
            await wait_event(self._event, self._clock, wait_ms)

    async def deliver_due(self) -> int | None:
        """Deliver every slot whose time has come; the ms until the next one (None: nothing waits)."""
        async with self._lock:
            self.index_new()
            while (slot := self._index.earliest()) is not None:
                now = self._clock.now_ms()
                if slot > now:
                    self.read_through_ms = max(self.read_through_ms, now)
                    return slot - now
                if not await self._deliver_slot(slot):
                    return RETRY_AFTER_FAILURE_MS
                self._index.drop_earliest()
            self.read_through_ms = max(self.read_through_ms, self._clock.now_ms())
            return None

    async def _deliver_slot(self, slot: int) -> bool:
        """Deliver one slot's messages, leaving out the recalled; False when a re-store must be retried."""
        read: list[tuple[int, MessageExt]] = []
        deleted: set[str] = set()
        unreadable: list[int] = []
        pending = [offset for offset in self._index.offsets(slot) if not self._log.is_done(offset)]
        for start in range(0, len(pending), _DELIVERY_BATCH):
            if start:
                await asyncio.sleep(0)  # a large slot is read in turns with the broker's other work
            for offset, data in self._read_entries(pending[start : start + _DELIVERY_BATCH]):
                if data is None:
                    log.error("timer message at offset %d is gone from the store", offset)
                    unreadable.append(offset)
                    continue
                try:
                    message, _ = decode_message(data, 0, decompress_body=False)
                except CodecError:
                    log.exception("timer message at offset %d is unreadable", offset)
                    unreadable.append(offset)
                    continue
                marker = message.properties.get(const.TIMER_DEL_UNIQKEY)
                if marker is not None:
                    deleted.add(marker)
                read.append((offset, message))
        finished = list(unreadable)
        to_send: list[tuple[int, MessageExt]] = []
        for offset, message in read:
            props = message.properties
            if const.TIMER_DEL_UNIQKEY in props:
                finished.append(offset)
                continue
            key = delete_key(props.get(const.REAL_TOPIC, ""), props.get(const.UNIQ_KEY, ""))
            if key in deleted:
                log.info("timer message %s was recalled", props.get(const.UNIQ_KEY))
                self.recalled_count += 1
                finished.append(offset)
                continue
            to_send.append((offset, message))
        if finished:
            # Recalled messages before the markers that recall them: a torn append keeps a prefix, and a
            # marker used up without its message marked would let the message out after a crash.
            markers = {offset for offset, message in read if const.TIMER_DEL_UNIQKEY in message.properties}
            finished.sort(key=lambda offset: offset in markers)
            await self._progress(self._log.mark_done, finished)
        for start in range(0, len(to_send), _DELIVERY_BATCH):
            if start:  # under ASYNC_FLUSH a batch is stored without suspending: let other requests in
                await asyncio.sleep(0)
            if not await self._deliver_batch(to_send[start : start + _DELIVERY_BATCH]):
                return False
        return True

    def _read_entries(self, offsets: list[int]) -> list[tuple[int, bytes | None]]:
        """The stored records of ascending timer-queue ``offsets`` (None: not in the store), read a run of
        consecutive offsets at a time: the timers of one slot mostly arrived together."""
        store = self._messages.store
        found: list[tuple[int, bytes | None]] = []
        index = 0
        while index < len(offsets):
            offset = offsets[index]
            run = 1
            while index + run < len(offsets) and offsets[index + run] == offset + run:
                run += 1
            result = store.get_messages(TIMER_TOPIC, 0, offset, run)
            got = 0
            if result.status is GetMessageStatus.FOUND:
                for data, queue_offset in zip(result.messages, result.queue_offsets, strict=True):
                    if queue_offset != offset + got:
                        break
                    found.append((queue_offset, data))
                    got += 1
            if got == 0:  # the first of the run is not there; the rest are read from the next one on
                found.append((offset, None))
                got = 1
            index += got
        return found

    async def _progress(self, append: Callable[[list[_T]], None], records: list[_T]) -> None:
        """A progress-log append: in a worker thread when it is fsynced, else at once (a write to the page
        cache; the hop to a thread and back cost more than the write, twice per batch)."""
        if self._log.sync:
            await asyncio.to_thread(append, records)
        else:
            append(records)

    def _copy_of(self, message: MessageExt) -> MessageExt | None:
        """The message as delivered to its real queue (None when that topic is gone)."""
        props = dict(message.properties)
        real_topic = props.get(const.REAL_TOPIC, "")
        real_qid = props.get(const.REAL_QID, "")
        if not real_topic or not real_qid.isdigit() or not self._topic_exists(real_topic):
            log.warning(
                "dropping timer message %s: its topic %r is unknown", props.get(const.UNIQ_KEY), real_topic
            )
            return None
        props[const.TIMER_ENQUEUE_MS] = str(message.store_timestamp)
        props[const.TIMER_DEQUEUE_MS] = str(self._clock.now_ms())
        return MessageExt(
            topic=real_topic,
            body=message.body,
            flag=message.flag,
            properties_string=stored_properties(props),
            queue_id=int(real_qid),
            sys_flag=message.sys_flag,
            born_timestamp=message.born_timestamp,
            born_host=message.born_host,
            store_host=message.store_host,
            reconsume_times=message.reconsume_times,
        )

    async def _deliver_batch(self, batch: list[tuple[int, MessageExt]]) -> bool:
        """Store the copies of some due messages; False when one must be retried.

        Intents first, for all of them in one durable append (each names where its copy could land), then
        the copies stored together (under SYNC_FLUSH their flushes share group commits), then one durable
        append marking those stored as done.
        """
        store = self._messages.store
        copies: list[tuple[int, MessageExt]] = []
        dropped: list[int] = []
        for offset, message in batch:
            copy = self._copy_of(message)
            if copy is None:
                dropped.append(offset)
            else:
                copies.append((offset, copy))
        if dropped:
            await self._progress(self._log.mark_done, dropped)
        if not copies:
            return True
        ends: dict[tuple[str, int], int] = {}  # nothing is stored in between: one look per queue
        for _, copy in copies:
            queue = (copy.topic, copy.queue_id)
            if queue not in ends:
                ends[queue] = store.get_max_offset(*queue)
        intents = [(offset, ends[(copy.topic, copy.queue_id)]) for offset, copy in copies]
        await self._progress(self._log.mark_intents, intents)
        results = await self._store_copies([copy for _, copy in copies])
        done: list[int] = []
        failure: BaseException | None = None
        for (offset, copy), result in zip(copies, results, strict=True):
            if isinstance(result, BaseException):
                failure = failure or result
                continue
            if result.status.stored:
                done.append(offset)
                self.delivered_count += 1
                self._count(copy.topic, -1)
                self.dequeued[copy.topic] = self.dequeued.get(copy.topic, 0) + 1
            elif result.status in _PERMANENT_FAILURES:
                log.error(
                    "dropping timer message %s: %s", copy.properties.get(const.UNIQ_KEY), result.status.name
                )
                done.append(offset)
            else:
                failure = failure or _Retry(result.status.name)
        if done:
            await self._progress(self._log.mark_done, done)
        if isinstance(failure, _Retry):
            log.warning("storing a due timer message failed (%s); retrying", failure)
            return False
        if failure is not None:
            raise failure
        return True

    async def _store_copies(self, copies: list[MessageExt]) -> list[PutMessageResult | BaseException]:
        """Each copy's outcome. The copies go in one append where they fit one (a single group commit and
        dispatch for all); an append is all or nothing, so when it is refused each copy is stored alone:
        one bad copy is then dropped alone, and a passing failure retried for exactly the copies it hit.
        An exception is every copy's outcome (as it was for each copy stored alone): the intents already
        written let a restart find out which copies reached the store."""
        if 1 < len(copies) and sum(_record_size(copy) for copy in copies) <= _DELIVERY_BATCH_BYTES:
            try:
                together = await self._messages.put_all(copies)
            except Exception as exc:
                return [exc] * len(copies)
            if together.status.stored:
                return [together] * len(copies)
        return list(
            await asyncio.gather(*(self._messages.put(copy) for copy in copies), return_exceptions=True)
        )


def _record_size(message: MessageExt) -> int:
    """About what the message takes in the commit log (its fixed fields need less than 256 bytes)."""
    return 256 + len(message.body) + len(message.topic) + len(message.properties_string)


class _Retry(Exception):
    """A due message's copy was not stored for a passing reason."""


def _positive(text: str) -> bool:
    try:
        return java_parse_long(text) > 0
    except ValueError:
        return False


def build_timer(
    messages: MessageService, clock: Clock, config: BrokerConfig, topic_exists: Callable[[str], bool]
) -> TimerMessageService:
    """The timer service over a broker's settings, its progress files under ``<store root>/timer``."""
    settings = TimerSettings(
        wheel_enable=lambda: config.timer_wheel_enable,
        precision_ms=lambda: config.timer_precision_ms,
        max_delay_sec=lambda: config.timer_max_delay_sec,
        congest_num_each_slot=lambda: config.timer_congest_num_each_slot,
    )
    sync = config.flush_disk_type == FlushDiskType.SYNC_FLUSH.value
    timer_log = TimerLog(Path(config.store_path_root_dir) / TIMER_DIR, sync=sync)
    return TimerMessageService(messages, clock, settings, timer_log, topic_exists)
