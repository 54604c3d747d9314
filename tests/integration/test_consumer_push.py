"""The push consumer against the project's NameServer and Broker, in-process on loopback.

Every wait is on an event (a delivery recorded, a rebalance reported, a registration done), bounded by a
timeout that only fires when something is broken; the broker runs on a manual clock where a test needs
delays (retries) to pass.
"""

from __future__ import annotations

import asyncio
import collections
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from broker import Broker, ManualClock
from broker.processors.send_back import ConsumerSendMsgBackProcessor
from broker.testing import BrokerClient
from consumer import (
    ConsumerConfig,
    ConsumeStatus,
    MessageExt,
    MessageModel,
    MessageQueue,
    PushConsumer,
)
from consumer.testing import WAIT_S, Assignments, LocalCluster, Received
from producer import Message, Producer
from producer import MessageQueue as SendQueue
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.headers.offset import UpdateConsumerOffsetRequestHeader
from rocketmq_wire.message import decode_messages
from rocketmq_wire.topics import dlq_topic, retry_topic
from rocketmq_wire.transport import Connection

pytestmark = pytest.mark.integration

TOPIC = "Orders"


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with LocalCluster(tmp_path / "store") as running:
        await running.create_topic(TOPIC, 4)
        yield running


@pytest.fixture
async def producer(cluster: LocalCluster) -> AsyncIterator[Producer]:
    async with Producer("OrderService", cluster.address, rng=random.Random(7)) as running:
        yield running


def _consumer(cluster: LocalCluster, group: str, **kwargs: Any) -> PushConsumer:
    consumer = PushConsumer(group, cluster.address, consume_from="FIRST_OFFSET", **kwargs)
    consumer.subscribe(TOPIC, "*")
    return consumer


def _topic_queues(cluster: LocalCluster, topic: str = TOPIC, count: int = 4) -> frozenset[MessageQueue]:
    name = cluster.broker.config.broker_name
    return frozenset(MessageQueue(topic=topic, broker_name=name, queue_id=i) for i in range(count))


async def test_everything_sent_is_consumed_once_with_all_its_attributes(
    cluster: LocalCluster, producer: Producer
) -> None:
    big = ("compressible " * 1000).encode()
    sent = {}
    for i in range(40):
        message = Message(TOPIC, f"order-{i}".encode(), tags="created" if i % 2 else "paid", keys=[f"k{i}"])
        message.put_user_property("shop", "café")
        result = await producer.send(message)
        sent[result.msg_id] = (message, result)
    compressed = await producer.send(Message(TOPIC, big, tags="big"))

    received = Received()
    consumer = _consumer(cluster, "Auditors")
    consumer.register_listener(received.handler("a"))
    async with consumer:
        await received.wait_for(41)
        assignment = consumer.assignment()
    messages = {message.client_msg_id: message for message in received.messages}
    assert received.duplicates() == []
    assert set(messages) == set(sent) | {compressed.msg_id}
    for msg_id, (message, result) in sent.items():
        got = messages[msg_id]
        assert got.topic == TOPIC and got.body == message.body and got.tags == message.tags
        assert got.keys == message.keys and got.properties["shop"] == "café"
        assert (got.queue_id, got.queue_offset) == (result.message_queue.queue_id, result.queue_offset)
        assert got.msg_id == result.offset_msg_id, "the broker's offset id"
        assert got.store_host == cluster.broker.config.store_host
        assert got.born_timestamp > 0 and got.store_timestamp >= got.born_timestamp
        assert got.reconsume_times == 0
        assert "MIN_OFFSET" in got.properties and "MAX_OFFSET" in got.properties
    assert messages[compressed.msg_id].body == big and messages[compressed.msg_id].is_compressed
    assert _topic_queues(cluster) <= set(assignment)
    # shutdown committed everything that was handled
    store = cluster.broker.store
    for queue_id in range(4):
        committed = cluster.broker.consumer_offsets.query_offset("Auditors", TOPIC, queue_id)
        assert committed == store.get_max_offset(TOPIC, queue_id)


async def test_a_restarted_member_continues_where_the_group_stopped(
    cluster: LocalCluster, producer: Producer
) -> None:
    for i in range(10):
        await producer.send(Message(TOPIC, f"first-{i}".encode()))
    received = Received()
    first = _consumer(cluster, "Resumers")
    first.register_listener(received.handler("first"))
    async with first:
        await received.wait_for(10)
    for i in range(10):
        await producer.send(Message(TOPIC, f"second-{i}".encode()))
    second = _consumer(cluster, "Resumers")
    second.register_listener(received.handler("second"))
    async with second:
        await received.wait_for(20)
    assert sorted(received.bodies("second")) == sorted(f"second-{i}".encode() for i in range(10))
    assert received.duplicates() == []


