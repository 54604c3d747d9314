"""Delayed delivery by level: messages wait in ``SCHEDULE_TOPIC_XXXX`` and move to their topic on time.

A message sent with the ``DELAY`` property set to level ``n`` is stored in queue ``n - 1`` of the schedule
topic, its real topic and queue kept in ``REAL_TOPIC`` / ``REAL_QID``. Each level's queue is in store-time
order and every message of a level waits equally long, so one task per level only ever looks at the head
of its queue: it sleeps (on the broker's clock) until the head is due, re-stores it under its real topic,
and moves on. How far each level got is kept in ``config/delayOffset.json``, as Apache keeps it, so a
restart neither loses nor repeats deliveries beyond the last save.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path

from broker.clock import Clock, wait_event
from broker.message_service import MessageService, stored_properties
from broker.store import GetMessageStatus, PutMessageStatus
from broker.store.json_config import load_json_config, save_json_config
from rocketmq_wire import fastjson, topics
from rocketmq_wire.errors import CodecError
from rocketmq_wire.message import const, sysflag
from rocketmq_wire.message.stored import MessageExt, decode_message

log = logging.getLogger("broker.schedule")

FILE_NAME = "delayOffset.json"
#: How long to wait before trying again when storing a due message failed for a transient reason.
RETRY_AFTER_FAILURE_MS = 1000
_PERMANENT_FAILURES = (PutMessageStatus.MESSAGE_ILLEGAL, PutMessageStatus.PROPERTIES_SIZE_EXCEEDED)


def delay_level_of(properties: dict[str, str]) -> int:
    value = properties.get(const.DELAY, "0")
    return int(value) if value.isascii() and value.isdigit() else 0


class ScheduleMessageService:
    def __init__(
        self,
        messages: MessageService,
        levels_ms: list[int],
        clock: Clock,
        config_dir: Path,
        topic_exists: Callable[[str], bool],
        store_host: str,
    ) -> None:
        self._messages = messages
        self.levels_ms = list(levels_ms)
        self._clock = clock
        self._path = config_dir / FILE_NAME
        self._topic_exists = topic_exists
        self._store_host = store_host
        self._offsets: dict[int, int] = {}
        self._dirty = False
        self._events = {level: asyncio.Event() for level in range(1, len(self.levels_ms) + 1)}
        self._locks = {level: asyncio.Lock() for level in self._events}
        self._tasks: list[asyncio.Task[None]] = []
        #: Called after each delivery with (level, delivered message); tests and stats listen here.
        self.delivered: list[Callable[[int, MessageExt], Awaitable[None] | None]] = []
        messages.on_arrival(self._arrived)

    @property
    def max_level(self) -> int:
        return len(self.levels_ms)

    def offsets(self) -> dict[int, int]:
        return dict(self._offsets)

    # -- diverting a message on its way in -------------------------------------------------------------

    def apply_delay(self, properties: dict[str, str], topic: str, queue_id: int) -> tuple[str, int]:
        """Where a message really goes: its own queue, or the schedule queue of its delay level.

        A level past the last one is clamped to the last, as Apache does; the real destination is recorded
        in the properties.
        """
        level = delay_level_of(properties)
        if level <= 0:
            return topic, queue_id
        level = min(level, self.max_level)
        properties[const.REAL_TOPIC] = topic
        properties[const.REAL_QID] = str(queue_id)
        return topics.SCHEDULE_TOPIC, level - 1

    # -- lifecycle --------------------------------------------------------------------------------------

    def load(self) -> None:
        parsed = load_json_config(self._path)
        table = parsed.get("offsetTable") if parsed is not None else None
        if isinstance(table, dict):
            for level, offset in table.items():
                try:
                    self._offsets[int(level)] = int(offset)
                except (TypeError, ValueError):
                    log.warning("ignoring malformed delay offset %r=%r", level, offset)

    def persist(self) -> None:
        table: dict[fastjson.JsonKey, fastjson.JsonValue] = dict(sorted(self._offsets.items()))
        save_json_config(self._path, fastjson.Bean({"offsetTable": table}))
        self._dirty = False

    def persist_if_dirty(self) -> None:
        if self._dirty:
            self.persist()

    def start(self) -> None:
        if self._tasks:
            return
        for level in range(1, self.max_level + 1):
            self._tasks.append(asyncio.create_task(self._run_level(level), name=f"schedule-level-{level}"))

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self.persist_if_dirty()

    # -- delivering -------------------------------------------------------------------------------------

    def _arrived(self, topic: str, queue_id: int, max_offset: int, tag_codes: tuple[int, ...]) -> None:
        if topic == topics.SCHEDULE_TOPIC:
            event = self._events.get(queue_id + 1)
            if event is not None:
                event.set()

    async def _run_level(self, level: int) -> None:
        event = self._events[level]
        while True:
            event.clear()
            wait_ms = await self._deliver_due(level)
            if wait_ms is None:
                await event.wait()
            else:
                await wait_event(event, self._clock, wait_ms)

    async def deliver_due(self) -> None:
        """Deliver, now, every message whose time has come (the level tasks do this on their own; this is
        for callers that moved a manual clock and want the effect before going on)."""
        for level in range(1, self.max_level + 1):
            await self._deliver_due(level)

    async def _deliver_due(self, level: int) -> int | None:
        """Deliver the due messages at the head of a level's queue.

        Returns the milliseconds until the next one is due, or ``None`` when the queue has none waiting.
        """
        async with self._locks[level]:
            delay = self.levels_ms[level - 1]
            queue_id = level - 1
            store = self._messages.store
            while True:
                offset = self._offsets.get(level, 0)
                result = store.get_messages(topics.SCHEDULE_TOPIC, queue_id, offset, 32)
                if result.status is not GetMessageStatus.FOUND:
                    if offset > result.max_offset:
                        # The queue is shorter than our progress (a store wiped or replaced): start over
                        # from its end rather than wait for offsets that will never be reached again.
                        log.warning(
                            "delay level %d: offset %d is past the queue end %d",
                            level,
                            offset,
                            result.max_offset,
                        )
                        self._offsets[level] = result.max_offset
                        self._dirty = True
                        continue
                    if result.next_begin_offset > offset:
                        self._advance(level, result.next_begin_offset)
                        continue
                    return None
                for data, queue_offset in zip(result.messages, result.queue_offsets, strict=True):
                    try:
                        message, _ = decode_message(data, 0, decompress_body=False)
                    except CodecError:
                        log.exception(
                            "skipping an unreadable message at %s/%d offset %d",
                            topics.SCHEDULE_TOPIC,
                            queue_id,
                            queue_offset,
                        )
                        self._advance(level, queue_offset + 1)
                        continue
                    due = message.store_timestamp + delay
                    now = self._clock.now_ms()
                    if due > now:
                        return due - now
                    if not await self._deliver(level, message):
                        return RETRY_AFTER_FAILURE_MS
                    self._advance(level, queue_offset + 1)

    def _advance(self, level: int, offset: int) -> None:
        if offset > self._offsets.get(level, 0):
            self._offsets[level] = offset
            self._dirty = True

    async def _deliver(self, level: int, message: MessageExt) -> bool:
        """Store a due message under its real topic; False means try again later."""
        properties = dict(message.properties)
        real_topic = properties.get(const.REAL_TOPIC)
        real_queue = properties.get(const.REAL_QID, "")
        if message.sys_flag & sysflag.TRANSACTION_MASK == sysflag.TRANSACTION_PREPARED_TYPE:
            log.error("dropping a half transaction message found in delay level %d", level)
            return True
        if not real_topic or not real_queue.isdigit():
            log.error("dropping a delayed message without its real topic/queue (%s)", message.msg_id)
            return True
        if not self._topic_exists(real_topic):
            log.warning(
                "delayed message %s is due but its topic %s no longer exists", message.msg_id, real_topic
            )
            return True
        delivered = MessageExt(
            topic=real_topic,
            body=message.body,
            flag=message.flag,
            properties_string=stored_properties(properties),
            queue_id=int(real_queue),
            sys_flag=message.sys_flag,
            born_timestamp=message.born_timestamp,
            born_host=message.born_host,
            store_host=self._store_host,
            reconsume_times=message.reconsume_times,
        )
        result = await self._messages.put(delivered)
        if not result.status.stored:
            if result.status in _PERMANENT_FAILURES:
                log.error("dropping delayed message %s: %s", message.msg_id, result.status.name)
                return True
            return False
        log.debug(
            "delivered delayed message %s (level %d) to %s/%s", message.msg_id, level, real_topic, real_queue
        )
        for callback in list(self.delivered):
            outcome = callback(level, delivered)
            if outcome is not None:
                await outcome
        return True
