"""SEND_BATCH_MESSAGE: the body is rocketmq_wire's batch encoding of the messages, rules are Java's."""

from __future__ import annotations

import pytest

from producer import Message, MessageTooLargeError, MessageValidationError, ProducerConfig
from rocketmq_wire.codes import RequestCode
from rocketmq_wire.message import PropertiesFlavour, decode_batch, decode_properties, encode_batch
from tests.unit.producer_fakes import Cluster

TOPIC = "BatchTopic"


async def test_batch_body_equals_the_wire_batch_encoding() -> None:
    messages = [
        Message(TOPIC, b"batch body %d" % i, tags="Batch", keys=[f"batch-key-{i}"], flag=i) for i in range(3)
    ]
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        async with cluster.producer() as producer:
            result = await producer.send_batch(messages)
        (received,) = cluster.brokers["broker-a"].sends()
    assert received.cmd.code == RequestCode.SEND_BATCH_MESSAGE
    assert received.fields["m"] == "true"
    assert received.fields["f"] == "0"
    assert received.fields["i"] == "WAIT\x01true"
    ids = result.msg_id.split(",")
    assert len(ids) == 3
    expected = encode_batch(
        m.to_batch_entry(PropertiesFlavour.V4, {"UNIQ_KEY": unique_id})
        for m, unique_id in zip(messages, ids, strict=True)
    )
    assert received.cmd.body == expected
    assert [e.flag for e in decode_batch(received.cmd.body)] == [0, 1, 2]
    assert len(result.offset_msg_id.split(",")) == 3  # type: ignore[union-attr]
    assert result.queue_offset == 0


async def test_batch_of_a_5x_producer_has_its_own_unique_id() -> None:
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        async with cluster.producer(config=ProducerConfig(version=479)) as producer:
            result = await producer.send_batch([Message(TOPIC, b"a"), Message(TOPIC, b"b")])
        (received,) = cluster.brokers["broker-a"].sends()
    header_properties = decode_properties(received.fields["i"])
    assert set(header_properties) == {"UNIQ_KEY", "WAIT"}
    assert header_properties["UNIQ_KEY"] not in result.msg_id
    assert received.fields["i"].endswith("\x02")
    entries = decode_batch(received.cmd.body)
    assert all(e.properties_string.endswith("\x02") for e in entries)


async def test_large_batch_bodies_are_not_compressed() -> None:
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        async with cluster.producer() as producer:
            await producer.send_batch([Message(TOPIC, b"z" * 8000)])
        (received,) = cluster.brokers["broker-a"].sends()
    assert received.fields["f"] == "0"
    assert decode_batch(received.cmd.body)[0].body == b"z" * 8000


@pytest.mark.parametrize(
    ("messages", "error"),
    [
        ([], "at least one"),
        ([Message(TOPIC, b"a"), Message("Other", b"b")], "same topic"),
        ([Message(TOPIC, b"a", delay_level=2)], "delay"),
        ([Message("%RETRY%Group", b"a")], "retry"),
        ([Message(TOPIC, b"a"), Message(TOPIC, b"b", wait_store_msg_ok=False)], "wait"),
        ([Message(TOPIC, b"")], "empty"),
    ],
)
async def test_batch_rules(messages: list[Message], error: str) -> None:
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        cluster.route("%RETRY%Group")
        async with cluster.producer() as producer:
            with pytest.raises(MessageValidationError, match=error):
                await producer.send_batch(messages)
        assert cluster.brokers["broker-a"].sends() == []


async def test_batch_size_limit_applies_to_the_whole_body() -> None:
    async with Cluster() as cluster:
        cluster.route(TOPIC)
        async with cluster.producer(config=ProducerConfig(max_message_size=1000)) as producer:
            with pytest.raises(MessageTooLargeError):
                await producer.send_batch([Message(TOPIC, b"x" * 400) for _ in range(3)])
            await producer.send_batch([Message(TOPIC, b"x" * 400)])
        assert len(cluster.brokers["broker-a"].sends()) == 1
