"""The one way messages enter the store: append, count, and wake the consumers waiting for them.

Sends, delay-level deliveries, retries, transaction commits and op records all append through
:class:`MessageService` (and a slave's replicated messages are announced through it), so held long-polling
pulls learn about every arrival (Apache's reput service tells its ``NotifyMessageArrivingListener`` the
same thing) and the runtime counters see every put.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping, Sequence

from broker.stats import BrokerStats
from broker.store import MessageStore, PutMessageResult, tag_hash_code
from broker.store.waiting import outcome
from rocketmq_wire.message import const, sysflag
from rocketmq_wire.message.properties import PropertiesFlavour, encode_java_properties
from rocketmq_wire.message.stored import MessageExt

log = logging.getLogger("broker.messages")

#: ``listener(topic, queue_id, max_offset, tag_codes)``: messages arrived in a queue, which now ends at
#: ``max_offset``; ``tag_codes`` are the tag hash codes of the new messages.
ArrivalListener = Callable[[str, int, int, tuple[int, ...]], None]

_INVISIBLE = (sysflag.TRANSACTION_PREPARED_TYPE, sysflag.TRANSACTION_ROLLBACK_TYPE)


def stored_properties(properties: Mapping[str, str]) -> str:
    """A properties map as a 4.9.x broker writes it into the commit log.

    The broker re-encodes the map it decoded (a default-sized Java ``HashMap``), so names come out in that
    map's order, with no separator after the last pair.
    """
    return encode_java_properties(properties, PropertiesFlavour.V4)


def tags_code(properties: Mapping[str, str]) -> int:
    return tag_hash_code(properties.get(const.TAGS))


class MessageService:
    def __init__(self, store: MessageStore, stats: BrokerStats) -> None:
        self.store = store
        self._stats = stats
        self._listeners: list[ArrivalListener] = []

    def on_arrival(self, listener: ArrivalListener) -> None:
        self._listeners.append(listener)

    async def put(self, message: MessageExt) -> PutMessageResult:
        return await self.put_all([message])

    async def put_all(self, messages: Sequence[MessageExt]) -> PutMessageResult:
        """Append messages contiguously (a batch), then announce them to waiting consumers."""
        return await outcome(functools.partial(self.put_all_then, messages))

    def put_all_then(
        self, messages: Sequence[MessageExt], done: Callable[[PutMessageResult], object]
    ) -> PutMessageResult | None:
        """:meth:`put_all` for callers that take the verdict in a callback: returned at once when the store
        has it, else ``None`` and ``done(result)`` later (see :meth:`MessageStore.put_messages_then`)."""

        def verdict(result: PutMessageResult) -> None:
            self._account(messages, result)
            done(result)

        result = self.store.put_messages_then(messages, verdict)
        if result is not None:
            self._account(messages, result)
        return result

    def _account(self, messages: Sequence[MessageExt], result: PutMessageResult) -> None:
        if not result.status.stored:
            self._stats.put_failed()
            log.warning(
                "put of %d message(s) to %s failed: %s", len(messages), messages[0].topic, result.status.name
            )
            return
        self._stats.put(result.message_count, result.wrote_bytes)
        self._announce(messages, result.queue_offset + 1)

    def announce_replicated(self, messages: Sequence[MessageExt]) -> None:
        """Messages a slave copied from its master are in its queues now: wake the pulls waiting for them.

        Apache's slave leaves this to the hold service's periodic re-check; answering at once is the same
        answer, sooner.
        """
        self._announce(messages)

    def _announce(self, messages: Sequence[MessageExt], single_end: int | None = None) -> None:
        """``single_end``: for one message just stored, its queue offset + 1, what the queue holds now
        (at least: a later message announces itself), so the store is not asked."""
        if len(messages) == 1:  # a single send: no grouping by queue needed
            message = messages[0]
            if message.sys_flag & sysflag.TRANSACTION_MASK not in _INVISIBLE:
                self._notify(message.topic, message.queue_id, (tag_hash_code(message.tags),), single_end)
            return
        arrived: dict[tuple[str, int], list[int]] = {}
        for message in messages:
            if message.sys_flag & sysflag.TRANSACTION_MASK in _INVISIBLE:
                continue
            arrived.setdefault((message.topic, message.queue_id), []).append(tag_hash_code(message.tags))
        for (topic, queue_id), codes in arrived.items():
            self._notify(topic, queue_id, tuple(codes))

    def _notify(
        self, topic: str, queue_id: int, codes: tuple[int, ...], max_offset: int | None = None
    ) -> None:
        if not self._listeners:
            return
        if max_offset is None:
            max_offset = self.store.get_max_offset(topic, queue_id)
        for listener in list(self._listeners):
            try:
                listener(topic, queue_id, max_offset, codes)
            except Exception:
                log.exception("message-arrival listener failed for %s/%d", topic, queue_id)