async def test_two_members_split_the_queues_and_one_takes_over_when_the_other_stops(
    cluster: LocalCluster, producer: Producer
) -> None:
    received = Received()
    seen = Assignments()
    a = _consumer(cluster, "Pair", rebalance_listener=seen.listener("a"))
    b = _consumer(cluster, "Pair", rebalance_listener=seen.listener("b"))
    a.register_listener(received.handler("a"))
    b.register_listener(received.handler("b"))
    everything = _topic_queues(cluster)
    await a.start()
    try:
        await seen.wait_until(lambda: seen.of("a", TOPIC) == everything)
        await b.start()
        try:
            await seen.wait_until(
                lambda: (
                    len(seen.of("a", TOPIC)) == 2
                    and len(seen.of("b", TOPIC)) == 2
                    and seen.of("a", TOPIC) | seen.of("b", TOPIC) == everything
                )
            )
            first_round = [f"one-{i}".encode() for i in range(40)]
            for body in first_round:
                await producer.send(Message(TOPIC, body))
            await received.wait_for(40)
            for delivery in received.deliveries:
                assert delivery.queue in seen.of(delivery.consumer, TOPIC)
            assert received.bodies("a") and received.bodies("b"), "both members consumed"
        finally:
            await b.shutdown()
        await seen.wait_until(lambda: seen.of("a", TOPIC) == everything)
        second_round = [f"two-{i}".encode() for i in range(40)]
        for body in second_round:
            await producer.send(Message(TOPIC, body))
        await received.wait_for(80)
    finally:
        await a.shutdown()
    assert received.duplicates() == []
    assert sorted(received.bodies()) == sorted(first_round + second_round)
    assert set(second_round) <= set(received.bodies("a"))


def _broadcaster(cluster: LocalCluster, tmp_path: Path, instance: str) -> PushConsumer:
    config = ConsumerConfig(local_offset_dir=str(tmp_path / "offsets"), instance_name=instance)
    return _consumer(cluster, "Everyone", message_model=MessageModel.BROADCASTING, config=config)


async def test_broadcasting_gives_every_member_everything_and_resumes_from_its_own_file(
    cluster: LocalCluster, producer: Producer, tmp_path: Path
) -> None:
    received = Received()
    members = [_broadcaster(cluster, tmp_path, f"member-{i}") for i in range(2)]
    for index, member in enumerate(members):
        member.register_listener(received.handler(f"m{index}"))
    bodies = [f"news-{i}".encode() for i in range(20)]
    for body in bodies:
        await producer.send(Message(TOPIC, body))
    for member in members:
        await member.start()
    try:
        await received.wait_for(40)
        for member in members:
            assert member.assignment() == sorted(_topic_queues(cluster), key=lambda q: q.queue_id)
    finally:
        for member in members:
            await member.shutdown()
    for index in range(2):
        assert sorted(received.bodies(f"m{index}")) == sorted(bodies)
    files = sorted((tmp_path / "offsets").glob("*/Everyone/offsets.json"))
    assert [f.parent.parent.name.rpartition("@")[2] for f in files] == ["member-0", "member-1"]
    assert cluster.broker.consumer_offsets.query_offset("Everyone", TOPIC, 0) < 0, "nothing on the broker"

    # member-0 comes back: it reads on from its own file, not from the first offset again
    await producer.send(Message(TOPIC, b"later"))
    again = _broadcaster(cluster, tmp_path, "member-0")
    again.register_listener(received.handler("again"))
    async with again:
        await received.wait_for(41)
    assert received.bodies("again") == [b"later"]


async def test_messages_of_one_sharding_key_arrive_in_order(
    cluster: LocalCluster, producer: Producer
) -> None:
    seen = Assignments()
    order: dict[str, list[int]] = collections.defaultdict(list)
    calls: list[str] = []
    done = asyncio.Event()
    total = 5 * 30

    def orderly_handler(name: str) -> Callable[[list[MessageExt], object], Awaitable[ConsumeStatus]]:
        async def handle(messages: list[MessageExt], context: object) -> ConsumeStatus:
            for message in messages:
                key, _, seq = message.body.decode().partition(":")
                order[key].append(int(seq))
                calls.append(name)
            if sum(len(v) for v in order.values()) >= total:
                done.set()
            await asyncio.sleep(0)  # let the other member interleave
            return ConsumeStatus.SUCCESS

        return handle

    members = []
    for name in ("x", "y"):
        member = _consumer(cluster, "Sequencers", rebalance_listener=seen.listener(name))
        member.register_listener(orderly_handler(name), orderly=True)
        members.append(member)
    everything = _topic_queues(cluster)
    for member in members:
        await member.start()
    try:
        await seen.wait_until(
            lambda: (
                seen.of("x", TOPIC) | seen.of("y", TOPIC) == everything
                and not seen.of("x", TOPIC) & seen.of("y", TOPIC)
                and len(seen.of("x", TOPIC)) == 2
            )
        )
        for seq in range(30):
            for key in ("alice", "bob", "carol", "dave", "erin"):
                await producer.send(Message(TOPIC, f"{key}:{seq}".encode()), sharding_key=key)
        async with asyncio.timeout(WAIT_S):
            await done.wait()
        locks = cluster.broker.lock_manager
        for name, member in zip(("x", "y"), members, strict=True):
            for queue in seen.of(name, TOPIC):
                assert locks.holder("Sequencers", queue) == member.client_id
    finally:
        for member in members:
            await member.shutdown()
    assert {key: seqs for key, seqs in order.items()} == {
        key: list(range(30)) for key in ("alice", "bob", "carol", "dave", "erin")
    }
    assert set(calls) == {"x", "y"}


