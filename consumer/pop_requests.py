"""POP requests as Java's client builds them, and its reading of their answers; no I/O.

A popped message is named by its receipt handle, the ``POP_CK`` property the client derives from the pop
answer (:mod:`rocketmq_wire.pop_extra`). Every later request about it -- ACK_MESSAGE, BATCH_ACK_MESSAGE,
CHANGE_MESSAGE_INVISIBLETIME -- is built from that handle alone, as Java's ``DefaultMQPushConsumerImpl``
builds them, so a message received by one consumer can be acknowledged by another of the same group.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Sequence

from consumer.errors import BrokerError, ConsumerError
from rocketmq_wire.bodies.pop import (
    BatchAck,
    BatchAckMessageRequestBody,
    MessageQueueAssignment,
    QueryAssignmentRequestBody,
    QueryAssignmentResponseBody,
)
from rocketmq_wire.codes import RequestCode, ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.pop import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
)
from rocketmq_wire.message import MessageExt, decode_messages, encode_properties
from rocketmq_wire.message import const as props
from rocketmq_wire.pop_extra import (
    ExtraInfo,
    PoppedMessage,
    after_change,
    offset_info_key,
    parse_order_count_info,
    popped_extra_infos,
    queue_offset_key,
)

#: ``initMode``: where a group that never popped a queue starts (Java's ``ConsumeInitMode``).
INIT_MODE_MIN = 0
INIT_MODE_MAX = 1
#: Java's client waits this much longer than the long poll it asks the broker for.
POLL_TIMEOUT_MARGIN_MS = 10_000


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PopSpec:
    """One POP_MESSAGE: which group pops what from which broker, how many, hidden for how long.

    ``queue_id`` -1 pops from every queue of the topic on that broker (what the 5.x proxy asks for);
    ``poll_time_ms`` 0 answers at once, more holds the request while nothing is there (long polling).
    """

    group: str
    topic: str
    broker_name: str
    max_nums: int
    invisible_time_ms: int
    poll_time_ms: int
    queue_id: int = -1
    init_mode: int = INIT_MODE_MAX
    expression_type: str | None = None
    expression: str | None = None
    order: bool = False
    attempt_id: str | None = None


def pop_request(spec: PopSpec, now_ms: int) -> RemotingCommand:
    """POP_MESSAGE with the fields Java's ``PullAPIWrapper.popAsync`` sets (``bornTime`` is ``now_ms``)."""
    header = PopMessageRequestHeader(
        consumer_group=spec.group,
        topic=spec.topic,
        queue_id=spec.queue_id,
        max_msg_nums=spec.max_nums,
        invisible_time=spec.invisible_time_ms,
        init_mode=spec.init_mode,
        exp_type=spec.expression_type,
        exp=spec.expression,
        order=spec.order,
        attempt_id=spec.attempt_id,
        bname=spec.broker_name,
        poll_time=spec.poll_time_ms,
        born_time=now_ms if spec.poll_time_ms > 0 else 0,
    )
    return RemotingCommand.request(RequestCode.POP_MESSAGE, header)


def pop_timeout_ms(spec: PopSpec, request_timeout_ms: float) -> float:
    """How long to wait for the answer: a long poll's time and a margin, else the usual request time."""
    return spec.poll_time_ms + POLL_TIMEOUT_MARGIN_MS if spec.poll_time_ms > 0 else request_timeout_ms


class PopStatus(enum.Enum):
    FOUND = "FOUND"
    #: Nothing to pop within the poll time (PULL_NOT_FOUND or POLLING_TIMEOUT).
    NO_NEW_MSG = "NO_NEW_MSG"
    #: The broker holds as many long polls as it takes; ask again later.
    POLLING_FULL = "POLLING_FULL"


