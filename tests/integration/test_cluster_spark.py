"""The Spark connector against clusters of each kind: a DataFrame written with ``format("rocketmq")`` and read
back, through the connector's source and through the project's consumer.

The connector speaks to brokers only through the project's clients, which the scenario suite runs against
every set-up; here one set-up of each kind is enough: the project's servers, Apache's 4.x and 5.x, and one
cluster of an Apache broker and the project's (a write spread over two brokers of either kind). One local
Spark session (the ``spark`` fixture of :mod:`tests.integration.spark_fixtures`) serves them all.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.clusters.fixture import representative_setups
from tests.integration.clusters.model import Cluster, unique_name
from tests.integration.clusters.readback import read_topic

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("scenario_budget")]

ROWS = 30
SETUPS = representative_setups()


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


def _run(coroutine: Any) -> Any:
    """This test is synchronous (Spark's calls block); the read-back helper is async."""
    import asyncio

    return asyncio.run(coroutine)
