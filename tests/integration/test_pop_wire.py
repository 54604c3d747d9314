"""POP consumption as Apache's 5.x Java client and broker speak it, read off the loopback interface.

A group is switched to POP with Apache's mqadmin (``setConsumeMode``), then Apache's push consumer (told to
take its assignment from the broker, ``--server-rebalance``) pops, acknowledges, and for the one delivery
its listener refuses, pushes the message's reappearance out (CHANGE_MESSAGE_INVISIBLETIME) and gets it again
through the group's POP retry topic. Everything is captured (``clusters/wiretap.py``) and the project's wire
layer is held to it: every frame re-encodes byte for byte, the POP headers parse, cover, render and order
their keys as Java did (``tests/header_checks.py``), the mode body re-encodes, and the ``POP_CK`` receipt
handles the consumer saw are the ones :mod:`rocketmq_wire.pop_extra` derives from the pop answers, and the
ones its acks and changes send back.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
from collections.abc import Sequence

import pytest

from consumer.pop_requests import parse_assignment_response, query_assignment_request
from producer import BlockingProducer, Message, SendResult
from rocketmq_wire import RequestCode, ResponseCode
from rocketmq_wire.bodies.pop import (
    BatchAckMessageRequestBody,
    MessageRequestMode,
    QueryAssignmentRequestBody,
    QueryAssignmentResponseBody,
    SetMessageRequestModeRequestBody,
)
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.headers.base import CommandHeader
from rocketmq_wire.headers.pop import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
)
from rocketmq_wire.message import const as props
from rocketmq_wire.message.stored import decode_messages
from rocketmq_wire.pop_extra import (
    NORMAL_TOPIC,
    ExtraInfo,
    PoppedMessage,
    after_change,
    popped_extra_infos,
)
from tests.header_checks import header_mismatches, key_order_mismatch, order_is_constrained
from tests.integration.apache import mqadmin
from tests.integration.apache.releases import releases
from tests.integration.clusters.fixture import PROVIDERS
from tests.integration.clusters.model import Cluster, unique_name
from tests.integration.clusters.topics import create_on_every_broker
from tests.integration.clusters.wiretap import Frame, WireTap, unavailable_reason
from tests.integration.cpp_peer.runner import PeerResult
from tests.integration.java_peer.fixtures import JavaClientFactory

pytestmark = pytest.mark.integration

#: Apache's servers whose Java client pops (POP needs 5.x on both ends).
_POP_SETUPS = ("binaries-5.3.3", "binaries-5.5.0")
CAPTURED = [spec for spec in PROVIDERS if spec.id in _POP_SETUPS]
#: The ROCKETMQ serialization's loss of the code is the same on every 5.x release: shown on the newest.
NEWEST = CAPTURED[-1:]

MESSAGES = 4
QUEUES = 4
#: The push consumer's default ``popInvisibleTime``.
JAVA_POP_INVISIBLE_MS = 60_000
#: What the push consumer asks for a delivery its listener answered RECONSUME_LATER (its first delay level).
JAVA_RETRY_INVISIBLE_MS = 10_000
#: The refused delivery comes back once its new invisible time is up and the broker revived it.
CONSUME_TIMEOUT_S = 150.0
#: Long enough for the consumer to start, be assigned its queues and pop a few times in vain.
ROCKETMQ_TIMEOUT_S = 12.0

_REQUEST_HEADERS: dict[int, type[CommandHeader]] = {
    RequestCode.POP_MESSAGE: PopMessageRequestHeader,
    RequestCode.ACK_MESSAGE: AckMessageRequestHeader,
    RequestCode.CHANGE_MESSAGE_INVISIBLETIME: ChangeInvisibleTimeRequestHeader,
}
#: Pop answers carry their header whatever they found; a change of invisible time on success.
_RESPONSE_HEADERS: dict[int, tuple[type[CommandHeader], frozenset[int]]] = {
    RequestCode.POP_MESSAGE: (
        PopMessageResponseHeader,
        frozenset(
            {
                ResponseCode.SUCCESS,
                ResponseCode.PULL_NOT_FOUND,
                ResponseCode.POLLING_FULL,
                ResponseCode.POLLING_TIMEOUT,
            }
        ),
    ),
    RequestCode.CHANGE_MESSAGE_INVISIBLETIME: (
        ChangeInvisibleTimeResponseHeader,
        frozenset({ResponseCode.SUCCESS}),
    ),
}


def _name(code: int) -> str:
    try:
        return RequestCode(code).name
    except ValueError:
        return str(code)


def _port(address: str) -> int:
    return int(address.rpartition(":")[2])


def _send(namesrv: str, topic: str) -> list[SendResult]:
    with BlockingProducer(unique_name("PopProducer"), namesrv) as producer:
        return [
            producer.send(Message(topic, f"pop {n} ✓".encode(), tags="TagA", keys=[f"k{n}"]))
            for n in range(MESSAGES)
        ]


def _answers(
    commands: Sequence[tuple[Frame, RemotingCommand]],
) -> list[tuple[Frame, RemotingCommand, RemotingCommand | None]]:
    """Each request sent to a server, with the answer on its connection (None: none was captured)."""
    answers = {
        (frame.server, frame.connection, cmd.opaque): cmd
        for frame, cmd in commands
        if not frame.to_server and cmd.is_response
    }
    return [
        (frame, cmd, answers.get((frame.server, frame.connection, cmd.opaque)))
        for frame, cmd in commands
        if frame.to_server and not cmd.is_response
    ]


def _check_header(cmd: RemotingCommand, header_cls: type[CommandHeader], what: str) -> list[str]:
    problems = header_mismatches(cmd, header_cls)
    if not problems:
        mismatch = key_order_mismatch(cmd, header_cls)
        if mismatch is not None:
            problems.append(f"key order {mismatch}")
    return [f"{what}: {p}" for p in problems]


@dataclasses.dataclass
class Capture:
    topic: str
    group: str
    brokers: set[str]
    stored: set[tuple[str, int, int]]
    admin: mqadmin.AdminRun
    consumed: PeerResult
    commands: list[tuple[Frame, RemotingCommand]]
    exchanges: list[tuple[Frame, RemotingCommand, RemotingCommand | None]]


async def _capture(
    cluster: Cluster, java_client: JavaClientFactory, serialize: str, extra: list[str], timeout: float
) -> Capture:
    """Topic, messages, POP mode for a new group (mqadmin), then Apache's push consumer in it, captured."""
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    release = next(r for r in releases() if cluster.version == r.version)
    client = java_client(release, serialize)
    ports = {_port(cluster.namesrv): "namesrv"} | {_port(b.addr): b.name for b in cluster.brokers}
    topic = await create_on_every_broker(cluster, "PopWire", queues=QUEUES)
    group = unique_name("PopGroup")
    sent = await asyncio.to_thread(_send, cluster.namesrv, topic)
    tap = WireTap(ports).start()
    try:
        mode_args = ["-c", cluster.cluster_name, "-t", topic, "-g", group, "-m", "POP", "-q", "8"]
        admin = await asyncio.to_thread(
            mqadmin.run, release, "setConsumeMode", mode_args, namesrv=cluster.namesrv, serialize=serialize
        )
        admin.check()
        consumed = await asyncio.to_thread(
            client.push_consume,
            cluster.namesrv,
            group,
            topic,
            MESSAGES,
            extra=["--server-rebalance", *extra],
            timeout=timeout,
        )
    finally:
        frames = await asyncio.to_thread(tap.stop, 0.5)
    brokers = {b.name for b in cluster.brokers}
    assert admin.stdout.count("success") == len(brokers), admin.stdout
    commands = [(frame, frame.command()) for frame in frames]
    exchanges = _answers(commands)
    requests = collections.Counter(_name(cmd.code) for _, cmd, _ in exchanges)
    answered = collections.Counter(_name(cmd.code) for _, cmd, answer in exchanges if answer is not None)
    # What the capture saw, for the record (pytest -s shows it).
    print(f"\n{cluster.provider}/{serialize}: requests {dict(requests)}; answered {dict(answered)}")

    # Every frame a Java process wrote encodes again to exactly its bytes.
    assert all(cmd.language.name == "JAVA" for _, cmd in commands)
    differing = [
        f"{'request' if frame.to_server else 'answer'} code {cmd.code} to {frame.server}"
        for frame, cmd in commands
        if cmd.encode() != frame.data
    ]
    assert not differing, f"{len(differing)} of {len(commands)} frames encode differently: {differing[:10]}"

    # The consume mode mqadmin set.
    modes = 0
    for _frame, cmd, answer in exchanges:
        if cmd.code == RequestCode.SET_MESSAGE_REQUEST_MODE:
            body = SetMessageRequestModeRequestBody.from_json(cmd.body)
            assert (body.topic, body.consumer_group, body.mode) == (topic, group, MessageRequestMode.POP)
            assert body.pop_share_queue_num == 8
            assert body.to_json() == cmd.body
            assert answer is not None and answer.code == ResponseCode.SUCCESS
            modes += 1
    assert modes == len(brokers), requests
    stored = {(r.message_queue.broker_name, r.message_queue.queue_id, r.queue_offset) for r in sent}
    return Capture(topic, group, brokers, stored, admin, consumed, commands, exchanges)


