"""What the producer sends, compared byte for byte with what Apache's Java producer sent in the captures.

For every request the Java ``DefaultMQProducer`` / ``TransactionMQProducer`` made (sends, batches, end
transaction, heartbeats, unregistration, route look-ups), the same inputs -- message, unique id, queue, born
timestamp, group -- go through this producer's request builders; the command, stamped with the capture's
language, opaque and version, must encode to exactly the captured frame. That covers the header field names
and order, the properties string layout, the compression flag and compressed body, and the batch body.
"""

from __future__ import annotations

import zlib

import pytest

from client.heartbeat import heartbeat_body, heartbeat_request, unregister_request
from client.namesrv import route_request
from producer.result import LocalTransactionState, MessageQueue, SendResult, SendStatus
from producer.sender import prepare_batch, prepare_message, properties_flavour, send_request
from producer.transaction import end_transaction_request
from rocketmq_wire.bodies.heartbeat import HeartbeatData
from rocketmq_wire.codes import LanguageCode, RequestCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.headers.send import SendMessageRequestHeaderV2, SendMessageResponseHeader
from rocketmq_wire.headers.transaction import EndTransactionRequestHeader
from rocketmq_wire.message import Message, decode_batch, decode_properties, sysflag
from rocketmq_wire.message import const as props
from tests.golden import GoldenFrame, load_golden, request_of

PRODUCER_GROUPS = ("GoldenProducerGroup", "GoldenTxGroup")
_VERDICTS = {
    8: LocalTransactionState.COMMIT_MESSAGE,
    12: LocalTransactionState.ROLLBACK_MESSAGE,
    0: LocalTransactionState.UNKNOWN,
}


def java_frames(*codes: int) -> list[GoldenFrame]:
    return [
        f
        for f in load_golden()
        if f.from_java
        and f.kind in ("request", "oneway")
        and f.code in codes
        and f.direction.startswith("to-")
    ]


