"""Reading queues for the source, against the project's NameServer and Broker in this event loop: routes,
offset bounds, pulls of exact ranges, namespaces, and the rows they become."""

from __future__ import annotations

import datetime
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from broker import Broker
from broker.testing import BrokerClient, running_broker
from nameserver import NameServer
from producer import Message, Producer
from spark_connector import SourceReadError
from spark_connector.options import ConnectionOptions
from spark_connector.pull import QueueAddress, TopicReader
from spark_connector.records import message_row
from tests.unit.consumer_fakes import FakeCluster

SQL = "a > 5 AND region = 'eu'"


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[tuple[NameServer, Broker]]:
    async with NameServer("127.0.0.1", 0) as namesrv:
        async with running_broker(tmp_path / "store", namesrv_addr=namesrv.address) as broker:
            yield namesrv, broker


async def create_topic(broker: Broker, topic: str, queues: int) -> None:
    async with BrokerClient(broker.address) as client:
        await client.create_topic(topic, queues)
    await broker.registration.register_all()


async def pulled(reader: TopicReader, queue: QueueAddress, start: int, end: int, size: int) -> list[int]:
    offsets: list[int] = []
    async for batch in reader.pull_range(queue, start, end, group="PullTest", batch_size=size):
        assert len(batch) <= size
        offsets.extend(m.queue_offset for m in batch)
    return offsets


async def test_queues_bounds_and_exact_ranges(cluster: tuple[NameServer, Broker]) -> None:
    namesrv, broker = cluster
    await create_topic(broker, "PullTopic", 2)
    async with Producer("PullTestProducer", namesrv.address) as producer:
        queues = await producer.fetch_publish_queues("PullTopic")
        for i in range(30):
            await producer.send(Message("PullTopic", f"m{i}".encode()), queue=queues[i % 2])
    async with TopicReader(ConnectionOptions(namesrv=(namesrv.address,)), "PullTopic") as reader:
        found = await reader.queues()
        assert [(q.broker_name, q.queue_id, q.broker_addr) for q in found] == [
            ("broker-a", 0, broker.address),
            ("broker-a", 1, broker.address),
        ]
        lows, highs = await reader.bounds(found)
        assert lows == {("PullTopic", "broker-a", 0): 0, ("PullTopic", "broker-a", 1): 0}
        assert highs == {("PullTopic", "broker-a", 0): 15, ("PullTopic", "broker-a", 1): 15}
        assert await pulled(reader, found[0], 0, 15, 4) == list(range(15))
        assert await pulled(reader, found[1], 3, 11, 32) == list(range(3, 11))
        assert await pulled(reader, found[1], 15, 15, 32) == []


async def test_a_range_past_the_end_stops_at_the_end(cluster: tuple[NameServer, Broker]) -> None:
    namesrv, broker = cluster
    await create_topic(broker, "ShortTopic", 1)
    async with Producer("PullTestProducer", namesrv.address) as producer:
        for i in range(3):
            await producer.send(Message("ShortTopic", f"m{i}".encode()))
    async with TopicReader(ConnectionOptions(namesrv=(namesrv.address,)), "ShortTopic") as reader:
        (queue,) = await reader.queues()
        assert await pulled(reader, queue, 1, 50, 8) == [1, 2]


async def test_unknown_topic_and_dead_broker_are_source_errors(cluster: tuple[NameServer, Broker]) -> None:
    namesrv, _broker = cluster
    async with TopicReader(ConnectionOptions(namesrv=(namesrv.address,)), "NoSuchTopic") as reader:
        with pytest.raises(SourceReadError, match="does not exist"):
            await reader.queues()
        dead = QueueAddress("broker-x", 0, "127.0.0.1:1")
        with pytest.raises(SourceReadError, match="broker-x"):
            await reader.max_offset(dead)


async def test_namespace_and_rows(cluster: tuple[NameServer, Broker]) -> None:
    namesrv, broker = cluster
    await create_topic(broker, "ns1%Spaced", 1)
    message = Message("Spaced", b"\x00body", tags="TagA", keys=["k1", "k2"], properties={"origin": "t"})
    async with Producer("PullTestProducer", namesrv.address, namespace="ns1") as producer:
        sent = await producer.send(message)
    connection = ConnectionOptions(namesrv=(namesrv.address,), namespace="ns1")
    async with TopicReader(connection, "Spaced") as reader:
        assert reader.wire_topic == "ns1%Spaced"
        (queue,) = await reader.queues()
        batches = [batch async for batch in reader.pull_range(queue, 0, 1, group="G")]
    (stored,) = batches[0]
    row = message_row(stored, queue.broker_name, "ns1")
    topic, queue_id, offset, body, tags, keys, properties, born, stored_at, msg_id, broker_name = row
    assert (topic, queue_id, offset, body, tags, keys) == ("Spaced", 0, 0, b"\x00body", "TagA", ["k1", "k2"])
    assert properties == {"origin": "t"}, "system properties stay out of the map"
    assert msg_id == sent.msg_id
    assert broker_name == "broker-a"
    assert born.tzinfo is datetime.UTC
    assert stored_at >= born


async def test_a_sql_filter_is_checked_first_and_the_projects_broker_refuses_it_until_enabled(
    cluster: tuple[NameServer, Broker],
) -> None:
    namesrv, broker = cluster
    await create_topic(broker, "Filtered", 1)
    connection = ConnectionOptions(namesrv=(namesrv.address,))
    async with TopicReader(connection, "Filtered", filter_sql="a > 5") as reader:
        with pytest.raises(
            SourceReadError, match=r"option 'filter\.sql': broker broker-a .*enablePropertyFilter=true"
        ):
            await reader.check_filter("G")
        broker.config.update({"enablePropertyFilter": "true"})  # live, as an operator would
        await reader.check_filter("G")
    async with TopicReader(connection, "Filtered") as unfiltered:
        await unfiltered.check_filter("G")  # nothing to ask without a filter


async def test_a_sql_filter_goes_with_every_pull_and_nothing_is_filtered_here() -> None:
    async with FakeCluster() as fake:
        fake.topic("T", queues=1)
        fake.broker.add_messages("T", 0, [b"a", b"b", b"c"])
        async with TopicReader(
            ConnectionOptions(namesrv=(fake.namesrv.address,)), "T", filter_sql=SQL
        ) as reader:
            await reader.check_filter("G")
            (queue,) = await reader.queues()
            bodies = [m.body async for batch in reader.pull_range(queue, 0, 3, group="G") for m in batch]
        assert bodies == [b"a", b"b", b"c"]  # what the broker returned: tags are not compared
        [check] = fake.broker.filter_checks
        assert check.subscription_data is not None and check.subscription_data.sub_string == SQL
        header = fake.broker.pull_headers[0]
        assert (header.subscription, header.expression_type) == (SQL, "SQL92")
        assert header.sub_version == check.subscription_data.sub_version
