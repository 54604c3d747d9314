"""The consumers and Apache's C++ client, through the project's NameServer and Broker.

What the C++ producer sends, the project's push consumer receives exactly once with the attributes the C++
client gave; what the project's producer sends, the C++ push consumer receives. The C++ client runs in its
own process (``tests/integration/cpp_peer``); its blocking runner calls go to a thread so the servers, which
live in this test's event loop, keep serving. Skipped, saying what is missing, without the C++ client.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from consumer import ConsumeStatus, MessageExt, MessageQueue, PullConsumer, PushConsumer
from consumer.testing import WAIT_S, Assignments, LocalCluster, Received
from producer import Message, Producer
from tests.integration.cpp_peer.runner import CppClient, PeerProcess, ReceivedMessage

pytestmark = pytest.mark.integration

TOPIC = "Interop"
PEER_TIMEOUT_S = 60.0


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with LocalCluster(tmp_path / "store") as running:
        await running.create_topic(TOPIC, 4)
        yield running


async def test_what_the_cpp_producer_sends_the_push_consumer_gets_once(
    cluster: LocalCluster, cpp_client: CppClient
) -> None:
    specs = [
        cpp_client.message(
            f"from-cpp-{i}", tags="TagA" if i % 2 else "TagB", keys=[f"key-{i}"], properties={"origin": "cpp"}
        )
        for i in range(20)
    ]
    result = await asyncio.to_thread(
        cpp_client.send_sync, cluster.address, TOPIC, specs, group="CppSenders", timeout=PEER_TIMEOUT_S
    )
    sent = result.check().send_results()
    assert [s.status for s in sent] == ["SEND_OK"] * 20

    received = Received()
    consumer = PushConsumer("FromCpp", cluster.address, consume_from="FIRST_OFFSET")
    consumer.subscribe(TOPIC, "TagA || TagB")
    consumer.register_listener(received.handler("py"))
    async with consumer:
        await received.wait_for(20)
    assert received.duplicates() == []
    by_id = {m.client_msg_id: m for m in received.messages}
    assert set(by_id) == {s.msg_id for s in sent}, "the C++ client's message ids"
    for index, outcome in enumerate(sent):
        message = by_id[outcome.msg_id]
        assert message.body == f"from-cpp-{index}".encode()
        assert message.tags == ("TagA" if index % 2 else "TagB")
        assert message.keys == [f"key-{index}"]
        assert message.properties["origin"] == "cpp"
        assert message.queue_offset == outcome.offset


async def test_cpp_orderly_sends_arrive_in_order_at_the_orderly_push_consumer(
    cluster: LocalCluster, cpp_client: CppClient
) -> None:
    specs = [cpp_client.message(f"{i}", sharding_key=i % 2) for i in range(20)]
    result = await asyncio.to_thread(
        cpp_client.send_orderly, cluster.address, TOPIC, specs, group="CppOrdered", timeout=PEER_TIMEOUT_S
    )
    result.check()
    per_queue: dict[int, list[int]] = {}
    done = asyncio.Event()

    async def handle(messages: list[MessageExt], context: object) -> ConsumeStatus:
        for message in messages:
            per_queue.setdefault(message.queue_id, []).append(int(message.body))
        if sum(len(v) for v in per_queue.values()) >= 20:
            done.set()
        return ConsumeStatus.SUCCESS

    consumer = PushConsumer("OrderedFromCpp", cluster.address, consume_from="FIRST_OFFSET")
    consumer.subscribe(TOPIC)
    consumer.register_listener(handle, orderly=True)
    async with consumer:
        async with asyncio.timeout(WAIT_S):
            await done.wait()
    assert per_queue == {0: list(range(0, 20, 2)), 1: list(range(1, 20, 2))}


async def test_what_the_project_producer_sends_the_cpp_push_consumer_gets(
    cluster: LocalCluster, cpp_client: CppClient
) -> None:
    peer = cpp_client.start_push_consumer(cluster.address, "CppReaders", TOPIC, 12, timeout=PEER_TIMEOUT_S)
    try:
        await asyncio.to_thread(peer.wait_for, "ready", PEER_TIMEOUT_S)
        async with Producer("PySenders", cluster.address) as producer:
            sent = [
                await producer.send(Message(TOPIC, f"from-python-{i}".encode(), tags="py", keys=[f"k{i}"]))
                for i in range(12)
            ]
        outcome = await asyncio.to_thread(peer.finish)
    finally:
        await asyncio.to_thread(peer.kill)
    got = outcome.check().messages()
    assert sorted(m.body for m in got) == sorted(f"from-python-{i}".encode() for i in range(12))
    assert {m.msg_id for m in got} == {s.msg_id for s in sent}
    assert {m.tags for m in got} == {"py"}


async def test_the_pull_consumer_reads_what_the_cpp_producer_sent_oneway(
    cluster: LocalCluster, cpp_client: CppClient
) -> None:
    specs = [cpp_client.message(f"oneway-{i}", tags="O") for i in range(10)]
    result = await asyncio.to_thread(
        cpp_client.send_oneway, cluster.address, TOPIC, specs, group="CppOneway", timeout=PEER_TIMEOUT_S
    )
    assert len(result.check().of("sent_oneway")) == 10
    consumer = PullConsumer("OnewayReaders", cluster.address, consume_from="FIRST_OFFSET")
    consumer.subscribe(TOPIC, "O")
    got: list[MessageExt] = []
    async with consumer:
        async with asyncio.timeout(WAIT_S):
            while len(got) < 10:
                got += await consumer.poll(timeout=WAIT_S)
    assert sorted(m.body for m in got) == sorted(f"oneway-{i}".encode() for i in range(10))
    assert {m.tags for m in got} == {"O"}


def _collect(peer: PeerProcess, count: int, timeout: float) -> list[ReceivedMessage]:
    """The first ``count`` messages a running C++ push consumer acknowledges (read as they are printed)."""
    got: list[ReceivedMessage] = []
    for event in peer.events(timeout):
        if event.get("event") == "message" and event.get("consume_status") == "CONSUME_SUCCESS":
            got.append(ReceivedMessage.from_event(event))
            if len(got) >= count:
                break
    return got


async def test_a_group_of_a_cpp_and_a_python_member_shares_the_queues(
    cluster: LocalCluster, cpp_client: CppClient
) -> None:
    """Both clients compute Java's allocation over the same sorted members and queues, so together they
    cover every queue exactly once: every message is consumed by one of them, none by both."""
    seen = Assignments()
    received = Received()
    python = PushConsumer("Mixed", cluster.address, rebalance_listener=seen.listener("py"))
    python.subscribe(TOPIC)
    python.register_listener(received.handler("py"))
    everything = frozenset(
        MessageQueue(topic=TOPIC, broker_name=cluster.broker.config.broker_name, queue_id=i) for i in range(4)
    )
    async with python:
        await seen.wait_until(lambda: seen.of("py", TOPIC) == everything)
        peer = cpp_client.start_push_consumer(cluster.address, "Mixed", TOPIC, 1000, timeout=PEER_TIMEOUT_S)
        try:
            await asyncio.to_thread(peer.wait_for, "ready", PEER_TIMEOUT_S)
            await seen.wait_until(lambda: len(seen.of("py", TOPIC)) == 2)
            mine = {q.queue_id for q in seen.of("py", TOPIC)}
            async with Producer("MixedSenders", cluster.address) as producer:
                sent = [await producer.send(Message(TOPIC, f"m{i}".encode())) for i in range(40)]
            theirs = [s for s in sent if s.message_queue.queue_id not in mine]
            await received.wait_for(len(sent) - len(theirs))
            cpp_got = await asyncio.to_thread(_collect, peer, len(theirs), PEER_TIMEOUT_S)
            # (once the C++ member is killed, the Python one takes its queues over and may rightly get
            # again what the C++ one had not committed yet: the comparison is of what came before)
            python_got = list(received.deliveries)
        finally:
            await asyncio.to_thread(peer.kill)
    python_ids = [d.msg_id for d in python_got]
    cpp_ids = [m.msg_id for m in cpp_got]
    assert sorted(python_ids + cpp_ids) == sorted(s.msg_id for s in sent), "each message once, by one member"
    assert {m.queue_id for m in cpp_got} == {0, 1, 2, 3} - mine
    assert {d.queue.queue_id for d in python_got} == mine
