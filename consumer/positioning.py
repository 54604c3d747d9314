"""Where a consumer starts reading a queue it just got (Java's ``computePullFromWhere``).

The group's committed offset wins whenever there is one: a consumer that restarts, or takes a queue over
from another member, continues where the group stopped. Only a queue the group never committed on is
positioned by ``consume_from``: the end of the queue (only new messages), its start, or the first message
stored at or after a point in time. A retry topic with no committed offset is always read from its start:
whatever is in it is there for this group.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Awaitable, Callable

from consumer.offset_store import OffsetStore, ReadOffsetType
from rocketmq_wire.bodies.heartbeat import ConsumeFromWhere
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.topics import is_retry_topic

#: Java's default ``consumeTimestamp``: half an hour before the consumer starts.
DEFAULT_TIMESTAMP_LOOKBACK_MS = 30 * 60 * 1000
#: ``consumeTimestamp`` as Java formats it (local time).
TIMESTAMP_FORMAT = "%Y%m%d%H%M%S"

_SHORT_NAMES = {
    "LAST_OFFSET": ConsumeFromWhere.CONSUME_FROM_LAST_OFFSET,
    "FIRST_OFFSET": ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET,
    "TIMESTAMP": ConsumeFromWhere.CONSUME_FROM_TIMESTAMP,
}


def consume_from_where(value: ConsumeFromWhere | str) -> ConsumeFromWhere:
    """A ``ConsumeFromWhere`` from itself, its Java name, or a short name (``LAST_OFFSET``...)."""
    if isinstance(value, ConsumeFromWhere):
        return value
    upper = value.strip().upper()
    if upper in _SHORT_NAMES:
        return _SHORT_NAMES[upper]
    try:
        return ConsumeFromWhere(upper)
    except ValueError:
        choices = ", ".join(_SHORT_NAMES)
        raise ValueError(f"unknown consume-from position {value!r}; choose one of {choices}") from None


def timestamp_ms(value: int | float | dt.datetime | str | None, *, now_ms: int | None = None) -> int:
    """Epoch milliseconds from epoch ms, a datetime (naive means local time), Java's ``yyyyMMddHHmmss``
    (local time) or an ISO 8601 text; ``None`` is Java's default, 30 minutes ago."""
    if value is None:
        base = time.time_ns() // 1_000_000 if now_ms is None else now_ms
        return base - DEFAULT_TIMESTAMP_LOOKBACK_MS
    if isinstance(value, dt.datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, (int, float)):
        return int(value)
    text = value.strip()
    if text.isdigit() and len(text) == len("20240101120000"):
        return int(dt.datetime.strptime(text, TIMESTAMP_FORMAT).timestamp() * 1000)
    if text.isdigit():
        return int(text)
    try:
        return int(dt.datetime.fromisoformat(text).timestamp() * 1000)
    except ValueError:
        raise ValueError(
            f"{value!r} is not a time: give epoch milliseconds, yyyyMMddHHmmss or an ISO 8601 date"
        ) from None


async def compute_pull_offset(
    queue: MessageQueue,
    *,
    offsets: OffsetStore,
    consume_from: ConsumeFromWhere,
    timestamp: int,
    max_offset: Callable[[MessageQueue], Awaitable[int]],
    search_offset: Callable[[MessageQueue, int], Awaitable[int]],
) -> int:
    """The offset to start ``queue`` at; raises ``ConsumerError`` (or a transport error) when the broker
    cannot be asked, so the caller tries again later rather than guessing."""
    committed = await offsets.read(queue, ReadOffsetType.STORE)
    if committed >= 0:
        return committed
    retry = is_retry_topic(queue.topic or "")
    if consume_from is ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET:
        return 0
    if consume_from is ConsumeFromWhere.CONSUME_FROM_TIMESTAMP:
        if retry:
            return await max_offset(queue)
        return await search_offset(queue, timestamp)
    # CONSUME_FROM_LAST_OFFSET and the deprecated variants Java treats the same way.
    if retry:
        return 0
    return await max_offset(queue)
