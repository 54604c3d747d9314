"""The Spark connector against clusters of each kind: a DataFrame written with ``format("rocketmq")`` and read
back, through the connector's source and through the project's consumer.

The connector speaks to brokers only through the project's clients, which the scenario suite runs against
every set-up; here one set-up of each kind is enough: the project's servers, Apache's 4.x and 5.x, and one
cluster of an Apache broker and the project's (a write spread over two brokers of either kind). One local
Spark session (the ``spark`` fixture of :mod:`tests.integration.spark_fixtures`) serves them all.
"""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path
from typing import Any

import pytest

from producer import Message, Producer
from spark_connector.progress import read_batch_metrics
from tests.integration.clusters.fixture import representative_setups
from tests.integration.clusters.model import Cluster, unique_name
from tests.integration.clusters.readback import read_topic
from tests.integration.clusters.topics import create_on_every_broker

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("scenario_budget")]

ROWS = 30
SETUPS = representative_setups()
#: The Kafka-habit options need the brokers' answers (topic listing, tag filter, search by time):
#: the project's servers and one Apache 5 line are enough, as the wire calls are the clients' own.
#: The project's broker only: tag filtering, timestamps and topic discovery are the brokers' ordinary
#: requests (checked against Apache's elsewhere), and Apache's first route of a new topic made this scenario
#: a minute long there.
KAFKA_SETUPS = [s for s in SETUPS if s.id == "python"]


def rows() -> list[tuple[Any, ...]]:
    return [
        (f"spark row {i} ✓".encode(), f"Tag{i % 3}", [f"row-{i}", "spark"], {"row": str(i), "ort": "Zürich"})
        for i in range(ROWS)
    ]


@pytest.mark.parametrize("cluster", SETUPS, ids=[s.id for s in SETUPS], indirect=True)
def test_dataframe_written_and_read_back(cluster: Cluster, spark: Any) -> None:
    from pyspark.sql.types import ArrayType, BinaryType, MapType, StringType, StructField, StructType

    topic = unique_name("Spark")
    schema = StructType(
        [
            StructField("body", BinaryType()),
            StructField("tags", StringType()),
            StructField("keys", ArrayType(StringType())),
            StructField("properties", MapType(StringType(), StringType())),
        ]
    )
    df = spark.createDataFrame(rows(), schema)
    df.write.format("rocketmq").option("namesrv", cluster.namesrv).option("topic", topic).mode(
        "append"
    ).save()

    stored = _run(read_topic(cluster.namesrv, topic, ROWS))
    expected = {body: (tags, keys, properties) for body, tags, keys, properties in rows()}
    assert sorted(m.body for m in stored) == sorted(expected)
    for message in stored:
        tags, keys, properties = expected[message.body]
        assert (message.tags, message.keys) == (tags, keys)
        assert {name: message.properties.get(name) for name in properties} == properties

    read = spark.read.format("rocketmq").option("namesrv", cluster.namesrv).option("topic", topic).load()
    collected = read.collect()
    assert len(collected) == ROWS
    for row in collected:
        tags, keys, properties = expected[bytes(row.body)]
        assert (row.tags, row.keys, row.properties) == (tags, keys, properties)
        assert row.topic == topic and row.broker_name in cluster.broker_names
    assert len({row.msg_id for row in collected}) == ROWS


async def _create(cluster: Cluster, *prefixes: str) -> list[str]:
    """Topics of two queues per broker, created side by side (each waits for its route)."""
    return list(await asyncio.gather(*(create_on_every_broker(cluster, prefix, 2) for prefix in prefixes)))


async def _send(namesrv: str, messages: list[Message]) -> None:
    async with Producer(unique_name("SparkKafkaHabits"), namesrv) as producer:
        for message in messages:
            await producer.send(message)


def _read(spark: Any, cluster: Cluster, **options: str) -> list[Any]:
    read = spark.read.format("rocketmq").option("namesrv", cluster.namesrv)
    for name, value in options.items():
        read = read.option(name, value)
    return list(read.load().collect())


def _stream(spark: Any, cluster: Cluster, checkpoint: Path, **options: str) -> list[Any]:
    """One ``availableNow`` run into ``foreachBatch``; the rows of every micro-batch."""
    got: list[Any] = []
    read = spark.readStream.format("rocketmq").option("namesrv", cluster.namesrv)
    for name, value in options.items():
        read = read.option(name, value)
    query = (
        read.load()
        .writeStream.foreachBatch(lambda df, _batch: got.extend(df.collect()))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(60), "the availableNow run ended"
    assert query.exception() is None
    return got


@pytest.mark.parametrize("cluster", KAFKA_SETUPS, ids=[s.id for s in KAFKA_SETUPS], indirect=True)
def test_kafka_habits_topics_pattern_tags_timestamps_and_metrics(
    cluster: Cluster, spark: Any, tmp_path: Path
) -> None:
    """One scenario for the source's Kafka-like options on real brokers: ``topics`` with ``filter.tags``; a
    streaming ``topicPattern`` query from ``startingOffsetsByTimestamp`` that picks up a topic created
    between two runs, with its figures in ``metrics.path``."""
    base = unique_name("SparkKafka")
    first, second = _run(_create(cluster, f"{base}-A", f"{base}-B"))

    early = [
        Message(t, f"{t} early {i}".encode(), tags="Keep" if i % 2 else "Drop")
        for t in (first, second)
        for i in range(6)
    ]
    _run(_send(cluster.namesrv, early))
    time.sleep(0.05)
    middle = int(time.time() * 1000)
    time.sleep(0.05)
    late = [
        Message(t, f"{t} late {i}".encode(), tags="Keep" if i % 2 else "Drop")
        for t in (first, second)
        for i in range(4)
    ]
    _run(_send(cluster.namesrv, late))

    kept = _read(spark, cluster, topics=f"{first},{second}", **{"filter.tags": "Keep"})
    assert sorted(bytes(r.body) for r in kept) == sorted(m.body for m in early + late if m.tags == "Keep")
    assert {r.topic for r in kept} == {first, second} and {r.tags for r in kept} == {"Keep"}

    pattern = re.escape(base) + "-.*"
    metrics = tmp_path / "metrics.jsonl"
    options = {
        "topicPattern": pattern,
        "metrics.path": str(metrics),
        "startingOffsetsByTimestamp": str(middle),
    }
    since = _stream(spark, cluster, tmp_path / "checkpoint", **options)
    assert sorted(bytes(r.body) for r in since) == sorted(m.body for m in late), (
        "from the time on, both topics"
    )
    third = _run(create_on_every_broker(cluster, f"{base}-C", 2))
    _run(_send(cluster.namesrv, [Message(third, f"new topic {i}".encode()) for i in range(5)]))
    picked_up = _stream(spark, cluster, tmp_path / "checkpoint", **options)
    assert sorted(bytes(r.body) for r in picked_up) == sorted(f"new topic {i}".encode() for i in range(5))
    figures = read_batch_metrics(metrics)
    assert sum(f.messages for f in figures) == len(late) + 5
    assert figures[-1].topics == tuple(sorted((first, second, third))) and figures[-1].lag == 0
    assert {f.skipped_total for f in figures} == {0}


def _run(coroutine: Any) -> Any:
    """This test is synchronous (Spark's calls block); the read-back helper is async."""

    return asyncio.run(coroutine)
