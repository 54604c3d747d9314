"""Turning messages into send requests and send responses into results; no I/O, so it is tested directly.

What goes on the wire follows the Java client field for field: the SEND_MESSAGE_V2 header with the
auto-create key and queue count, ``reconsumeTimes`` 0, ``unitMode``/``batch`` flags and the broker name; the
properties string in the Java ``HashMap`` order of the version announced; bodies of 4 KiB or more compressed
with zlib and flagged; batches encoded entry by entry. A message is prepared once and may then be sent to
several queues in turn (retries keep the same unique id and body, as in Java).
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Iterable, Mapping, Sequence

from producer.errors import BrokerError, MessageTooLargeError, MessageValidationError
from producer.result import SendResult, SendStatus
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.codes import MQVersion, RequestCode, ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.send import SendMessageRequestHeaderV2, SendMessageResponseHeader
from rocketmq_wire.message import (
    CompressionType,
    Message,
    PropertiesFlavour,
    compress,
    compressed_sys_flag,
    encode_batch,
    encode_java_properties,
    sysflag,
)
from rocketmq_wire.message import const as props
from rocketmq_wire.topics import (
    DEFAULT_PRODUCER_GROUP,
    DEFAULT_REGION,
    GROUP_MAX_LENGTH,
    NOT_ALLOWED_SEND_TOPICS,
    RETRY_GROUP_TOPIC_PREFIX,
    TOPIC_MAX_LENGTH,
    VALID_NAME_PATTERN,
)

_VALID_NAME = re.compile(VALID_NAME_PATTERN)
_V5_0_0 = MQVersion.NAMES.index("V5_0_0")

#: Broker answers after which Java retries the send on another broker (5.x's list, which adds SYSTEM_BUSY to
#: 4.9.x's; busy answers get a backoff of their own, see ``producer.flow_control``).
RETRYABLE_RESPONSE_CODES: frozenset[int] = frozenset(
    {
        ResponseCode.TOPIC_NOT_EXIST,
        ResponseCode.SYSTEM_BUSY,
        ResponseCode.SERVICE_NOT_AVAILABLE,
        ResponseCode.SYSTEM_ERROR,
        ResponseCode.NO_PERMISSION,
        ResponseCode.NO_BUYER_ID,
        ResponseCode.NOT_IN_CURRENT_UNIT,
    }
)


def properties_flavour(version: int) -> PropertiesFlavour:
    """Java 5.x ends the properties string with a separator, 4.9.x does not: follow the announced version."""
    return PropertiesFlavour.V5 if version >= _V5_0_0 else PropertiesFlavour.V4


# -- validation (Java's Validators) ---------------------------------------------------------------------


def check_topic(topic: str, create_topic_key: str) -> None:
    if not topic or not topic.strip():
        raise MessageValidationError("the topic is blank")
    if len(topic) > TOPIC_MAX_LENGTH:
        raise MessageValidationError(f"the topic is longer than {TOPIC_MAX_LENGTH} characters")
    if not _VALID_NAME.match(topic):
        raise MessageValidationError(
            f"the topic {topic!r} contains characters other than letters, digits, '%', '|', '-' and '_'"
        )
    if topic in NOT_ALLOWED_SEND_TOPICS or topic == create_topic_key:
        raise MessageValidationError(f"sending messages to topic {topic!r} is forbidden")


def check_group(group: str) -> None:
    if not group or not group.strip():
        raise MessageValidationError("the producer group is blank")
    if len(group) > GROUP_MAX_LENGTH:
        raise MessageValidationError(f"the producer group is longer than {GROUP_MAX_LENGTH} characters")
    if not _VALID_NAME.match(group):
        raise MessageValidationError(
            f"the group {group!r} contains characters other than letters, digits, '%', '|', '-' and '_'"
        )
    if group == DEFAULT_PRODUCER_GROUP:
        raise MessageValidationError(f"the producer group may not be {DEFAULT_PRODUCER_GROUP!r}")


def _body_of(message: Message) -> bytes:
    body: object = message.body
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, (bytes, bytearray, memoryview)):
        return bytes(body)
    raise MessageValidationError(f"the message body must be bytes, got {type(body).__name__}")


def normalized(message: Message) -> Message:
    """The message with a plain-string ``keys`` (one key, or several separated by spaces) made a list, and a
    ``str`` body made UTF-8 bytes; a string would otherwise be taken apart character by character."""
    keys: object = message.keys
    body: object = message.body
    if not isinstance(keys, str) and not isinstance(body, str):
        return message
    try:
        return dataclasses.replace(
            message,
            keys=[k for k in keys.split(props.KEY_SEPARATOR) if k] if isinstance(keys, str) else message.keys,
            body=_body_of(message),
        )
    except CodecError as exc:
        raise MessageValidationError(str(exc)) from exc


def check_body(body: bytes, max_size: int) -> None:
    if not body:
        raise MessageValidationError("the message body is empty")
    if len(body) > max_size:
        raise MessageTooLargeError(len(body), max_size)


# -- preparing --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, slots=True)
class PreparedMessage:
    """A message ready for the wire; ``msg_id`` is what the send result reports."""

    topic: str
    body: bytes
    properties: str
    sys_flag: int
    flag: int
    msg_id: str
    batch: bool = False
    #: A timer message (RocketMQ 5): only a broker that reads its delivery time may take it.
    timer: bool = False
    #: A reply to a request: sent with SEND_REPLY_MESSAGE_V2, which a broker pushes to the requester.
    reply: bool = False


def prepare_message(
    message: Message,
    wire_topic: str,
    unique_id: str,
    *,
    flavour: PropertiesFlavour,
    max_message_size: int,
    compress_over: int,
    compress_level: int,
    extra_properties: Mapping[str, str] = {},
) -> PreparedMessage:
    """Validate, give the message its unique id, compress a large body, and flag a half message."""
    message = normalized(message)
    body = _body_of(message)
    check_body(body, max_message_size)
    extra = dict(extra_properties)
    extra[props.UNIQ_KEY] = unique_id
    try:
        properties = message.encode_properties(flavour, extra)
    except CodecError as exc:
        raise MessageValidationError(str(exc)) from exc
    body, sys_flag = _compressed(body, compress_over, compress_level)
    if extra.get(props.TRAN_MSG) == "true":
        sys_flag |= sysflag.TRANSACTION_PREPARED_TYPE
    return PreparedMessage(
        wire_topic, body, properties, sys_flag, message.flag, unique_id, timer=message.is_timer
    )


def prepare_reply(
    body: bytes,
    wire_topic: str,
    unique_id: str,
    reply_properties: Mapping[str, str],
    *,
    flavour: PropertiesFlavour,
    max_message_size: int,
    compress_over: int,
    compress_level: int,
) -> PreparedMessage:
    """A reply as Java's ``createReplyMessage`` leaves it: only the reply's own properties (no tags, keys
    or wait flag), then its unique id; sent with SEND_REPLY_MESSAGE_V2."""
    check_body(body, max_message_size)
    properties = encode_java_properties({**reply_properties, props.UNIQ_KEY: unique_id}, flavour)
    body, sys_flag = _compressed(body, compress_over, compress_level)
    return PreparedMessage(wire_topic, body, properties, sys_flag, 0, unique_id, reply=True)


def _compressed(body: bytes, compress_over: int, level: int) -> tuple[bytes, int]:
    """The body as sent (zlib from ``compress_over`` bytes on, as Java) and its compression flag."""
    if len(body) < compress_over:
        return body, 0
    return compress(body, CompressionType.ZLIB, level), compressed_sys_flag(0, CompressionType.ZLIB)


def prepare_batch(
    messages: Sequence[Message],
    wire_topic: str,
    unique_ids: Iterable[str],
    *,
    flavour: PropertiesFlavour,
    max_message_size: int,
    batch_unique_id: str | None = None,
) -> PreparedMessage:
    """Java's ``MessageBatch``: one topic, no delay, no retry topic, one wait flag; each entry keeps its own
    properties and unique id; the batch body must fit the size limit as a whole. Batches are never compressed.

    ``batch_unique_id`` is the batch's own id, which only 5.x clients put in the header's properties.
    """
    if not messages:
        raise MessageValidationError("a batch needs at least one message")
    first = messages[0]
    entries = []
    for message, unique_id in zip(map(normalized, messages), unique_ids, strict=True):
        if message.topic != first.topic:
            raise MessageValidationError("every message of a batch must have the same topic")
        if message.delay_level > 0:
            raise MessageValidationError("delay levels are not supported in batches")
        if message.is_timer:
            # Apache's broker only reads a delivery time on a message sent alone: a batch is stored at once.
            raise MessageValidationError("a timer message (delivery time or delay) cannot be sent in a batch")
        if message.topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            raise MessageValidationError("retry topics are not supported in batches")
        if message.wait_store_msg_ok != first.wait_store_msg_ok:
            raise MessageValidationError("every message of a batch must have the same wait-store flag")
        body = _body_of(message)
        check_body(body, max_message_size)
        try:
            entry = dataclasses.replace(message, body=body).to_batch_entry(
                flavour, {props.UNIQ_KEY: unique_id}
            )
        except CodecError as exc:
            raise MessageValidationError(str(exc)) from exc
        entries.append((entry, unique_id))
    body = encode_batch(entry for entry, _ in entries)
    check_body(body, max_message_size)
    header_properties: dict[str, str] = {}
    if batch_unique_id is not None:
        header_properties[props.UNIQ_KEY] = batch_unique_id
    header_properties[props.WAIT] = "true" if first.wait_store_msg_ok else "false"
    return PreparedMessage(
        wire_topic,
        body,
        encode_java_properties(header_properties, flavour),
        0,
        0,
        ",".join(unique_id for _, unique_id in entries),
        batch=True,
    )


def send_request(
    prepared: PreparedMessage,
    *,
    group: str,
    queue: MessageQueue,
    create_topic_key: str,
    default_topic_queue_nums: int,
    unit_mode: bool,
    born_timestamp: int | None = None,
) -> RemotingCommand:
    """The SEND_MESSAGE_V2 (or SEND_BATCH_MESSAGE) request for one attempt on ``queue``."""
    header = SendMessageRequestHeaderV2(
        producer_group=group,
        topic=prepared.topic,
        default_topic=create_topic_key,
        default_topic_queue_nums=default_topic_queue_nums,
        queue_id=queue.queue_id,
        sys_flag=prepared.sys_flag,
        born_timestamp=time.time_ns() // 1_000_000 if born_timestamp is None else born_timestamp,
        flag=prepared.flag,
        properties=prepared.properties,
        reconsume_times=0,
        unit_mode=unit_mode,
        batch=prepared.batch,
        broker_name=queue.broker_name,
    )
    if prepared.batch:
        code = RequestCode.SEND_BATCH_MESSAGE
    elif prepared.reply:
        code = RequestCode.SEND_REPLY_MESSAGE_V2
    else:
        code = RequestCode.SEND_MESSAGE_V2
    return RemotingCommand.request(code, header, prepared.body)


def parse_send_response(
    response: RemotingCommand, prepared: PreparedMessage, queue: MessageQueue, addr: str
) -> SendResult:
    """The result of a send; raises :class:`BrokerError` when the broker did not store the message.

    ``queue`` is the queue as the caller should see it (topic without namespace); the queue id reported is
    the broker's, which is the one asked for unless the broker redirected the message.
    """
    status = SendStatus.from_response_code(response.code)
    if status is None:
        raise BrokerError(response.code, response.remark, addr)
    fields = response.fields()
    try:
        header = SendMessageResponseHeader.from_ext(fields)
    except CodecError as exc:
        raise BrokerError(response.code, f"unreadable send response: {exc}", addr) from exc
    return SendResult(
        status=status,
        msg_id=prepared.msg_id,
        offset_msg_id=header.msg_id,
        message_queue=dataclasses.replace(
            queue, queue_id=header.queue_id if header.queue_id is not None else -1
        ),
        queue_offset=header.queue_offset if header.queue_offset is not None else -1,
        transaction_id=header.transaction_id,
        region_id=fields.get(props.MSG_REGION) or DEFAULT_REGION,
        trace_on=fields.get(props.TRACE_ON) != "false",
        recall_handle=header.recall_handle,
    )
