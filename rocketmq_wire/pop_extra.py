"""The POP "extra info": how a popped message is named when it is acknowledged or hidden for longer.

The broker answers a pop with the messages and, in :class:`PopMessageResponseHeader`, the checkpoint it
wrote: its pop time, invisible time and revive queue, and per queue the checkpoint's start offset
(``startOffsetInfo``) and the offsets handed out (``msgOffsetInfo``). The Java client folds that into one
string per message, the ``POP_CK`` property, and sends that string back as ``extraInfo`` in ACK_MESSAGE and
CHANGE_MESSAGE_INVISIBLETIME: it is the message's receipt handle. Its fields are separated by one space::

    ckQueueOffset popTime invisibleTime reviveQid retry brokerName queueId [queueOffset]

``ckQueueOffset`` is the checkpoint's start offset in the queue, ``retry`` says which topic the message was
popped from (``0`` the topic itself, ``1`` the group's POP retry topic ``%RETRY%group_topic``, ``2`` the
5.x form ``%RETRY%group+topic``), and ``queueOffset`` the message's own offset. The broker reads the revive
queue, start offset, pop time and invisible time from it (and the broker name); the queue id and the
message's offset it takes from the request's own fields. A ``reviveQid`` of 999 marks an orderly pop.

The per-queue lists in the response header are ``retry queueId value`` entries joined by ``;`` (values of
``msgOffsetInfo`` are comma-separated offsets); ``orderCountInfo`` keys its entries by queue id or, from
5.1 on, by ``qo<queueId>%<queueOffset>``. Readers here key them ``retry@queueId`` as Java does.

(Light message queues, whose offsets come from a message property instead, are not handled here.)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Final

from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.base import parse_java_int
from rocketmq_wire.headers.pop import (
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    PopMessageResponseHeader,
)
from rocketmq_wire.topics import RETRY_GROUP_TOPIC_PREFIX

#: Between the fields of an extra info and of each offset-info entry.
SEPARATOR: Final = " "
#: Between the entries of an offset info.
ENTRY_SEPARATOR: Final = ";"
#: The ``retry`` marks: popped from the topic, from its V1 POP retry topic, from its V2 one.
NORMAL_TOPIC: Final = "0"
RETRY_TOPIC: Final = "1"
RETRY_TOPIC_V2: Final = "2"
#: The revive queue id an orderly pop's checkpoint names.
ORDER_REVIVE_QUEUE: Final = 999
#: Prefix of an order-count key naming one message (``qo<queueId>%<queueOffset>``).
QUEUE_OFFSET_KEY_PREFIX: Final = "qo"

_V1_SEPARATOR = "_"
_V2_SEPARATOR = "+"


def pop_retry_topic(topic: str, group: str, *, v2: bool = False) -> str:
    """The topic a group's unacknowledged POP messages come back through (``%RETRY%group_topic``, or
    ``%RETRY%group+topic`` where the broker has ``enableRetryTopicV2``)."""
    return RETRY_GROUP_TOPIC_PREFIX + group + (_V2_SEPARATOR if v2 else _V1_SEPARATOR) + topic


def retry_mark(topic: str) -> str:
    """The ``retry`` field for a message popped from ``topic``."""
    if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
        return RETRY_TOPIC_V2 if _V2_SEPARATOR in topic else RETRY_TOPIC
    return NORMAL_TOPIC


def real_topic(topic: str, group: str, mark: str) -> str:
    """The topic a message marked ``mark`` was popped from, given the topic the consumer subscribed to."""
    if mark == NORMAL_TOPIC:
        return topic
    if mark == RETRY_TOPIC:
        return pop_retry_topic(topic, group)
    if mark == RETRY_TOPIC_V2:
        return pop_retry_topic(topic, group, v2=True)
    raise CodecError(f"extra info: retry mark {mark!r} is not 0, 1 or 2")


def _java_split(text: str, separator: str) -> list[str]:
    """``String.split`` with a one-character literal separator: trailing empty strings are dropped."""
    parts = text.split(separator)
    while len(parts) > 1 and not parts[-1]:
        parts.pop()
    return parts


@dataclasses.dataclass(frozen=True, slots=True)
class ExtraInfo:
    """One popped message's receipt handle (Java's ``ExtraInfoUtil`` fields, by name).

    ``queue_offset`` is ``None`` in the seven-field form (what a client writes before it appends the
    message's offset). Apache's Proxy appends a ninth field, the message's commit-log offset (its gRPC
    receipt handle is this string, and it is what the proxy sends back to ack): kept in
    ``commit_log_offset``. Java reads these fields by position and ignores any beyond them; so does this.
    """

    ck_queue_offset: int
    pop_time: int
    invisible_time: int
    revive_qid: int
    retry: str
    broker_name: str
    queue_id: int
    queue_offset: int | None = None
    commit_log_offset: int | None = None

    def __str__(self) -> str:
        return self.text()

    def text(self) -> str:
        """The string as Java builds it (``buildExtraInfo``)."""
        fields = [
            self.ck_queue_offset,
            self.pop_time,
            self.invisible_time,
            self.revive_qid,
            self.retry,
            self.broker_name,
            self.queue_id,
        ]
        if self.queue_offset is not None:
            fields.append(self.queue_offset)
            if self.commit_log_offset is not None:
                fields.append(self.commit_log_offset)
        return SEPARATOR.join(str(f) for f in fields)

    @classmethod
    def parse(cls, text: str) -> ExtraInfo:
        """Read an extra info; a wrong field count or a number Java cannot parse raises
        :class:`CodecError`."""
        parts = _java_split(text, SEPARATOR)
        if len(parts) < 7:
            raise CodecError(f"extra info {text[:80]!r}: {len(parts)} fields, fewer than 7")
        if parts[4] not in (NORMAL_TOPIC, RETRY_TOPIC, RETRY_TOPIC_V2):
            raise CodecError(f"extra info {text[:80]!r}: retry mark {parts[4]!r} is not 0, 1 or 2")
        return cls(
            ck_queue_offset=parse_java_int(parts[0], "extraInfo.ckQueueOffset"),
            pop_time=parse_java_int(parts[1], "extraInfo.popTime"),
            invisible_time=parse_java_int(parts[2], "extraInfo.invisibleTime"),
            revive_qid=parse_java_int(parts[3], "extraInfo.reviveQid", 32),
            retry=parts[4],
            broker_name=parts[5],
            queue_id=parse_java_int(parts[6], "extraInfo.queueId", 32),
            queue_offset=parse_java_int(parts[7], "extraInfo.queueOffset") if len(parts) > 7 else None,
            commit_log_offset=(
                parse_java_int(parts[8], "extraInfo.commitLogOffset") if len(parts) > 8 else None
            ),
        )

    @property
    def is_order(self) -> bool:
        """Whether the message came from an orderly pop."""
        return self.revive_qid == ORDER_REVIVE_QUEUE

    @property
    def visible_again_at(self) -> int:
        """When (ms since the epoch, broker clock) the message reappears unless acknowledged."""
        return self.pop_time + self.invisible_time

    def real_topic(self, topic: str, group: str) -> str:
        """The ``topic`` an ack or change of this message names: ``topic`` or the group's retry topic."""
        return real_topic(topic, group, self.retry)