async def test_an_orderly_handler_that_suspends_gets_the_same_messages_again(
    cluster: LocalCluster, producer: Producer
) -> None:
    attempts: list[tuple[bytes, int]] = []
    done = asyncio.Event()

    async def handle(messages: list[MessageExt], context: object) -> ConsumeStatus:
        message = messages[0]
        attempts.append((message.body, message.reconsume_times))
        if message.body == b"k:0" and message.reconsume_times < 2:
            return ConsumeStatus.SUSPEND_CURRENT_QUEUE_A_MOMENT
        if message.body == b"k:1":
            done.set()
        return ConsumeStatus.SUCCESS

    consumer = _consumer(cluster, "Patient", config=ConsumerConfig(suspend_current_queue_ms=10))
    consumer.register_listener(handle, orderly=True)
    await producer.send(Message(TOPIC, b"k:0"), sharding_key="k")
    await producer.send(Message(TOPIC, b"k:1"), sharding_key="k")
    async with consumer:
        async with asyncio.timeout(WAIT_S):
            await done.wait()
    assert attempts == [(b"k:0", 0), (b"k:0", 1), (b"k:0", 2), (b"k:1", 0)]


async def test_a_tag_subscription_skips_other_tags_and_commits_past_them(
    cluster: LocalCluster, producer: Producer
) -> None:
    broker_name = cluster.broker.config.broker_name
    for queue_id in range(4):
        queue = SendQueue(TOPIC, broker_name, queue_id)
        for tag in ("B", "A", "B", "C"):
            await producer.send(Message(TOPIC, f"{queue_id}-{tag}".encode(), tags=tag), queue=queue)
    received = Received()
    consumer = PushConsumer("Picky", cluster.address, consume_from="FIRST_OFFSET")
    consumer.subscribe(TOPIC, "A || C")
    consumer.register_listener(received.handler("p"))
    async with consumer:
        await received.wait_for(8)
    assert sorted(received.bodies()) == sorted(f"{q}-{t}".encode() for q in range(4) for t in "AC")
    for queue_id in range(4):
        assert cluster.broker.consumer_offsets.query_offset("Picky", TOPIC, queue_id) == 4


async def test_a_commit_beyond_the_queue_is_corrected_from_the_brokers_answer(
    cluster: LocalCluster, producer: Producer
) -> None:
    """PULL_OFFSET_MOVED: the broker says where the queue really is; the consumer commits that, gives the
    queue up and takes it again from there."""
    broker = cluster.broker
    async with BrokerClient(broker.address) as client:
        header = UpdateConsumerOffsetRequestHeader(
            consumer_group="Lost", topic=TOPIC, queue_id=0, commit_offset=1000
        )
        answer = await client.request(RequestCode.UPDATE_CONSUMER_OFFSET, header)
        assert answer.code == ResponseCode.SUCCESS
    queue = MessageQueue(topic=TOPIC, broker_name=broker.config.broker_name, queue_id=0)
    to_queue = SendQueue(TOPIC, broker.config.broker_name, 0)
    for i in range(3):
        await producer.send(Message(TOPIC, f"before-{i}".encode()), queue=to_queue)

    received = Received()
    seen = Assignments()
    consumer = _consumer(cluster, "Lost", rebalance_listener=seen.listener("l"))
    consumer.register_listener(received.handler("l"))
    async with consumer:
        # taken, given up on the broker's answer, taken again
        await seen.wait_until(lambda: seen.changes("l", TOPIC) >= 2 and queue in seen.of("l", TOPIC))
        assert broker.consumer_offsets.query_offset("Lost", TOPIC, 0) == 3
        await producer.send(Message(TOPIC, b"after"), queue=to_queue)
        await received.wait_for(1)
    assert received.bodies() == [b"after"], "the queue went on from the broker's end, as Java's does"