@pytest.mark.parametrize("cluster", CAPTURED, ids=[spec.id for spec in CAPTURED], indirect=True)
async def test_javas_pop_consumer_and_broker_over_json(
    cluster: Cluster, java_client: JavaClientFactory
) -> None:
    """Pop, ack, change of invisible time and the redelivery, all through the project's wire layer."""
    serialize = "JSON"
    capture = await _capture(
        cluster, java_client, serialize, ["--fail-first", "1", "--linger", "1"], CONSUME_TIMEOUT_S
    )
    consumed, exchanges = capture.consumed, capture.exchanges
    topic, group, brokers, stored = capture.topic, capture.group, capture.brokers, capture.stored
    consumed.check()
    requests = collections.Counter(_name(cmd.code) for _, cmd, _ in exchanges)
    answered = collections.Counter(_name(cmd.code) for _, cmd, answer in exchanges if answer is not None)
    # -- the POP conversation happened, in the client's serialization
    assert answered["POP_MESSAGE"] >= 1, requests
    assert answered["ACK_MESSAGE"] >= MESSAGES, requests
    assert answered["CHANGE_MESSAGE_INVISIBLETIME"] >= 1, requests
    pop_codes = {RequestCode.POP_MESSAGE, RequestCode.ACK_MESSAGE, RequestCode.CHANGE_MESSAGE_INVISIBLETIME}
    assert {cmd.serialize_type.name for _, cmd, _ in exchanges if cmd.code in pop_codes} == {serialize}

    # -- headers: parse, cover every entry, render the captured strings, land keys in Java's order
    failures: list[str] = []
    checked = constrained = 0
    for _frame, cmd, answer in exchanges:
        request_cls = _REQUEST_HEADERS.get(cmd.code)
        if request_cls is not None:
            failures += _check_header(cmd, request_cls, f"{RequestCode(cmd.code).name} request")
            constrained += order_is_constrained(cmd, request_cls)
            checked += 1
        response = _RESPONSE_HEADERS.get(cmd.code)
        if response is not None and answer is not None and answer.code in response[1]:
            if cmd.code == RequestCode.POP_MESSAGE and not answer.ext_fields:
                continue  # a long poll the broker ended on its own may answer without a header
            failures += _check_header(answer, response[0], f"{RequestCode(cmd.code).name} answer")
            constrained += order_is_constrained(answer, response[0])
            checked += 1
        if cmd.code == RequestCode.ACK_MESSAGE and answer is not None:
            # An ack is answered by its code alone.
            assert (answer.code, answer.fields()) == (ResponseCode.SUCCESS, {}), answer
    assert not failures, failures[:10]
    assert checked >= MESSAGES + 3
    print(f"{checked} POP headers checked, {constrained} with a key sharing its bucket")

    # -- QUERY_ASSIGNMENT: Java's request body is the one the project builds from the same values, and
    #    the broker's answer reads as POP for the topic
    queried = 0
    for _frame, cmd, answer in exchanges:
        if cmd.code != RequestCode.QUERY_ASSIGNMENT or cmd.body is None:
            continue
        asked = QueryAssignmentRequestBody.from_json(cmd.body)
        ours = query_assignment_request(
            asked.topic or "",
            group=asked.consumer_group or "",
            client_id=asked.client_id or "",
            strategy_name=asked.strategy_name or "",
            message_model=asked.message_model or "",
        )
        assert ours.body == cmd.body, (ours.body, cmd.body)
        if asked.topic == topic and answer is not None and answer.code == ResponseCode.SUCCESS:
            assert QueryAssignmentResponseBody.from_json(answer.body).to_json() == answer.body
            assigned = parse_assignment_response(answer, "captured")
            assert assigned and {a.mode for a in assigned} == {MessageRequestMode.POP}
            assert {a.message_queue.broker_name for a in assigned if a.message_queue} <= brokers
            queried += 1
    assert queried >= 1, requests

    # -- a batch ack, should the client send one, re-encodes as well
    for _frame, cmd, _answer in exchanges:
        if cmd.code == RequestCode.BATCH_ACK_MESSAGE:
            assert BatchAckMessageRequestBody.from_json(cmd.body).to_json() == cmd.body

    # -- receipt handles: what the broker's pop answers make of each message, as Java's client does
    derived: set[str] = set()
    pop_answers = 0
    for frame, cmd, answer in exchanges:
        if cmd.code != RequestCode.POP_MESSAGE or answer is None or answer.code != ResponseCode.SUCCESS:
            continue
        pop_answers += 1
        request = PopMessageRequestHeader.from_ext(cmd.fields())
        header = PopMessageResponseHeader.from_ext(answer.fields())
        assert header.invisible_time == request.invisible_time == JAVA_POP_INVISIBLE_MS
        assert request.bname == frame.server  # the broker the client meant, by name
        messages = decode_messages(answer.body)
        popped = [
            PoppedMessage(m.topic, m.queue_id, m.queue_offset, m.properties.get(props.POP_CK))
            for m in messages
        ]
        for info, m in zip(popped_extra_infos(header, frame.server, popped), messages, strict=True):
            assert (info.queue_id, info.queue_offset, info.broker_name) == (
                m.queue_id,
                m.queue_offset,
                frame.server,
            )
            assert (info.pop_time, info.revive_qid) == (header.pop_time, header.revive_qid)
            derived.add(info.text())
    assert pop_answers >= 1

    # -- what the consumer saw: each delivery's POP_CK is one of those, and names where the message is
    deliveries = consumed.of("message")
    assert len(consumed.messages()) == MESSAGES
    assert len(deliveries) == MESSAGES + 1  # the refused one came back once
    handles: dict[str, ExtraInfo] = {}
    retried = 0
    for event in deliveries:
        text = event["properties"][props.POP_CK]
        info = ExtraInfo.parse(text)
        assert info.text() == text
        assert text in derived, (text, sorted(derived))
        assert info.broker_name in brokers
        assert (info.queue_id, info.queue_offset) == (event["queue_id"], event["queue_offset"])
        assert info.ck_queue_offset <= info.queue_offset
        assert info.invisible_time == JAVA_POP_INVISIBLE_MS
        assert not info.is_order
        assert event["properties"][props.FIRST_POP_TIME]
        if info.retry == NORMAL_TOPIC:
            assert (info.broker_name, info.queue_id, info.queue_offset) in stored
        else:
            retried += 1
            assert event["reconsume_times"] >= 1
        handles[text] = info
    assert retried == 1, [e["properties"][props.POP_CK] for e in deliveries]

    # -- acks and changes send the handle back whole, with its queue, offset and real topic beside it
    acked = changed = 0
    for frame, cmd, answer in exchanges:
        if cmd.code == RequestCode.ACK_MESSAGE:
            ack = AckMessageRequestHeader.from_ext(cmd.fields())
            assert ack.extra_info in handles, ack.extra_info
            info = handles[ack.extra_info]
            assert (ack.queue_id, ack.offset, ack.consumer_group) == (info.queue_id, info.queue_offset, group)
            assert ack.topic == info.real_topic(topic, group)
            assert ack.bname == info.broker_name == frame.server
            acked += 1
        elif cmd.code == RequestCode.CHANGE_MESSAGE_INVISIBLETIME:
            change = ChangeInvisibleTimeRequestHeader.from_ext(cmd.fields())
            assert change.extra_info in handles, change.extra_info
            info = handles[change.extra_info]
            assert (change.queue_id, change.offset, change.topic) == (
                info.queue_id,
                info.queue_offset,
                info.real_topic(topic, group),
            )
            assert change.invisible_time == JAVA_RETRY_INVISIBLE_MS
            assert answer is not None and answer.code == ResponseCode.SUCCESS
            new = after_change(
                change, ChangeInvisibleTimeResponseHeader.from_ext(answer.fields()), frame.server
            )
            assert (new.ck_queue_offset, new.queue_offset, new.invisible_time) == (
                info.queue_offset,
                info.queue_offset,
                JAVA_RETRY_INVISIBLE_MS,
            )
            assert new.pop_time >= info.pop_time
            changed += 1
    assert acked >= MESSAGES and changed >= 1