def producer_sends() -> list[GoldenFrame]:
    frames = []
    for frame in java_frames(RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
        cmd = RemotingCommand.decode(frame.frame)
        if cmd.fields().get("a") in PRODUCER_GROUPS:
            frames.append(frame)
    return frames


def stamp(cmd: RemotingCommand, like: RemotingCommand) -> bytes:
    """Our command with the capture's transport-level attributes (language, opaque, version, flags)."""
    cmd.language = LanguageCode.JAVA
    cmd.opaque = like.opaque
    cmd.version = like.version
    cmd.serialize_type = like.serialize_type
    if like.is_oneway:
        cmd.mark_oneway()
    return cmd.encode()


def message_from(topic: str, body: bytes, properties: str, flag: int) -> tuple[Message, dict[str, str]]:
    """The user's message behind a captured properties string, and the system properties the send added."""
    message, added = Message.from_properties(topic, body, decode_properties(properties), flag)
    return message, added


def test_the_captures_hold_the_java_producers_requests() -> None:
    sends = producer_sends()
    assert len(sends) >= 4 * 8, "each capture: 6 sends, 1 oneway, 1 batch from the producer; 2 half messages"
    assert {f.capture for f in sends} == {
        "java498-json",
        "java498-rocketmq",
        "java533-json",
        "java533-rocketmq",
    }


@pytest.mark.parametrize("frame", producer_sends(), ids=lambda f: f.id)
def test_send_request_is_byte_identical_to_javas(frame: GoldenFrame) -> None:
    golden = RemotingCommand.decode(frame.frame)
    header = golden.read_header(SendMessageRequestHeaderV2)
    assert header.topic and header.properties is not None and header.broker_name
    flavour = properties_flavour(golden.version)
    queue = MessageQueue(header.topic, header.broker_name, header.queue_id or 0)
    if golden.code == RequestCode.SEND_BATCH_MESSAGE:
        entries = decode_batch(golden.body)
        messages, ids = [], []
        for entry in entries:
            message, added = message_from(header.topic, entry.body, entry.properties_string, entry.flag)
            messages.append(message)
            ids.append(added[props.UNIQ_KEY])
        prepared = prepare_batch(
            messages,
            header.topic,
            ids,
            flavour=flavour,
            max_message_size=4 * 1024 * 1024,
            batch_unique_id=decode_properties(header.properties).get(props.UNIQ_KEY),
        )
        assert prepared.body == golden.body
    else:
        body = golden.body
        if (header.sys_flag or 0) & sysflag.COMPRESSED:
            body = zlib.decompress(body)
        message, added = message_from(header.topic, body, header.properties, header.flag or 0)
        unique_id = added.pop(props.UNIQ_KEY)
        prepared = prepare_message(
            message,
            header.topic,
            unique_id,
            flavour=flavour,
            max_message_size=4 * 1024 * 1024,
            compress_over=4096,
            compress_level=5,
            extra_properties=added,
        )
        assert prepared.sys_flag == header.sys_flag
    assert prepared.properties == header.properties
    ours = send_request(
        prepared,
        group=header.producer_group or "",
        queue=queue,
        create_topic_key="TBW102",
        default_topic_queue_nums=4,
        unit_mode=False,
        born_timestamp=header.born_timestamp,
    )
    assert stamp(ours, golden) == frame.frame


def test_a_compressed_body_was_among_them() -> None:
    flags = {RemotingCommand.decode(f.frame).fields()["f"] for f in producer_sends()}
    assert {"0", "4", str(0x301)} <= flags


def end_transactions() -> list[GoldenFrame]:
    return java_frames(RequestCode.END_TRANSACTION)


@pytest.mark.parametrize("frame", end_transactions(), ids=lambda f: f.id)
def test_end_transaction_is_byte_identical_to_javas(frame: GoldenFrame) -> None:
    golden = RemotingCommand.decode(frame.frame)
    end = golden.read_header(EndTransactionRequestHeader)
    # the half message this verdict is about, and the broker's answer to it
    half = next(
        f
        for f in producer_sends()
        if f.capture == frame.capture
        and decode_properties(RemotingCommand.decode(f.frame).fields()["i"]).get(props.UNIQ_KEY) == end.msg_id
    )
    half_cmd = RemotingCommand.decode(half.frame)
    answer = next(
        f
        for f in load_golden()
        if f.kind == "response" and request_of(f) is half and f.capture == half.capture
    )
    response = RemotingCommand.decode(answer.frame).read_header(SendMessageResponseHeader)
    result = SendResult(
        status=SendStatus.SEND_OK,
        msg_id=end.msg_id or "",
        offset_msg_id=response.msg_id,
        message_queue=MessageQueue(half_cmd.fields()["b"], half_cmd.fields()["n"], response.queue_id or 0),
        queue_offset=response.queue_offset or 0,
        transaction_id=response.transaction_id,
    )
    ours = end_transaction_request(
        result,
        _VERDICTS[end.commit_or_rollback or 0],
        group=half_cmd.fields()["a"],
        wire_topic=half_cmd.fields()["b"],
        version=golden.version,
    )
    assert stamp(ours, golden) == frame.frame


def test_both_verdicts_were_captured() -> None:
    verdicts = {RemotingCommand.decode(f.frame).fields()["commitOrRollback"] for f in end_transactions()}
    assert verdicts == {"8", "12"}


def one_producer_body(client_id: str, group: str, version: int) -> bytes:
    """The heartbeat body of a client instance whose only member is a producer of ``group``."""
    return heartbeat_body(client_id, [group], [], version)


def producer_heartbeats() -> list[GoldenFrame]:
    frames = []
    for frame in java_frames(RequestCode.HEART_BEAT):
        if any(group.encode() in frame.body for group in PRODUCER_GROUPS):
            frames.append(frame)
    return frames


@pytest.mark.parametrize("frame", producer_heartbeats(), ids=lambda f: f.id)
def test_heartbeat_is_byte_identical_to_javas(frame: GoldenFrame) -> None:
    golden = RemotingCommand.decode(frame.frame)
    data = HeartbeatData.from_json(golden.body)
    groups = [p.group_name for p in data.producer_data_set if p.group_name != "CLIENT_INNER_PRODUCER"]
    assert data.client_id is not None and len(groups) == 1 and groups[0] is not None
    body = one_producer_body(data.client_id, groups[0], golden.version)
    assert body == golden.body
    assert stamp(heartbeat_request(body, golden.version), golden) == frame.frame


def test_a_4x_producer_heartbeat_has_the_4x_layout() -> None:
    body = one_producer_body("192.0.2.2@1#2", "G", 409)
    java_498_keys = [
        f.body[: f.body.index(b":")]
        for f in java_frames(RequestCode.HEART_BEAT)
        if f.capture.startswith("java498")
    ]
    assert java_498_keys and all(k == b'{"clientID"' for k in java_498_keys)
    text = body.decode()
    assert text == (
        '{"clientID":"192.0.2.2@1#2","consumerDataSet":[],'
        '"producerDataSet":[{"groupName":"CLIENT_INNER_PRODUCER"},{"groupName":"G"}]}'
    )


def unregisters() -> list[GoldenFrame]:
    return [
        f
        for f in java_frames(RequestCode.UNREGISTER_CLIENT)
        if set(RemotingCommand.decode(f.frame).fields()) == {"clientID", "producerGroup"}
    ]


@pytest.mark.parametrize("frame", unregisters(), ids=lambda f: f.id)
def test_unregister_is_byte_identical_to_javas(frame: GoldenFrame) -> None:
    golden = RemotingCommand.decode(frame.frame)
    fields = golden.fields()
    assert stamp(unregister_request(fields["clientID"], fields["producerGroup"]), golden) == frame.frame


def route_lookups() -> list[GoldenFrame]:
    return [
        f
        for f in java_frames(RequestCode.GET_ROUTEINFO_BY_TOPIC)
        if set(RemotingCommand.decode(f.frame).fields()) == {"topic"}
    ]


@pytest.mark.parametrize("frame", route_lookups(), ids=lambda f: f.id)
def test_route_request_is_byte_identical_to_javas(frame: GoldenFrame) -> None:
    golden = RemotingCommand.decode(frame.frame)
    assert stamp(route_request(golden.fields()["topic"]), golden) == frame.frame


def test_each_kind_was_compared() -> None:
    counts = {
        "sends": len(producer_sends()),
        "end": len(end_transactions()),
        "heartbeats": len(producer_heartbeats()),
        "unregister": len(unregisters()),
        "routes": len(route_lookups()),
    }
    assert all(counts.values()), counts