async def test_an_operators_offset_reset_moves_a_running_consumer(
    cluster: LocalCluster, producer: Producer
) -> None:
    """RESET_CONSUMER_CLIENT_OFFSET: the broker relays a reset; the running consumer drops what it holds,
    commits the new offset and reads from there (instead of overwriting the reset with its own)."""
    to_queue = SendQueue(TOPIC, cluster.broker.config.broker_name, 1)
    for i in range(5):
        await producer.send(Message(TOPIC, f"r{i}".encode()), queue=to_queue)
    received = Received()
    consumer = _consumer(cluster, "Rewinders")
    consumer.register_listener(received.handler("r"))
    async with consumer:
        await received.wait_for(5)
        queue = MessageQueue(topic=TOPIC, broker_name=cluster.broker.config.broker_name, queue_id=1)
        assert await cluster.reset_offsets("Rewinders", TOPIC, {queue: 2}) == 1
        await received.wait_for(8)
    assert received.bodies() == [b"r0", b"r1", b"r2", b"r3", b"r4", b"r2", b"r3", b"r4"]
    assert cluster.broker.consumer_offsets.query_offset("Rewinders", TOPIC, 1) == 5


async def test_a_restarted_broker_is_told_about_the_consumer_at_once(
    cluster: LocalCluster, producer: Producer
) -> None:
    """After a broker restart the consumer's pulls are refused (the broker forgot the group); the consumer
    heartbeats right away instead of waiting for its 30 s round, so consumption resumes within seconds."""
    received = Received()
    consumer = _consumer(cluster, "Survivors")
    consumer.register_listener(received.handler("s"))
    async with consumer:
        await producer.send(Message(TOPIC, b"before"))
        await received.wait_for(1)
        await cluster.restart_broker()
        await producer.send(Message(TOPIC, b"after"))
        await received.wait_for(2)
    assert received.bodies() == [b"before", b"after"]


class SendBacks:
    """Counts CONSUMER_SEND_MSG_BACK requests the broker has finished handling (it wraps the broker's own
    processor), so a test knows a failed message is stored before it moves the clock."""

    def __init__(self, broker: Broker) -> None:
        parts = broker.parts
        self._processor = ConsumerSendMsgBackProcessor(
            config=parts.config,
            topics=parts.metadata.topics,
            groups=parts.metadata.groups,
            store=parts.storage.store,
            messages=parts.storage.messages,
            schedule=parts.storage.schedule,
            announcer=parts.services.announcer,
            stats=parts.stats,
        )
        self._count = 0
        self._changed = asyncio.Condition()
        broker.server.register(RequestCode.CONSUMER_SEND_MSG_BACK, self._handle)

    async def _handle(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        answer = await self._processor(request, conn)
        async with self._changed:
            self._count += 1
            self._changed.notify_all()
        return answer

    async def wait_for(self, count: int) -> None:
        async with asyncio.timeout(WAIT_S), self._changed:
            await self._changed.wait_for(lambda: self._count >= count)


async def test_a_failing_message_is_retried_then_dead_lettered(tmp_path: Path) -> None:
    clock = ManualClock()
    async with LocalCluster(tmp_path / "store", clock=clock) as cluster:
        await cluster.create_topic(TOPIC, 1)
        await cluster.create_topic(retry_topic("Fussy"), 1)  # so its route is known from the start
        send_backs = SendBacks(cluster.broker)
        received = Received()
        consumer = _consumer(cluster, "Fussy", max_reconsume_times=2)
        consumer.register_listener(received.handler("f", ConsumeStatus.RECONSUME_LATER))
        async with (
            Producer("OrderService", cluster.address) as producer,
            BrokerClient(cluster.broker.address) as watcher,
            consumer,
        ):
            sent = await producer.send(Message(TOPIC, b"poison", tags="T", keys=["p-1"]))
            # first failure: delay level 3 (10 s), second: level 4 (30 s), third: dead letter
            for attempt, delay_ms in enumerate([10_000, 30_000], start=1):
                await received.wait_for(attempt)
                await send_backs.wait_for(attempt)
                clock.advance(delay_ms)
                await cluster.broker.schedule.deliver_due()
            await received.wait_for(3)
            await send_backs.wait_for(3)
            async with asyncio.timeout(WAIT_S):
                answer = await watcher.pull("watcher", dlq_topic("Fussy"), 0, 0)
            assert answer.code == ResponseCode.SUCCESS, answer.remark
            [dead] = decode_messages(answer.body)
    assert [d.reconsume_times for d in received.deliveries] == [0, 1, 2]
    assert {d.topic for d in received.deliveries} == {TOPIC}, "redeliveries show the original topic"
    assert {d.msg_id for d in received.deliveries} == {sent.msg_id}
    assert {d.keys for d in received.deliveries} == {("p-1",)}
    assert dead.body == b"poison" and dead.reconsume_times == 3
    assert dead.properties["RETRY_TOPIC"] == TOPIC