_STATUS_BY_CODE: dict[int, PopStatus] = {
    ResponseCode.SUCCESS: PopStatus.FOUND,
    ResponseCode.POLLING_FULL: PopStatus.POLLING_FULL,
    ResponseCode.POLLING_TIMEOUT: PopStatus.NO_NEW_MSG,
    ResponseCode.PULL_NOT_FOUND: PopStatus.NO_NEW_MSG,
}


@dataclasses.dataclass(slots=True)
class PopResult:
    status: PopStatus
    messages: list[MessageExt]
    #: Messages the broker still had for the group when it answered.
    rest_num: int


def parse_pop_response(
    response: RemotingCommand, *, broker_name: str, topic: str, order: bool, addr: str
) -> PopResult:
    """The messages of a pop answer, each with its receipt handle (``POP_CK``) and ``1ST_POP_TIME``.

    As Java's ``processPopResponse``: every message is shown under the popped ``topic`` (a redelivery comes
    from the group's POP retry topic; its handle says so), and an orderly pop's per-message attempt counts
    become the messages' reconsume times. Raises :class:`BrokerError` for a refusal and
    :class:`ConsumerError` for an answer that does not read.
    """
    status = _STATUS_BY_CODE.get(response.code)
    if status is None:
        raise BrokerError(response.code, response.remark, addr)
    try:
        header = response.read_header(PopMessageResponseHeader)
        if status is not PopStatus.FOUND:
            return PopResult(status, [], header.rest_num or 0)
        messages = decode_messages(response.body)
        handles = popped_extra_infos(
            header,
            broker_name,
            [
                PoppedMessage(m.topic, m.queue_id, m.queue_offset, m.properties.get(props.POP_CK))
                for m in messages
            ],
        )
        counts = parse_order_count_info(header.order_count_info) if order else None
    except (CodecError, ValueError) as exc:
        raise ConsumerError(f"broker {addr} sent an unreadable pop answer: {exc}") from exc
    for message, handle in zip(messages, handles, strict=True):
        added: dict[str, str] = {}
        if props.POP_CK not in message.properties:
            added[props.POP_CK] = handle.text()
            if counts:
                count = counts.get(
                    f"{handle.retry}@{queue_offset_key(message.queue_id, message.queue_offset)}"
                )
                if count is None:
                    count = counts.get(offset_info_key(handle.retry, message.queue_id))
                if count:
                    message.reconsume_times = count
        if props.FIRST_POP_TIME not in message.properties:
            added[props.FIRST_POP_TIME] = str(header.pop_time)
        if added:
            message.append_properties(encode_properties(added))
        message.topic = topic
    return PopResult(status, messages, header.rest_num or 0)


def receipt_handle(message: MessageExt) -> ExtraInfo:
    """The receipt handle of a popped message; ``ValueError`` for a message that was not popped."""
    text = message.properties.get(props.POP_CK)
    if text is None:
        raise ValueError(f"message {message.msg_id} was not popped: it has no POP_CK")
    try:
        handle = ExtraInfo.parse(text)
    except CodecError as exc:
        raise ValueError(f"message {message.msg_id}: unreadable receipt handle: {exc}") from exc
    if handle.queue_offset is None:
        raise ValueError(f"message {message.msg_id}: the receipt handle {text!r} names no queue offset")
    return handle


def ack_request(handle: ExtraInfo, *, group: str, topic: str) -> RemotingCommand:
    """ACK_MESSAGE for one message; ``topic`` is the one it was popped as (the handle says whether the
    broker has it in the group's retry topic)."""
    header = AckMessageRequestHeader(
        topic=handle.real_topic(topic, group),
        queue_id=handle.queue_id,
        offset=handle.queue_offset,
        consumer_group=group,
        extra_info=handle.text(),
        bname=handle.broker_name,
    )
    return RemotingCommand.request(RequestCode.ACK_MESSAGE, header)


