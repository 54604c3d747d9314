"""Timer messages and recall (RocketMQ 5) between the project's producer, Apache's Java client and Apache's
5.x brokers or the project's broker (the same expectations); and the clear refusal a 4.x broker gets.

On each 5.x release, one topic carries timer messages of every form: from the project's producer an
absolute delivery time, a delay in seconds and one in milliseconds; from Java's producer an absolute time
(Java's own ``setDeliverTimeMs``); and two that are recalled before their time, one sent by the project and
recalled by Java, one sent by Java and recalled by the project. Then both Apache's Java consumer and the
project's reader read the topic: each delivered message was stored in the topic no earlier than its time
(less the broker's precision, which floors the time to the second) and within a few seconds after it, and
neither recalled message ever appears, also well after its time.

The Java producer's sends and recall are captured off the loopback interface (where the capture can run),
in the JSON serialization on the first 5.x release and ROCKETMQ on the next: the project's wire layer
re-encodes each frame byte for byte and its RECALL_MESSAGE headers match Java's keys, values and key order.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import Any

import pytest

from admin import Admin
from producer import BrokerError, BrokerVersionError, Message, Producer, SendResult
from rocketmq_wire import RequestCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.headers.send import RecallMessageRequestHeader, RecallMessageResponseHeader
from rocketmq_wire.message import RecallHandle
from rocketmq_wire.message import const as props
from tests.header_checks import header_mismatches, key_order_mismatch
from tests.integration.apache.releases import ApacheRelease, releases
from tests.integration.clusters.fixture import PROVIDERS
from tests.integration.clusters.model import Cluster, unique_name
from tests.integration.clusters.readback import read_topic
from tests.integration.clusters.topics import create_on_every_broker
from tests.integration.clusters.wiretap import Frame, WireTap, unavailable_reason
from tests.integration.java_peer.fixtures import JavaClientFactory

pytestmark = pytest.mark.integration


def _version(release: ApacheRelease | None) -> tuple[int, ...]:
    return tuple(int(part) for part in release.version.split(".")) if release is not None else (0,)


#: Apache's own servers of every 5.x release selected (the suite holds on any of them), the project's
#: broker with the same expectations, and Apache's 4.x.
TIMER_SETUPS = [
    s for s in PROVIDERS if (s.family == "binaries" and _version(s.release) >= (5,)) or s.id == "python"
]
OLD_SETUPS = [s for s in PROVIDERS if s.family == "binaries" and (4,) <= _version(s.release) < (5,)]
#: RECALL_MESSAGE is in Apache's broker and client from this release on.
RECALL_SINCE = (5, 3, 2)
#: The broker floors a delivery time to its ``timerPrecisionMs`` (1 s by default) and, on an exact
#: multiple, one step further: a message may come up to this much before its time.
PRECISION_MS = 1000
#: How late a delivered message may be stored on a loaded 2-core machine.
LATE_MS = 15_000
#: The default ``timerMaxDelaySec`` (3 days) of Apache's brokers.
MAX_DELAY_S = 3 * 24 * 3600


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _assert_on_time(stored_ms: int, due_ms: int, what: str) -> None:
    assert stored_ms >= due_ms - PRECISION_MS, f"{what}: stored {due_ms - stored_ms} ms before its time"
    assert stored_ms <= due_ms + LATE_MS, f"{what}: stored {stored_ms - due_ms} ms after its time"


def _recall_frames_checked(frames: Sequence[tuple[Frame, RemotingCommand]]) -> int:
    """Java's RECALL_MESSAGE requests, and the answers on their connections (from whichever broker, Java's or
    the project's), held to the project's headers; how many requests there were."""
    requests = {
        (frame.connection, cmd.opaque): cmd
        for frame, cmd in frames
        if frame.to_server
        and cmd.code == RequestCode.RECALL_MESSAGE
        and not cmd.is_response
        and cmd.language.name == "JAVA"
    }
    answers = [
        cmd for frame, cmd in frames if not frame.to_server and (frame.connection, cmd.opaque) in requests
    ]
    problems = []
    for cmd in requests.values():
        problems += header_mismatches(cmd, RecallMessageRequestHeader)
        mismatch = key_order_mismatch(cmd, RecallMessageRequestHeader)
        if mismatch is not None:
            problems.append(f"key order {mismatch}")
    for cmd in answers:
        problems += header_mismatches(cmd, RecallMessageResponseHeader)
    assert not problems, problems
    assert len(answers) == len(requests), "an answer to Java's recall was not captured"
    return len(requests)


@pytest.mark.parametrize("cluster", TIMER_SETUPS, ids=[s.id for s in TIMER_SETUPS], indirect=True)
async def test_timer_messages_come_on_time_both_ways_and_recalled_ones_never(
    cluster: Cluster, java_client: JavaClientFactory
) -> None:
    release = cluster_release(cluster)
    recall = _version(release) >= RECALL_SINCE
    # Java's frames in both serializations across the releases: JSON on the first, ROCKETMQ on the next ...
    serialize = ("JSON", "ROCKETMQ")[[s.id for s in TIMER_SETUPS].index(cluster.provider) % 2]
    java = java_client(release, serialize)
    topic = await create_on_every_broker(cluster, "Timer")
    if recall:
        # Apache's brokers refuse recalls unless the operator allows them (``recallMessageEnable``, off by
        # default): turned on live, as an operator would.
        async with Admin(cluster.namesrv) as admin:
            for broker in cluster.brokers:
                await admin.update_broker_config(broker.addr, {"recallMessageEnable": "true"})
    start = _now_ms()
    due_at = start + 6_000
    # The recalled ones are due late enough for two JVMs to start and recall them first.
    recalled_due = start + 20_000
    ours: dict[bytes, tuple[Message, int]] = {
        b"py deliver-at": (Message(topic, b"py deliver-at", deliver_time_ms=due_at), due_at),
        b"py delay-sec": (Message(topic, b"py delay-sec", delay_time_sec=5), 5_000),
        b"py delay-ms": (Message(topic, b"py delay-ms", delay_time_ms=5_500), 5_500),
    }
    async with Producer(unique_name("TimerPg"), cluster.namesrv) as producer:
        results: dict[bytes, SendResult] = {}
        for body, (message, _) in ours.items():
            results[body] = await producer.send(message)
        # the project's timer message that Java recalls, due before the others
        doomed = await producer.send(Message(topic, b"py recalled by java", deliver_time_ms=recalled_due))
        with pytest.raises(BrokerError, match="max delay"):
            await producer.send(Message(topic, b"too far", delay_time_sec=MAX_DELAY_S + 3600))

        specs: list[dict[str, Any]] = [
            {"body": "java deliver-at", "deliver_time_ms": due_at},
            {"body": "java recalled by python", "deliver_time_ms": recalled_due},
        ]
        # Java's frames are captured where the capture can run (root: AF_PACKET on loopback).
        ports = {int(b.addr.rpartition(":")[2]): b.name for b in cluster.brokers}
        tap = WireTap(ports).start() if unavailable_reason() is None else None
        try:
            sent = await asyncio.to_thread(java.send_sync, cluster.namesrv, topic, specs)
            assert sent.ok, sent.describe()
            java_results = sent.of("send_result")
            java_recall = None
            if recall:
                java_recall = await asyncio.to_thread(
                    java.recall, cluster.namesrv, topic, [doomed.recall_handle or ""]
                )
        finally:
            frames = await asyncio.to_thread(tap.stop, 0.5) if tap is not None else []
        if recall:
            handle = java_results[1].get("recall_handle")
            assert handle, java_results
            assert await producer.recall(topic, handle) == java_results[1]["msg_id"]
            assert java_recall is not None
            assert java_recall.ok, java_recall.describe()
            assert [e["msg_id"] for e in java_recall.of("recalled")] == [doomed.msg_id]

    for result in results.values():
        if recall:
            parsed = RecallHandle.decode(result.recall_handle or "")
            assert (parsed.topic, parsed.message_id) == (topic, result.msg_id)
        else:
            assert result.recall_handle is None, "a release without recall handed out a handle"
    if tap is not None:
        decoded = [(f, f.command()) for f in frames]
        java_frames = [(f, c) for f, c in decoded if c.language.name == "JAVA"]
        assert all(c.encode() == f.data for f, c in java_frames), "a Java frame re-encodes differently"
        timer_sends = [
            c
            for f, c in java_frames
            if c.code == RequestCode.SEND_MESSAGE_V2 and props.TIMER_DELIVER_MS in c.fields().get("i", "")
        ]
        assert len(timer_sends) == 2, [c.code for _, c in java_frames]
        if recall:
            assert _recall_frames_checked(decoded) == 1

    delivered = 4
    java_read = await asyncio.to_thread(
        java.pull_consume, cluster.namesrv, unique_name("TimerJavaCg"), topic, count=delivered, timeout=60.0
    )
    assert java_read.ok, java_read.describe()
    by_body = {m.body: m for m in java_read.messages()}
    expected = {b"py deliver-at", b"py delay-sec", b"py delay-ms", b"java deliver-at"}
    if not recall:
        expected |= {b"py recalled by java", b"java recalled by python"}
    # What the topic holds once every delivery time, the recalled ones' included, is well past.
    await asyncio.sleep(max(0.0, (recalled_due + 2 * PRECISION_MS - _now_ms()) / 1000))
    stored = await read_topic(cluster.namesrv, topic, len(expected), timeout_s=30.0)
    assert {m.body for m in stored} == expected
    assert set(by_body) <= expected and len(java_read.messages()) == delivered

    ours_stored = {m.body: m for m in stored}
    for body, (_, due) in ours.items():
        born = ours_stored[body].born_timestamp
        due_ms = due if body == b"py deliver-at" else born + due
        _assert_on_time(ours_stored[body].store_timestamp, due_ms, body.decode())
        if body in by_body:
            _assert_on_time(by_body[body].store_timestamp, due_ms, f"{body.decode()} (Java's read)")
            assert by_body[body].properties.get(props.UNIQ_KEY) == results[body].msg_id
    java_copy = ours_stored[b"java deliver-at"]
    _assert_on_time(java_copy.store_timestamp, due_at, "Java's timer message (project's read)")
    assert java_copy.properties.get(props.TIMER_DELIVER_MS) == str(due_at)


def cluster_release(cluster: Cluster) -> ApacheRelease:
    """The release of Apache's servers; for the project's broker (which answers as 5.3.3, so with recall),
    the newest 5.x release selected, whose Java client then talks to it."""
    spec = next(s for s in PROVIDERS if s.id == cluster.provider)
    if spec.release is not None:
        return spec.release
    return max((r for r in releases() if r.major >= 5), key=_version)


@pytest.mark.parametrize("cluster", OLD_SETUPS, ids=[s.id for s in OLD_SETUPS], indirect=True)
async def test_a_4x_broker_gets_no_timer_message_and_the_sender_is_told_why(cluster: Cluster) -> None:
    topic = await create_on_every_broker(cluster, "TimerOld")
    async with Producer(unique_name("TimerOldPg"), cluster.namesrv) as producer:
        version = "V" + cluster.version.replace(".", "_")
        with pytest.raises(BrokerVersionError, match=rf"needs a V5_0_0 or later broker; .* is {version}"):
            await producer.send(Message(topic, b"later", delay_time_sec=30))
        await producer.send(Message(topic, b"now"))
    stored = await read_topic(cluster.namesrv, topic, 1)
    assert [m.body for m in stored] == [b"now"]
