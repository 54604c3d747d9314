"""Bodies of RocketMQ 5's POP consumption: batch acks, and the per-group choice between POP and PULL.

BATCH_ACK_MESSAGE carries no header, only :class:`BatchAckMessageRequestBody`: per checkpoint (one pop of
one queue) a :class:`BatchAck` whose bit set marks the acknowledged messages by their distance from the
checkpoint's start offset. Its fields have one- and two-letter JSON names (``c``, ``t``, ``so`` ...), which
fastjson sorts like any other names; Java also reads the long names. The bit set is written as
``BitSet.toByteArray()`` in base64: bit ``i`` is bit ``i % 8`` of byte ``i // 8``, trailing zero bytes
left out.

SET_MESSAGE_REQUEST_MODE (mqadmin ``setConsumeMode``) sends a :class:`SetMessageRequestModeRequestBody`
to a broker; the broker then tells the group's 5.x clients, when they ask for their assignment, to POP
(sharing each queue among ``popShareQueueNum`` + 1 clients) or PULL. GET_ALL_MESSAGE_REQUEST_MODE (a slave
copying its master) answers with every setting, :class:`MessageRequestModeSerializeWrapper`.
QUERY_ASSIGNMENT (:class:`QueryAssignmentRequestBody`) is how a member learns its queues and their modes.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import enum
from collections.abc import Iterable
from typing import Any, Self

from rocketmq_wire import fastjson
from rocketmq_wire.bodies.base import (
    Fields,
    JsonBody,
    bean,
    map_entries,
    object_fields,
    to_int,
    to_required_string,
    write_map,
)
from rocketmq_wire.bodies.heartbeat import MESSAGE_MODEL_ORDINALS
from rocketmq_wire.bodies.java_collections import (
    CONCURRENT_HASH_MAP,
    HASH_MAP,
    JavaMap,
    read_map,
    string_hash,
)
from rocketmq_wire.bodies.message_queue import MessageQueue, read_message_queue
from rocketmq_wire.errors import CodecError


def bit_set_bytes(bits: Iterable[int]) -> bytes:
    """``BitSet.toByteArray()`` of the set with these bit indexes (little-endian, no trailing zero bytes)."""
    value = 0
    for bit in bits:
        if bit < 0:
            raise ValueError(f"a bit set holds no negative index ({bit})")
        value |= 1 << bit
    return value.to_bytes((value.bit_length() + 7) // 8, "little")


def bit_set_indexes(data: bytes) -> tuple[int, ...]:
    """The indexes of the bits set in ``BitSet.valueOf(data)``, ascending."""
    value = int.from_bytes(data, "little")
    return tuple(i for i in range(value.bit_length()) if value >> i & 1)


def _read_bit_set(value: Any, path: str) -> tuple[int, ...]:
    """fastjson reads a ``byte[]`` from a base64 string or from an array of numbers."""
    if isinstance(value, str):
        try:
            return bit_set_indexes(base64.b64decode(value, validate=True))
        except (binascii.Error, ValueError):
            raise CodecError(f"{path}: {value[:40]!r} is not base64") from None
    if isinstance(value, list):
        data = bytearray()
        for i, item in enumerate(value):
            byte = to_int(item, f"{path}[{i}]")
            if not -128 <= byte <= 255:
                raise CodecError(f"{path}[{i}]: {byte} is not a byte")
            data.append(byte & 0xFF)
        return bit_set_indexes(bytes(data))
    raise CodecError(f"{path}: expected a base64 string, got {type(value).__name__}")


def _first(obj: Fields, short: str, long: str) -> str:
    """Which of a field's two names the object uses (the short one when both are there)."""
    return long if not obj.has(short) and obj.has(long) else short


