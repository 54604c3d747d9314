"""The project's producer on one set-up of each kind: each way of sending, every message read back intact.

Messages are read back with the project's PullConsumer (:mod:`tests.integration.clusters.readback`); one
scenario checks that plain PULL_MESSAGE requests see exactly the same records, so what is checked is what
the broker stored: body, tags, keys and user properties, queue placement and order.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from producer import Message, Producer, SendStatus
from rocketmq_wire import SerializeType
from rocketmq_wire.message import MessageExt
from tests.integration.clusters.fixture import on_representative_setups
from tests.integration.clusters.model import Cluster, unique_name
from tests.integration.clusters.readback import read_topic, read_topic_raw

#: The producer is the same on every set-up; these cover the servers' kinds and lines, and the
#: compatibility matrix sends to all of them in both serializations.
pytestmark = [
    pytest.mark.integration,
    pytest.mark.usefixtures("scenario_budget"),
    on_representative_setups(),
]

SERIALIZATIONS = [SerializeType.JSON, SerializeType.ROCKETMQ]


def by_body(messages: list[MessageExt]) -> dict[bytes, MessageExt]:
    found = {m.body: m for m in messages}
    assert len(found) == len(messages), "a body was stored twice"
    return found


def assert_intact(sent: Message, stored: MessageExt) -> None:
    """What the producer set is what the broker stored."""
    assert stored.topic == sent.topic
    assert stored.body == sent.body
    assert stored.tags == sent.tags
    assert stored.keys == sent.keys
    for name, value in sent.properties.items():
        assert stored.properties.get(name) == value, (name, stored.properties)
    assert stored.unique_id, "the producer's unique id (UNIQ_KEY) is missing"


def sample(topic: str, i: int) -> Message:
    return Message(
        topic,
        f"message {i} of {topic}".encode(),
        tags=f"Tag{i % 3}",
        keys=[f"key-{i}", f"order-{i * 7}"],
        properties={"index": str(i), "origin": "integration"},
    )


@pytest.mark.parametrize("serialize_type", SERIALIZATIONS, ids=lambda s: s.name)
async def test_sync_send(cluster: Cluster, serialize_type: SerializeType) -> None:
    topic = unique_name("SyncSend")
    sent = [sample(topic, i) for i in range(8)]
    async with Producer(unique_name("pg"), cluster.namesrv, serialize_type=serialize_type) as producer:
        results = [await producer.send(message) for message in sent]
    assert [r.status for r in results] == [SendStatus.SEND_OK] * len(sent)
    assert {r.message_queue.broker_name for r in results} <= cluster.broker_names
    stored = by_body(await read_topic(cluster.namesrv, topic, len(sent)))
    for message, result in zip(sent, results, strict=True):
        assert_intact(message, stored[message.body])
        assert stored[message.body].unique_id == result.msg_id
        assert stored[message.body].queue_id == result.message_queue.queue_id
        assert stored[message.body].queue_offset == result.queue_offset


async def test_pipelined_sends(cluster: Cluster) -> None:
    """Many sends in flight on one connection; every one answered and stored once."""
    topic = unique_name("Pipelined")
    count = 300
    sent = [Message(topic, f"pipelined {i}".encode(), keys=[f"p{i}"]) for i in range(count)]
    async with Producer(unique_name("pg"), cluster.namesrv) as producer:
        await producer.send(Message(topic, b"warm-up: creates the topic"))
        results = await asyncio.gather(*(producer.send(message) for message in sent))
    assert all(r.status is SendStatus.SEND_OK for r in results)
    assert len({r.msg_id for r in results}) == count
    stored = by_body(await read_topic(cluster.namesrv, topic, count + 1))
    assert set(stored) == {m.body for m in sent} | {b"warm-up: creates the topic"}
    for message in sent:
        assert stored[message.body].keys == message.keys


@pytest.mark.parametrize("serialize_type", SERIALIZATIONS, ids=lambda s: s.name)
async def test_oneway_sends(cluster: Cluster, serialize_type: SerializeType) -> None:
    topic = unique_name("Oneway")
    sent = [sample(topic, i) for i in range(10)]
    async with Producer(unique_name("pg"), cluster.namesrv, serialize_type=serialize_type) as producer:
        await producer.send(
            Message(topic, b"created")
        )  # oneway sends are not retried: create the topic first
        for message in sent:
            await producer.send_oneway(message)
    stored = by_body(await read_topic(cluster.namesrv, topic, len(sent) + 1))
    for message in sent:
        assert_intact(message, stored[message.body])


@pytest.mark.parametrize("serialize_type", SERIALIZATIONS, ids=lambda s: s.name)
async def test_batch_send(cluster: Cluster, serialize_type: SerializeType) -> None:
    topic = unique_name("Batch")
    sent = [sample(topic, i) for i in range(16)]
    async with Producer(unique_name("pg"), cluster.namesrv, serialize_type=serialize_type) as producer:
        result = await producer.send_batch(sent)
    assert result.status is SendStatus.SEND_OK
    ids = result.msg_id.split(",")
    assert len(ids) == len(sent)
    stored = await read_topic(cluster.namesrv, topic, len(sent))
    assert [m.body for m in stored] == [m.body for m in sent], "a batch lands in one queue, in order"
    assert {m.queue_id for m in stored} == {result.message_queue.queue_id}
    for message, unique_id, kept in zip(sent, ids, stored, strict=True):
        assert_intact(message, kept)
        assert kept.unique_id == unique_id


async def test_ordered_sends_share_one_queue_in_order(cluster: Cluster) -> None:
    topic = unique_name("Ordered")
    async with Producer(unique_name("pg"), cluster.namesrv) as producer:
        await producer.send(Message(topic, b"created"))
        queues = await producer.fetch_publish_queues(topic)
        results = {}
        for customer in ("customer-7", "customer-8"):
            results[customer] = [
                await producer.send(Message(topic, f"{customer} step {i}".encode()), sharding_key=customer)
                for i in range(12)
            ]
    assert len(queues) > 1, "ordering is only meaningful with several queues"
    stored = await read_topic(cluster.namesrv, topic, 25)
    for customer, sends in results.items():
        [queue_id] = {r.message_queue.queue_id for r in sends}
        in_queue = [m for m in stored if m.queue_id == queue_id and m.body.startswith(customer.encode())]
        assert [m.body for m in in_queue] == [f"{customer} step {i}".encode() for i in range(12)]
        offsets = [m.queue_offset for m in in_queue]
        assert offsets == sorted(offsets)


async def test_delayed_message_arrives_after_its_delay(cluster: Cluster) -> None:
    """Delay level 1 is 1 s on every broker (Apache's default ``messageDelayLevel``)."""
    topic = unique_name("Delayed")
    async with Producer(unique_name("pg"), cluster.namesrv) as producer:
        await producer.send(Message(topic, b"created"))
        sent_at = time.monotonic()
        result = await producer.send(Message(topic, b"delayed by one second", tags="late", delay_level=1))
    assert result.status is SendStatus.SEND_OK
    stored = await read_topic(cluster.namesrv, topic, 2, timeout_s=20)
    visible_after = time.monotonic() - sent_at
    [delayed] = [m for m in stored if m.body == b"delayed by one second"]
    assert visible_after >= 1.0, f"visible after {visible_after:.2f} s"
    assert delayed.store_timestamp - delayed.born_timestamp >= 950, "re-stored when its delay was over"
    assert delayed.tags == "late"
    assert delayed.unique_id == result.msg_id


async def test_large_body_is_compressed_and_read_back_whole(cluster: Cluster) -> None:
    topic = unique_name("Compressed")
    body = b"".join(f"line {i:05d} of a compressible body\n".encode() for i in range(400))
    assert len(body) > 4096
    message = Message(topic, body, tags="big", keys=["large"])
    async with Producer(unique_name("pg"), cluster.namesrv) as producer:
        result = await producer.send(message)
    assert result.status is SendStatus.SEND_OK
    [stored] = await read_topic(cluster.namesrv, topic, 1)
    assert stored.is_compressed, "bodies over compressMsgBodyOverHowmuch (4 KiB) travel and stay compressed"
    assert stored.store_size < len(body), "the stored record holds the compressed body"
    assert_intact(message, stored)


@pytest.mark.parametrize("serialize_type", SERIALIZATIONS, ids=lambda s: s.name)
async def test_unicode_tags_keys_and_properties(cluster: Cluster, serialize_type: SerializeType) -> None:
    topic = unique_name("Unicode")
    message = Message(
        topic,
        "Grüße aus Zürich — 東京から 🚀".encode(),
        tags="标签",
        keys=["ключ", "clé-2"],
        properties={"städte": "Zürich–東京", "emoji": "🚀✓", "naïve": "ünïcode"},
    )
    async with Producer(unique_name("pg"), cluster.namesrv, serialize_type=serialize_type) as producer:
        result = await producer.send(message)
    assert result.status is SendStatus.SEND_OK
    [stored] = await read_topic(cluster.namesrv, topic, 1)
    assert_intact(message, stored)


async def test_consumer_and_raw_pulls_see_the_same_records(cluster: Cluster) -> None:
    """The PullConsumer used for read-back hides nothing and adds nothing: raw PULL_MESSAGE agrees."""
    topic = unique_name("CrossCheck")
    big = b"compressible " * 1000
    async with Producer(unique_name("pg"), cluster.namesrv) as producer:
        await producer.send(Message(topic, big, tags="big", keys=["large"]))
        await producer.send(Message(topic, "ünïcode".encode(), properties={"städte": "東京"}))
        await producer.send_batch([sample(topic, i) for i in range(5)])
    through_consumer = await read_topic(cluster.namesrv, topic, 7)
    raw = await read_topic_raw(cluster.namesrv, topic, 7)

    def view(m: MessageExt) -> tuple[object, ...]:
        # A consumer adds the queue's MIN_OFFSET/MAX_OFFSET to what it hands out, as Java's does.
        properties = {k: v for k, v in m.properties.items() if k not in ("MIN_OFFSET", "MAX_OFFSET")}
        return (m.queue_id, m.queue_offset, m.commit_log_offset, m.msg_id, m.body, properties)

    assert [view(m) for m in through_consumer] == [view(m) for m in raw]
    assert any(m.body == big and m.is_compressed for m in raw)