def batch_ack_request(handles: Sequence[ExtraInfo], *, group: str, topic: str) -> RemotingCommand:
    """BATCH_ACK_MESSAGE for messages of one broker: one entry per checkpoint, a bit per message, merged as
    Java's ``batchAckMessageAsync`` merges them (retry mark, queue, checkpoint start and pop time)."""
    if not handles:
        raise ValueError("a batch ack needs at least one message")
    acks: dict[tuple[str, int, int, int], tuple[BatchAck, list[int]]] = {}
    for handle in handles:
        key = (handle.retry, handle.queue_id, handle.ck_queue_offset, handle.pop_time)
        entry = acks.get(key)
        if entry is None:
            ack = BatchAck(
                consumer_group=group,
                topic=topic,
                retry=handle.retry,
                start_offset=handle.ck_queue_offset,
                queue_id=handle.queue_id,
                revive_queue_id=handle.revive_qid,
                pop_time=handle.pop_time,
                invisible_time=handle.invisible_time,
            )
            entry = acks[key] = (ack, [])
        entry[1].append((handle.queue_offset or 0) - handle.ck_queue_offset)
    batch = []
    for ack, bits in acks.values():
        ack.bits = tuple(sorted(set(bits)))
        batch.append(ack)
    body = BatchAckMessageRequestBody(broker_name=handles[0].broker_name, acks=batch)
    return RemotingCommand.request(RequestCode.BATCH_ACK_MESSAGE, body=body.to_json())


def change_invisible_request(
    handle: ExtraInfo, *, group: str, topic: str, invisible_time_ms: int
) -> tuple[RemotingCommand, ChangeInvisibleTimeRequestHeader]:
    """CHANGE_MESSAGE_INVISIBLETIME: hide the message ``invisible_time_ms`` from now (0: show it again)."""
    header = ChangeInvisibleTimeRequestHeader(
        topic=handle.real_topic(topic, group),
        queue_id=handle.queue_id,
        offset=handle.queue_offset,
        consumer_group=group,
        extra_info=handle.text(),
        invisible_time=invisible_time_ms,
        bname=handle.broker_name,
    )
    return RemotingCommand.request(RequestCode.CHANGE_MESSAGE_INVISIBLETIME, header), header


def parse_change_response(
    response: RemotingCommand, request: ChangeInvisibleTimeRequestHeader, *, broker_name: str, addr: str
) -> ExtraInfo:
    """The message's new receipt handle; :class:`BrokerError` when the broker did not change it (an
    expired or already acknowledged handle)."""
    if response.code != ResponseCode.SUCCESS:
        raise BrokerError(response.code, response.remark, addr)
    try:
        return after_change(request, response.read_header(ChangeInvisibleTimeResponseHeader), broker_name)
    except (CodecError, ValueError) as exc:
        raise ConsumerError(f"broker {addr} sent an unreadable answer to a change: {exc}") from exc


def query_assignment_request(
    topic: str, *, group: str, client_id: str, strategy_name: str, message_model: str
) -> RemotingCommand:
    """QUERY_ASSIGNMENT: which queues of ``topic`` this member reads, and whether it pulls or pops them."""
    body = QueryAssignmentRequestBody(
        topic=topic,
        consumer_group=group,
        client_id=client_id,
        strategy_name=strategy_name,
        message_model=message_model,
    )
    return RemotingCommand.request(RequestCode.QUERY_ASSIGNMENT, body=body.to_json())


def parse_assignment_response(response: RemotingCommand, addr: str) -> list[MessageQueueAssignment]:
    """The assigned queues (those naming no queue dropped, as Java drops them)."""
    if response.code != ResponseCode.SUCCESS:
        raise BrokerError(response.code, response.remark, addr)
    try:
        body = QueryAssignmentResponseBody.from_json(response.body)
    except CodecError as exc:
        raise ConsumerError(f"broker {addr} sent an unreadable assignment: {exc}") from exc
    return [a for a in body.message_queue_assignments or [] if a.message_queue is not None]
