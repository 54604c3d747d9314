"""The lite pull consumer against the project's NameServer and Broker, in-process on loopback."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from broker import ManualClock
from broker.testing import BrokerClient
from consumer import (
    ConsumerConfig,
    ConsumerStateError,
    InvalidOffsetError,
    MessageExt,
    MessageQueue,
    PullConsumer,
)
from consumer.testing import WAIT_S, Assignments, LocalCluster
from producer import Message, Producer
from producer import MessageQueue as SendQueue
from rocketmq_wire import RequestCode, ResponseCode
from rocketmq_wire.headers.offset import UpdateConsumerOffsetRequestHeader

pytestmark = pytest.mark.integration

TOPIC = "Ledger"


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[LocalCluster]:
    async with LocalCluster(tmp_path / "store") as running:
        await running.create_topic(TOPIC, 4)
        yield running


@pytest.fixture
async def producer(cluster: LocalCluster) -> AsyncIterator[Producer]:
    async with Producer("Bookkeepers", cluster.address, rng=random.Random(3)) as running:
        yield running


def queue(cluster: LocalCluster, queue_id: int) -> MessageQueue:
    return MessageQueue(topic=TOPIC, broker_name=cluster.broker.config.broker_name, queue_id=queue_id)


def send_queue(cluster: LocalCluster, queue_id: int) -> SendQueue:
    return SendQueue(TOPIC, cluster.broker.config.broker_name, queue_id)


async def drain(consumer: PullConsumer, count: int) -> list[MessageExt]:
    """Poll until ``count`` messages came (each poll waits for arrivals; the bound only trips on a bug)."""
    got: list[MessageExt] = []
    async with asyncio.timeout(WAIT_S):
        while len(got) < count:
            got += await consumer.poll(timeout=WAIT_S)
    return got


async def test_subscribe_reads_every_queue_in_order_and_commits_on_close(
    cluster: LocalCluster, producer: Producer
) -> None:
    sent = [f"entry-{i}".encode() for i in range(30)]
    for body in sent:
        await producer.send(Message(TOPIC, body, tags="debit"))
    consumer = PullConsumer("Auditors", cluster.address, consume_from="FIRST_OFFSET")
    consumer.subscribe(TOPIC, "debit")
    async with consumer:
        got = await drain(consumer, 30)
        assert await consumer.poll(timeout=0) == [], "nothing more buffered"
        assert sorted(consumer.assignment(), key=lambda q: q.queue_id) == [
            queue(cluster, i) for i in range(4)
        ]
    assert sorted(m.body for m in got) == sorted(sent)
    by_queue: dict[int, list[int]] = {}
    for message in got:
        by_queue.setdefault(message.queue_id, []).append(message.queue_offset)
    for offsets in by_queue.values():
        assert offsets == list(range(len(offsets))), "each queue in offset order, none skipped"
    for queue_id in range(4):
        committed = cluster.broker.consumer_offsets.query_offset("Auditors", TOPIC, queue_id)
        assert committed == cluster.broker.store.get_max_offset(TOPIC, queue_id)


async def test_two_subscribers_share_the_queues(cluster: LocalCluster, producer: Producer) -> None:
    seen = Assignments()
    first = PullConsumer("Splitters", cluster.address, rebalance_listener=seen.listener("a"))
    second = PullConsumer("Splitters", cluster.address, rebalance_listener=seen.listener("b"))
    for consumer in (first, second):
        consumer.subscribe(TOPIC)
    async with first, second:
        await seen.wait_until(
            lambda: (
                len(seen.of("a", TOPIC)) == 2
                and len(seen.of("b", TOPIC)) == 2
                and not seen.of("a", TOPIC) & seen.of("b", TOPIC)
            )
        )
        owned_a, owned_b = seen.of("a", TOPIC), seen.of("b", TOPIC)
        for i in range(20):
            await producer.send(Message(TOPIC, f"x{i}".encode()))
        got_a: list[MessageExt] = []
        got_b: list[MessageExt] = []
        async with asyncio.timeout(WAIT_S):
            while len(got_a) + len(got_b) < 20:
                got_a += await first.poll(timeout=0.05)
                got_b += await second.poll(timeout=0.05)
    assert {m.queue_id for m in got_a} <= {q.queue_id for q in owned_a}
    assert {m.queue_id for m in got_b} <= {q.queue_id for q in owned_b}
    assert got_a and got_b
    assert sorted(m.body for m in got_a + got_b) == sorted(f"x{i}".encode() for i in range(20))


async def test_assign_reads_exactly_the_given_queue(cluster: LocalCluster, producer: Producer) -> None:
    for i in range(8):
        await producer.send(Message(TOPIC, f"q{i % 2}-{i}".encode()), queue=send_queue(cluster, i % 2))
    consumer = PullConsumer("Readers", cluster.address, consume_from="FIRST_OFFSET")
    consumer.assign([queue(cluster, 1)])
    with pytest.raises(ConsumerStateError, match="mutually exclusive"):
        consumer.subscribe(TOPIC)
    async with consumer:
        batch = await consumer.poll_batch(timeout=WAIT_S)
        assert batch is not None and batch.queue == queue(cluster, 1)
        assert [m.body for m in batch.messages] == [f"q1-{i}".encode() for i in (1, 3, 5, 7)]
        assert batch.next_offset == 4
        assert consumer.assignment() == [queue(cluster, 1)]


async def test_seeking_moves_the_queue_and_drops_what_was_buffered(
    cluster: LocalCluster, producer: Producer
) -> None:
    mq = queue(cluster, 2)
    for i in range(10):
        await producer.send(Message(TOPIC, f"n{i}".encode()), queue=send_queue(cluster, 2))
    consumer = PullConsumer("Seekers", cluster.address, consume_from="FIRST_OFFSET", auto_commit=False)
    consumer.assign([mq])
    async with consumer:
        assert [m.queue_offset for m in await drain(consumer, 10)] == list(range(10))
        await consumer.seek(mq, 4)
        assert [m.queue_offset for m in await drain(consumer, 6)] == [4, 5, 6, 7, 8, 9]
        assert await consumer.seek_to_begin(mq) == 0
        assert (await drain(consumer, 10))[0].queue_offset == 0
        assert await consumer.seek_to_end(mq) == 10
        assert await consumer.poll(timeout=0.05) == []
        await producer.send(Message(TOPIC, b"fresh"), queue=send_queue(cluster, 2))
        assert [m.body for m in await drain(consumer, 1)] == [b"fresh"]
        with pytest.raises(InvalidOffsetError, match=r"outside \[0, 11\]"):
            await consumer.seek(mq, 12)
        with pytest.raises(ConsumerStateError, match="not assigned"):
            await consumer.seek(queue(cluster, 3), 0)
        assert await consumer.min_offset(mq) == 0 and await consumer.max_offset(mq) == 11


async def test_seek_by_timestamp_finds_the_first_message_stored_at_or_after_it(tmp_path: Path) -> None:
    clock = ManualClock()
    async with LocalCluster(tmp_path / "store", clock=clock) as cluster:
        await cluster.create_topic(TOPIC, 1)
        mq = queue(cluster, 0)
        async with Producer("Clocked", cluster.address) as producer:
            for i in range(3):
                await producer.send(Message(TOPIC, f"early-{i}".encode()))
            clock.advance(60_000)
            boundary = clock.now_ms()
            for i in range(2):
                await producer.send(Message(TOPIC, f"late-{i}".encode()))
        consumer = PullConsumer("TimeTravellers", cluster.address, consume_from="FIRST_OFFSET")
        consumer.assign([mq])
        async with consumer:
            assert await consumer.seek_by_timestamp(mq, boundary - 1) == 3
            assert [m.body for m in await drain(consumer, 2)] == [b"late-0", b"late-1"]
            assert await consumer.offset_for_timestamp(mq, 0) == 0


async def test_commit_and_committed(cluster: LocalCluster, producer: Producer) -> None:
    mq = queue(cluster, 0)
    for i in range(5):
        await producer.send(Message(TOPIC, f"c{i}".encode()), queue=send_queue(cluster, 0))
    consumer = PullConsumer("Committers", cluster.address, consume_from="FIRST_OFFSET", auto_commit=False)
    consumer.assign([mq])
    async with consumer:
        assert await consumer.committed(mq) == 0, "a fresh queue reads from the start"
        await drain(consumer, 5)
        await consumer.commit({mq: 2})
        assert cluster.broker.consumer_offsets.query_offset("Committers", TOPIC, 0) == 2
        assert await consumer.committed(mq) == 2
        await consumer.commit()
        assert cluster.broker.consumer_offsets.query_offset("Committers", TOPIC, 0) == 5
    # a new consumer of the group continues from there
    again = PullConsumer("Committers", cluster.address, consume_from="FIRST_OFFSET")
    again.assign([mq])
    await producer.send(Message(TOPIC, b"c5"), queue=send_queue(cluster, 0))
    async with again:
        assert [m.body for m in await drain(again, 1)] == [b"c5"]


async def test_a_commit_beyond_the_queue_continues_where_the_broker_says(
    cluster: LocalCluster, producer: Producer
) -> None:
    """PULL_OFFSET_MOVED: like Java's lite pull consumer, carry on at the broker's next offset."""
    mq = queue(cluster, 3)
    async with BrokerClient(cluster.broker.address) as client:
        header = UpdateConsumerOffsetRequestHeader(
            consumer_group="Strays", topic=TOPIC, queue_id=3, commit_offset=500
        )
        assert (await client.request(RequestCode.UPDATE_CONSUMER_OFFSET, header)).code == ResponseCode.SUCCESS
    consumer = PullConsumer("Strays", cluster.address)
    consumer.assign([mq])
    async with consumer:
        assert await consumer.committed(mq) == 500
        await producer.send(Message(TOPIC, b"found"), queue=send_queue(cluster, 3))
        assert [m.body for m in await drain(consumer, 1)] == [b"found"]


async def test_paused_queues_are_not_fetched_until_resumed(cluster: LocalCluster, producer: Producer) -> None:
    mq = queue(cluster, 0)
    consumer = PullConsumer("Pausers", cluster.address, consume_from="FIRST_OFFSET")
    consumer.assign([mq])
    async with consumer:
        consumer.pause([mq])
        await producer.send(Message(TOPIC, b"held back"), queue=send_queue(cluster, 0))
        assert await consumer.poll(timeout=0.2) == []
        consumer.resume([mq])
        assert [m.body for m in await drain(consumer, 1)] == [b"held back"]


async def test_broadcasting_pull_keeps_offsets_locally(
    cluster: LocalCluster, producer: Producer, tmp_path: Path
) -> None:
    for i in range(6):
        await producer.send(Message(TOPIC, f"b{i}".encode()))
    consumers = [
        PullConsumer(
            "Listeners",
            cluster.address,
            message_model="BROADCASTING",
            config=ConsumerConfig(local_offset_dir=str(tmp_path / "offsets"), instance_name=f"listener-{i}"),
            consume_from="FIRST_OFFSET",
        )
        for i in range(2)
    ]
    for consumer in consumers:
        consumer.subscribe(TOPIC)
    results = []
    for consumer in consumers:
        async with consumer:
            results.append(sorted(m.body for m in await drain(consumer, 6)))
    assert results == [sorted(f"b{i}".encode() for i in range(6))] * 2
    assert len(list((tmp_path / "offsets").glob("*/Listeners/offsets.json"))) == 2
    assert cluster.broker.consumer_offsets.query_offset("Listeners", TOPIC, 0) < 0


async def test_poll_needs_a_running_consumer(cluster: LocalCluster) -> None:
    consumer = PullConsumer("Idle", cluster.address)
    with pytest.raises(ConsumerStateError, match="not running"):
        await consumer.poll(0)
    with pytest.raises(ValueError, match="at least one queue"):
        consumer.assign([])


async def test_offsets_can_be_kept_in_a_local_file_in_clustering_mode(
    cluster: LocalCluster, producer: Producer, tmp_path: Path
) -> None:
    mq = queue(cluster, 1)
    config = ConsumerConfig(local_offset_dir=str(tmp_path / "offsets"), local_offset_store=True)
    for i in range(3):
        await producer.send(Message(TOPIC, f"l{i}".encode()), queue=send_queue(cluster, 1))
    first = PullConsumer("Locals", cluster.address, config=config, consume_from="FIRST_OFFSET")
    first.assign([mq])
    async with first:
        assert first.client_id.endswith("@DEFAULT"), "a stable client id names the file"
        await drain(first, 3)
    assert cluster.broker.consumer_offsets.query_offset("Locals", TOPIC, 1) < 0, "nothing on the broker"
    await producer.send(Message(TOPIC, b"l3"), queue=send_queue(cluster, 1))
    second = PullConsumer("Locals", cluster.address, config=config, consume_from="FIRST_OFFSET")
    second.assign([mq])
    async with second:
        assert await second.committed(mq) == 3
        assert [m.body for m in await drain(second, 1)] == [b"l3"]


async def test_an_operators_offset_reset_moves_the_pull_consumer(
    cluster: LocalCluster, producer: Producer
) -> None:
    mq = queue(cluster, 2)
    for i in range(4):
        await producer.send(Message(TOPIC, f"p{i}".encode()), queue=send_queue(cluster, 2))
    consumer = PullConsumer("Rewound", cluster.address, consume_from="FIRST_OFFSET")
    consumer.subscribe(TOPIC)
    async with consumer:
        assert [m.body for m in await drain(consumer, 4)] == [b"p0", b"p1", b"p2", b"p3"]
        assert await cluster.reset_offsets("Rewound", TOPIC, {mq: 1}) == 1
        assert [m.body for m in await drain(consumer, 3)] == [b"p1", b"p2", b"p3"]
        assert await consumer.committed(mq) == 1, "the reset is committed; what was polled since, at close"
    assert cluster.broker.consumer_offsets.query_offset("Rewound", TOPIC, 2) == 4