def offset_info_key(mark: str, queue_id: int) -> str:
    """The key Java reads a queue's entry of an offset info under (``retry@queueId``)."""
    return f"{mark}@{queue_id}"


def queue_offset_key(queue_id: int, queue_offset: int) -> str:
    """The middle field of an order-count entry about one message (``qo<queueId>%<queueOffset>``)."""
    return f"{QUEUE_OFFSET_KEY_PREFIX}{queue_id}%{queue_offset}"


def build_offset_info(entries: Iterable[tuple[str, int | str, int | Sequence[int]]]) -> str:
    """``startOffsetInfo`` / ``msgOffsetInfo`` / ``orderCountInfo`` from (topic, queue id or
    :func:`queue_offset_key`, value or offsets) entries, in the given order."""
    parts = []
    for topic, queue, value in entries:
        shown = ",".join(str(v) for v in value) if isinstance(value, Sequence) else str(value)
        parts.append(SEPARATOR.join((retry_mark(topic), str(queue), shown)))
    return ENTRY_SEPARATOR.join(parts)


def _parse_entries(text: str | None, what: str) -> list[tuple[str, str]] | None:
    if not text:
        return None
    seen: set[str] = set()
    entries = []
    for entry in _java_split(text, ENTRY_SEPARATOR):
        fields = _java_split(entry, SEPARATOR)
        if len(fields) != 3:
            raise CodecError(f"{what} {text[:80]!r}: entry {entry!r} is not 'retry queue value'")
        key = f"{fields[0]}@{fields[1]}"
        if key in seen:
            raise CodecError(f"{what} {text[:80]!r}: {key} twice")
        seen.add(key)
        entries.append((key, fields[2]))
    return entries


def parse_start_offset_info(text: str | None) -> dict[str, int] | None:
    """``startOffsetInfo`` as ``{"retry@queueId": start offset}``; ``None`` when absent or empty."""
    entries = _parse_entries(text, "startOffsetInfo")
    if entries is None:
        return None
    return {key: parse_java_int(value, "startOffsetInfo") for key, value in entries}