@pytest.mark.parametrize("cluster", NEWEST, ids=[spec.id for spec in NEWEST], indirect=True)
async def test_javas_pop_requests_lose_their_code_in_the_rocketmq_serialization(
    cluster: Cluster, java_client: JavaClientFactory
) -> None:
    """The ROCKETMQ header holds a request code in 16 bits and Java writes ``(short) code``: POP_MESSAGE
    (200050) arrives as 3442, which the broker does not know. Apache's POP consumer gets nothing this way;
    its headers are intact all the same."""
    capture = await _capture(cluster, java_client, "ROCKETMQ", [], ROCKETMQ_TIMEOUT_S)
    assert capture.consumed.messages(acknowledged_only=False) == []
    assert capture.consumed.of("timeout"), capture.consumed.describe()
    truncated = RequestCode.POP_MESSAGE & 0xFFFF
    pops = [(cmd, answer) for _, cmd, answer in capture.exchanges if cmd.code == truncated]
    assert pops, "no POP_MESSAGE request was captured"
    failures: list[str] = []
    for cmd, answer in pops:
        assert cmd.serialize_type.name == "ROCKETMQ"
        failures += _check_header(cmd, PopMessageRequestHeader, f"POP_MESSAGE request (as {truncated})")
        header = PopMessageRequestHeader.from_ext(cmd.fields())
        assert (header.topic, header.consumer_group) == (capture.topic, capture.group)
        if answer is not None:
            assert answer.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED, answer
            assert f"request type {truncated} not supported" in (answer.remark or "")
    assert not failures, failures[:10]
    assert not [cmd for _, cmd, _ in capture.exchanges if cmd.code in _REQUEST_HEADERS]
