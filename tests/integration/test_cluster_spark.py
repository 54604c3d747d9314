"""The Spark connector against every cluster: a DataFrame written with ``format("rocketmq")`` and read back,
through the connector's source and through the project's consumer.

One local Spark session (``local[2]``, workers on this interpreter) serves every provider; it is skipped,
with the reason, when pyspark, pyarrow or Java is missing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from spark_connector.testing import LocalCluster, local_spark, spark_unavailable_reason
from tests.integration.clusters.model import Cluster, unique_name
from tests.integration.clusters.readback import read_topic

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("scenario_budget")]

ROWS = 30


@pytest.fixture(scope="module")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The session, warmed up: Spark's first job with a Python data source starts and primes its Python
    workers (10-20 s on a busy machine), which belongs to set-up rather than to a scenario's budget."""
    missing = spark_unavailable_reason()
    if missing is not None:
        pytest.skip(missing)
    session = local_spark("rocketmq-cluster-tests")
    try:
        with LocalCluster(tmp_path_factory.mktemp("spark-warm-up") / "store") as local:
            schema = "body string, tags string"
            frame = session.createDataFrame([("warm-up", "w")], schema)
            frame.write.format("rocketmq").option("namesrv", local.namesrv_address).option(
                "topic", "SparkWarmUp"
            ).mode("append").save()
            reader = session.read.format("rocketmq").option("namesrv", local.namesrv_address)
            assert reader.option("topic", "SparkWarmUp").load().count() == 1
        yield session
    finally:
        session.stop()


def rows() -> list[tuple[Any, ...]]:
    return [
        (f"spark row {i} ✓".encode(), f"Tag{i % 3}", [f"row-{i}", "spark"], {"row": str(i), "ort": "Zürich"})
        for i in range(ROWS)
    ]


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