@dataclasses.dataclass(kw_only=True)
class BatchAck:
    """The acks of one checkpoint: ``bits`` are offsets relative to ``start_offset``.

    ``retry`` is the extra info's retry mark (``"0"``, ``"1"``, ``"2"``) and ``topic`` the subscribed topic;
    the broker works out the real one from both. ``bits`` ``None`` leaves ``b`` out (Java's null).
    """

    consumer_group: str | None = None
    topic: str | None = None
    retry: str | None = None
    start_offset: int = 0
    queue_id: int = 0
    revive_queue_id: int = 0
    pop_time: int = 0
    invisible_time: int = 0
    bits: tuple[int, ...] | None = None

    def acked_offsets(self) -> list[int]:
        """The queue offsets this ack covers."""
        return [self.start_offset + i for i in self.bits or ()]

    def to_bean(self) -> fastjson.Bean:
        bits = None if self.bits is None else base64.b64encode(bit_set_bytes(self.bits)).decode("ascii")
        return bean(
            c=self.consumer_group,
            t=self.topic,
            r=self.retry,
            so=self.start_offset,
            q=self.queue_id,
            rq=self.revive_queue_id,
            pt=self.pop_time,
            it=self.invisible_time,
            b=bits,
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        def name(short: str, long: str) -> str:
            return _first(obj, short, long)

        raw_bits = obj.get_raw(name("b", "bitSet"))
        return cls(
            consumer_group=obj.get_str(name("c", "consumerGroup")),
            topic=obj.get_str(name("t", "topic")),
            retry=obj.get_str(name("r", "retry")),
            start_offset=obj.get_long(name("so", "startOffset")),
            queue_id=obj.get_int(name("q", "queueId")),
            revive_queue_id=obj.get_int(name("rq", "reviveQueueId")),
            pop_time=obj.get_long(name("pt", "popTime")),
            invisible_time=obj.get_long(name("it", "invisibleTime")),
            bits=None if raw_bits is None else _read_bit_set(raw_bits, f"{obj.path}.b"),
        )


@dataclasses.dataclass(kw_only=True)
class BatchAckMessageRequestBody(JsonBody):
    """BATCH_ACK_MESSAGE: the broker the acks are for and one :class:`BatchAck` per checkpoint."""

    broker_name: str | None = None
    acks: list[BatchAck] | None = None

    def to_bean(self) -> fastjson.Bean:
        return bean(
            brokerName=self.broker_name,
            acks=None if self.acks is None else [ack.to_bean() for ack in self.acks],
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        acks = obj.items_of("acks", lambda value, path: BatchAck.from_object(object_fields(value, path)))
        return cls(broker_name=obj.get_str("brokerName"), acks=acks)


class MessageRequestMode(enum.StrEnum):
    """How a group's 5.x clients consume a topic: own their queues and PULL, or POP from shared ones."""

    PULL = "PULL"
    POP = "POP"


MESSAGE_REQUEST_MODE_ORDINALS = tuple(MessageRequestMode)


@dataclasses.dataclass(kw_only=True)
class SetMessageRequestModeRequestBody(JsonBody):
    """One group's mode on one topic (Java's defaults: PULL, no sharing)."""

    topic: str | None = None
    consumer_group: str | None = None
    mode: MessageRequestMode | None = MessageRequestMode.PULL
    pop_share_queue_num: int = 0

    def to_bean(self) -> fastjson.Bean:
        return bean(
            topic=self.topic,
            consumerGroup=self.consumer_group,
            mode=None if self.mode is None else str(self.mode),
            popShareQueueNum=self.pop_share_queue_num,
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        mode = obj.get_enum("mode", MESSAGE_REQUEST_MODE_ORDINALS, MessageRequestMode.PULL)
        if mode is not None and mode not in MessageRequestMode.__members__:
            raise CodecError(f"{obj.path}.mode: {mode!r} is not PULL or POP")
        return cls(
            topic=obj.get_str("topic"),
            consumer_group=obj.get_str("consumerGroup"),
            mode=None if mode is None else MessageRequestMode(mode),
            pop_share_queue_num=obj.get_int("popShareQueueNum"),
        )


def _group_modes(value: Any, path: str) -> JavaMap[str, SetMessageRequestModeRequestBody]:
    entries = map_entries(
        value,
        path,
        to_required_string,
        lambda v, p: SetMessageRequestModeRequestBody.from_object(object_fields(v, p)),
    )
    return read_map(entries, string_hash, CONCURRENT_HASH_MAP)


@dataclasses.dataclass(kw_only=True)
class MessageRequestModeSerializeWrapper(JsonBody):
    """Every mode a broker holds, by topic and group (two ``ConcurrentHashMap``\\ s)."""

    message_request_mode_map: dict[str, dict[str, SetMessageRequestModeRequestBody]] = dataclasses.field(
        default_factory=dict
    )

    def to_bean(self) -> fastjson.Bean:
        return bean(
            messageRequestModeMap=write_map(
                self.message_request_mode_map,
                string_hash,
                CONCURRENT_HASH_MAP,
                lambda topic: topic,
                lambda groups: write_map(
                    groups, string_hash, CONCURRENT_HASH_MAP, lambda group: group, lambda body: body.to_bean()
                ),
            )
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        entries = obj.entries_of("messageRequestModeMap", to_required_string, _group_modes)
        return cls(
            message_request_mode_map={}
            if entries is None
            else read_map(entries, string_hash, CONCURRENT_HASH_MAP)
        )


@dataclasses.dataclass(kw_only=True)
class QueryAssignmentRequestBody(JsonBody):
    """QUERY_ASSIGNMENT: a member asks a broker which queues of a topic it reads, and how (PULL or POP).

    Java's push consumer sends it at each rebalance once told to leave the balancing to the broker
    (``setClientRebalance(false)``); the broker answers from the group's consume mode.
    """

    topic: str | None = None
    consumer_group: str | None = None
    client_id: str | None = None
    strategy_name: str | None = None
    message_model: str | None = None

    def to_bean(self) -> fastjson.Bean:
        return bean(
            topic=self.topic,
            consumerGroup=self.consumer_group,
            clientId=self.client_id,
            strategyName=self.strategy_name,
            messageModel=self.message_model,
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(
            topic=obj.get_str("topic"),
            consumer_group=obj.get_str("consumerGroup"),
            client_id=obj.get_str("clientId"),
            strategy_name=obj.get_str("strategyName"),
            message_model=obj.get_enum("messageModel", MESSAGE_MODEL_ORDINALS),
        )


@dataclasses.dataclass(kw_only=True)
class MessageQueueAssignment:
    """One queue of an assignment and how to read it. A POP queue with queue id -1 stands for every queue
    of the topic on that broker (what a broker hands out when the group shares all its queues)."""

    message_queue: MessageQueue | None = None
    mode: MessageRequestMode = MessageRequestMode.PULL
    attachments: dict[str, str] | None = None

    def to_bean(self) -> fastjson.Bean:
        return bean(
            messageQueue=None if self.message_queue is None else self.message_queue.to_bean(),
            mode=str(self.mode),
            attachments=None
            if self.attachments is None
            else write_map(self.attachments, string_hash, HASH_MAP, str, str),
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        queue = obj.get_raw("messageQueue")
        mode = obj.get_enum("mode", MESSAGE_REQUEST_MODE_ORDINALS, MessageRequestMode.PULL)
        if mode is not None and mode not in MessageRequestMode.__members__:
            raise CodecError(f"{obj.path}.mode: {mode!r} is not PULL or POP")
        attachments = obj.get_map("attachments")
        return cls(
            message_queue=None if queue is None else read_message_queue(queue, f"{obj.path}.messageQueue"),
            mode=MessageRequestMode(mode or MessageRequestMode.PULL),
            attachments=None if attachments is None else {str(k): str(v) for k, v in attachments.items()},
        )


@dataclasses.dataclass(kw_only=True)
class QueryAssignmentResponseBody(JsonBody):
    """The answer to QUERY_ASSIGNMENT: the member's queues, each with its mode (a Java ``Set``)."""

    message_queue_assignments: list[MessageQueueAssignment] | None = None

    def to_bean(self) -> fastjson.Bean:
        assignments = self.message_queue_assignments
        return bean(
            messageQueueAssignments=None if assignments is None else [a.to_bean() for a in assignments]
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(
            message_queue_assignments=obj.items_of(
                "messageQueueAssignments",
                lambda value, path: MessageQueueAssignment.from_object(object_fields(value, path)),
            )
        )