def parse_msg_offset_info(text: str | None) -> dict[str, list[int]] | None:
    """``msgOffsetInfo`` as ``{"retry@queueId": [offsets handed out]}``; ``None`` when absent or empty."""
    entries = _parse_entries(text, "msgOffsetInfo")
    if entries is None:
        return None
    return {
        key: [parse_java_int(v, "msgOffsetInfo") for v in _java_split(value, ",")] for key, value in entries
    }


def parse_order_count_info(text: str | None) -> dict[str, int] | None:
    """``orderCountInfo`` as ``{"retry@queueId" or "retry@qo<queueId>%<offset>": count}``."""
    entries = _parse_entries(text, "orderCountInfo")
    if entries is None:
        return None
    return {key: parse_java_int(value, "orderCountInfo", 32) for key, value in entries}


@dataclasses.dataclass(frozen=True, slots=True)
class PoppedMessage:
    """What the derivation of a receipt handle needs of a popped message: its topic as the answer gives it,
    its queue and queue offset, and the ``POP_CK`` property it already carries, if any.

    5.x brokers hand out a message revived into the POP retry topic under the subscribed topic's name
    (unless ``popResponseReturnActualRetryTopic``), with its receipt handle already set: that handle is
    then the message's, and its retry mark says where it was popped from.
    """

    topic: str
    queue_id: int
    queue_offset: int
    pop_ck: str | None = None

    @property
    def mark(self) -> str:
        """The retry mark the client files the message under."""
        if self.pop_ck is not None:
            parts = _java_split(self.pop_ck, SEPARATOR)
            if len(parts) < 5:
                raise CodecError(f"POP_CK {self.pop_ck[:80]!r}: no retry mark")
            return parts[4]
        return retry_mark(self.topic)


def popped_extra_infos(
    header: PopMessageResponseHeader, broker_name: str, messages: Sequence[PoppedMessage]
) -> list[ExtraInfo]:
    """Each message's ``POP_CK`` as Java's client derives it from a pop's response header.

    With ``startOffsetInfo`` (every 5.x broker sends it) a message that carries no handle yet gets one whose
    checkpoint start is its queue's entry and whose own offset is the entry of ``msgOffsetInfo`` at its rank
    among the queue's messages in the answer. Without it (older brokers) the checkpoint starts at the first
    message of the queue in the answer, and any handle a message carried is replaced.
    """
    if header.pop_time is None or header.invisible_time is None or header.revive_qid is None:
        raise ValueError("the response has no checkpoint (popTime, invisibleTime and reviveQid)")
    checkpoint = (header.pop_time, header.invisible_time, header.revive_qid)
    starts = parse_start_offset_info(header.start_offset_info)
    offsets = parse_msg_offset_info(header.msg_offset_info)
    result = []
    if starts is None:
        first: dict[tuple[str, int], int] = {}
        for m in messages:
            ck = first.setdefault((m.topic, m.queue_id), m.queue_offset)
            mark = retry_mark(m.topic)
            result.append(ExtraInfo(ck, *checkpoint, mark, broker_name, m.queue_id, m.queue_offset))
        return result
    ranks: dict[str, list[int]] = {}
    for m in messages:
        ranks.setdefault(offset_info_key(m.mark, m.queue_id), []).append(m.queue_offset)
    for m in messages:
        if m.pop_ck is not None:
            result.append(ExtraInfo.parse(m.pop_ck))
            continue
        key = offset_info_key(m.mark, m.queue_id)
        if key not in starts or offsets is None or key not in offsets:
            raise CodecError(f"pop response: no start offset or offsets for queue {key}")
        rank = ranks[key].index(m.queue_offset)
        if rank >= len(offsets[key]):
            raise CodecError(f"pop response: {len(offsets[key])} offsets for queue {key}, message {rank + 1}")
        result.append(
            ExtraInfo(starts[key], *checkpoint, m.mark, broker_name, m.queue_id, offsets[key][rank])
        )
    return result


def after_change(
    request: ChangeInvisibleTimeRequestHeader, response: ChangeInvisibleTimeResponseHeader, broker_name: str
) -> ExtraInfo:
    """The message's receipt handle after a successful CHANGE_MESSAGE_INVISIBLETIME: the broker wrote a
    checkpoint of its own for it, starting at the message's offset."""
    if request.offset is None or request.queue_id is None or request.topic is None:
        raise ValueError("the request names no message (offset, queueId and topic are required)")
    if response.pop_time is None or response.invisible_time is None or response.revive_qid is None:
        raise ValueError("the response has no checkpoint (popTime, invisibleTime and reviveQid)")
    return ExtraInfo(
        ck_queue_offset=request.offset,
        pop_time=response.pop_time,
        invisible_time=response.invisible_time,
        revive_qid=response.revive_qid,
        retry=retry_mark(request.topic),
        broker_name=broker_name,
        queue_id=request.queue_id,
        queue_offset=request.offset,
    )
