"""The RocketMQ sink in a real local Spark (``local[2]``) against the project's NameServer and Broker.

The servers run on a thread of their own (Spark's Python workers reach them over loopback); one Spark
session serves the whole module. What was written is read back twice: through the connector's own source
and through Apache's C++ client, an independent reader.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from spark_connector.testing import LocalCluster, spark_unavailable_reason
from tests.integration.cpp_peer import runner

pytestmark = pytest.mark.integration

_MISSING = spark_unavailable_reason()
if _MISSING is not None:
    pytest.skip(_MISSING, allow_module_level=True)

from pyspark.sql import DataFrame, SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql.types import (  # noqa: E402
    ArrayType,
    BinaryType,
    IntegerType,
    MapType,
    StringType,
    StructField,
    StructType,
)

from spark_connector import read_summaries  # noqa: E402

ROWS = 40


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path_factory.mktemp("sink-cluster") / "store") as local:
        yield local


def writer(df: DataFrame, cluster: LocalCluster, summary: Path | None = None, /, **options: str) -> Any:
    write = df.write.format("rocketmq").option("namesrv", cluster.namesrv_address).mode("append")
    if summary is not None:
        write = write.option("summary.path", str(summary))
    for name, value in options.items():
        write = write.option(name.replace("_", "."), value)
    return write


def binary_body(i: int) -> bytes:
    """Not UTF-8, and without NUL bytes so that the C++ client can return it whole."""
    return bytes([0xFF, 0xFE, 1 + i % 250]) + f"#{i}".encode()


def message_rows() -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Rows with binary bodies and rows with text bodies; every row tells its number in a property."""
    binary = [
        (binary_body(i), "TagBin", [f"kb{i}", "shared"], {"row": str(i), "kind": "binary"})
        for i in range(ROWS // 2)
    ]
    text = [
        (f"text body {i} é", None if i % 3 == 0 else "TagText", [f"kt{i}"], {"row": str(i), "kind": "text"})
        for i in range(ROWS // 2)
    ]
    return binary, text


def message_schema(body_type: Any) -> StructType:
    return StructType(
        [
            StructField("body", body_type),
            StructField("tags", StringType()),
            StructField("keys", ArrayType(StringType())),
            StructField("properties", MapType(StringType(), StringType())),
        ]
    )


@pytest.fixture(scope="module")
def written(spark: SparkSession, cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Topic ``SparkRoundTrip`` filled by two sink jobs; returns their summary file."""
    cluster.create_topic("SparkRoundTrip", 4)
    summary = tmp_path_factory.mktemp("summaries") / "round-trip.jsonl"
    binary, text = message_rows()
    binary_df = spark.createDataFrame(binary, message_schema(BinaryType())).repartition(2)
    text_df = spark.createDataFrame(text, message_schema(StringType())).repartition(2)
    writer(binary_df, cluster, summary, topic="SparkRoundTrip").save()
    writer(text_df, cluster, summary, topic="SparkRoundTrip", max_in_flight="4").save()
    return summary


def test_commit_summaries_count_every_acknowledged_message(written: Path, cluster: LocalCluster) -> None:
    summaries = read_summaries(written)
    assert [(s.mode, s.committed, s.rows, s.tasks, s.failed_tasks) for s in summaries] == [
        ("batch", True, ROWS // 2, 2, 0),
        ("batch", True, ROWS // 2, 2, 0),
    ]
    binary, text = message_rows()
    assert summaries[0].bytes == sum(len(row[0]) for row in binary)
    assert summaries[1].bytes == sum(len(row[0].encode()) for row in text)
    assert sum(p.rows for p in summaries[0].partitions) == ROWS // 2
    assert cluster.message_count("SparkRoundTrip") == ROWS


def test_read_back_with_the_source_every_body_and_property_intact(
    written: Path, spark: SparkSession, cluster: LocalCluster
) -> None:
    df = (
        spark.read.format("rocketmq")
        .option("namesrv", cluster.namesrv_address)
        .option("topic", "SparkRoundTrip")
        .load()
    )
    rows = df.collect()
    assert len(rows) == ROWS
    by_kind: dict[tuple[str, int], Any] = {
        (row.properties["kind"], int(row.properties["row"])): row for row in rows
    }
    binary, text = message_rows()
    for kind, expected in (("binary", binary), ("text", text)):
        for i, (body, tags, keys, properties) in enumerate(expected):
            row = by_kind[(kind, i)]
            assert row.body == (body if isinstance(body, bytes) else body.encode())
            assert row.tags == tags
            assert row.keys == keys
            assert row.properties == properties
            assert row.topic == "SparkRoundTrip"
            assert row.broker_name == "broker-a"
    assert len({row.msg_id for row in rows}) == ROWS
    assert {row.queue_id for row in rows} == {0, 1, 2, 3}, "unordered rows are spread over the queues"
    assert all(row.store_timestamp >= row.born_timestamp for row in rows)


def test_the_cpp_client_reads_what_the_sink_wrote(
    written: Path, cluster: LocalCluster, cpp_client: runner.CppClient
) -> None:
    result = cpp_client.pull_consume(
        cluster.namesrv_address, "SparkCppReader", "SparkRoundTrip", properties=["row", "kind"], timeout=60
    )
    received = result.check().messages()
    assert len(received) == ROWS
    binary, text = message_rows()
    expected = {("binary", i): row for i, row in enumerate(binary)} | {
        ("text", i): row for i, row in enumerate(text)
    }
    for message in received:
        body, tags, keys, properties = expected[(message.properties["kind"], int(message.properties["row"]))]
        assert message.body_exact
        assert message.body == (body if isinstance(body, bytes) else body.encode())
        assert message.tags == tags
        assert message.keys == " ".join(keys)
        assert {name: message.properties[name] for name in properties} == properties


def test_batches_topic_column_and_sharding_keys(
    spark: SparkSession, cluster: LocalCluster, tmp_path: Path
) -> None:
    cluster.create_topic("SparkBatchA", 4)
    cluster.create_topic("SparkBatchB", 4)
    rows = [
        (f"m{i}", "SparkBatchA" if i % 2 else "SparkBatchB", "cust-7" if i % 5 == 0 else None, i)
        for i in range(100)
    ]
    schema = "body string, topic string, sharding_key string, seq int"
    df = spark.createDataFrame(rows, schema).repartition(1)
    df = df.withColumn("properties", F.create_map(F.lit("seq"), F.col("seq").cast("string"))).drop("seq")
    summary = tmp_path / "batches.jsonl"
    writer(df, cluster, summary, batch_size="16").save()
    (result,) = read_summaries(summary)
    assert result.rows == 100
    assert result.batches >= 2, "rows without a sharding key went out as SEND_BATCH_MESSAGE"
    assert result.requests == result.batches + 20, "the 20 keyed rows were sent one by one"
    assert cluster.message_count("SparkBatchA") == 50
    assert cluster.message_count("SparkBatchB") == 50
    read = (
        spark.read.format("rocketmq")
        .option("namesrv", cluster.namesrv_address)
        .option("topic", "SparkBatchB")
        .load()
    )
    keyed = [row for row in read.collect() if int(row.properties["seq"]) % 5 == 0]
    assert len({row.queue_id for row in keyed}) == 1, "one sharding key, one queue"
    in_queue_order = [int(row.properties["seq"]) for row in sorted(keyed, key=lambda row: row.queue_offset)]
    assert in_queue_order == sorted(in_queue_order), "and in the order of the rows"


SCHEMA_ERRORS = [
    ("body binary, value string", "'value' is not a RocketMQ sink column"),
    ("tags string", "column 'body'"),
    ("body binary, delay_level string", "column 'delay_level' has type string"),
    ("body binary, keys array<int>", "column 'keys' has type array<int>"),
    ("body bigint", "column 'body' has type bigint"),
]


@pytest.mark.parametrize(("schema", "message"), SCHEMA_ERRORS, ids=[m for _, m in SCHEMA_ERRORS])
def test_schema_errors_fail_on_the_driver_before_any_send(
    spark: SparkSession, cluster: LocalCluster, tmp_path: Path, schema: str, message: str
) -> None:
    before = cluster.commit_log_end()
    df = spark.createDataFrame([], schema)
    summary = tmp_path / "none.jsonl"
    with pytest.raises(Exception, match=message):
        writer(df, cluster, summary, topic="SparkNeverWritten").save()
    assert cluster.commit_log_end() == before, "the broker stored nothing"
    assert read_summaries(summary) == [], "no job ran, so none was committed or aborted"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"batch_size": "0"}, "option 'batch.size' must be a positive integer"),
        ({"topic": "bad topic"}, "option 'topic'"),
        ({"access_key": "ak"}, "'access.key' and 'secret.key' go together"),
    ],
)
def test_option_errors_fail_on_the_driver(
    spark: SparkSession, cluster: LocalCluster, options: dict[str, str], message: str
) -> None:
    before = cluster.commit_log_end()
    df = spark.createDataFrame([(b"x",)], "body binary")
    with pytest.raises(Exception, match=message):
        writer(df, cluster, **{"topic": "SparkNeverWritten", **options}).save()
    assert cluster.commit_log_end() == before


def test_overwrite_mode_is_refused(spark: SparkSession, cluster: LocalCluster) -> None:
    df = spark.createDataFrame([(b"x",)], "body binary")
    with pytest.raises(Exception, match="mode 'overwrite' is not supported"):
        writer(df, cluster, topic="SparkNeverWritten").mode("overwrite").save()


def test_a_bad_row_fails_its_task_and_the_job_is_reported_aborted(
    spark: SparkSession, cluster: LocalCluster, tmp_path: Path
) -> None:
    cluster.create_topic("SparkBadRow", 2)
    rows: list[tuple[str, dict[str, str]]] = [(f"ok {i}", {"n": str(i)}) for i in range(10)]
    rows.append(("forged", {"UNIQ_KEY": "not yours"}))
    df = spark.createDataFrame(rows, "body string, properties map<string,string>").coalesce(1)
    summary = tmp_path / "aborted.jsonl"
    with pytest.raises(Exception, match=r"row 10: column 'properties'.*UNIQ_KEY"):
        writer(df, cluster, summary, topic="SparkBadRow").save()
    (aborted,) = read_summaries(summary)
    assert (aborted.committed, aborted.tasks, aborted.failed_tasks) == (False, 0, 1)
    # the whole Arrow batch is converted before its rows are sent, so the good rows beside the bad one
    # were not sent either (rows of batches before it would have been, and would stay written)
    assert cluster.message_count("SparkBadRow") == 0


def test_an_unreachable_cluster_fails_the_task(spark: SparkSession, tmp_path: Path) -> None:
    df = spark.createDataFrame([(b"x",)], "body binary")
    summary = tmp_path / "unreachable.jsonl"
    write = (
        df.write.format("rocketmq")
        .option("namesrv", "127.0.0.1:1")
        .option("topic", "Nowhere")
        .option("send.timeout.ms", "1000")
        .option("summary.path", str(summary))
        .mode("append")
    )
    with pytest.raises(Exception, match="SinkSendError"):
        write.save()
    (aborted,) = read_summaries(summary)
    assert not aborted.committed
    assert aborted.rows == 0


def test_streaming_write_of_a_rate_source(spark: SparkSession, cluster: LocalCluster, tmp_path: Path) -> None:
    """Three ``availableNow`` runs on one checkpoint: three micro-batches, each committed with its id."""
    cluster.create_topic("SparkStream", 2)
    summary = tmp_path / "stream.jsonl"
    for _ in range(3):
        source = (
            spark.readStream.format("rate-micro-batch")
            .option("rowsPerBatch", 25)
            .option("numPartitions", 2)
            .load()
        )
        query = (
            source.select(
                F.concat(F.lit("tick-"), F.col("value").cast("string")).alias("body"),
                F.lit("rate").alias("tags"),
                F.lit(1).cast(IntegerType()).alias("delay_level"),
            )
            .writeStream.format("rocketmq")
            .option("namesrv", cluster.namesrv_address)
            .option("topic", "SparkStream")
            .option("summary.path", str(summary))
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        assert query.awaitTermination(120), "the availableNow run ended"
        assert query.exception() is None
    summaries = read_summaries(summary)
    assert [(s.mode, s.batch_id, s.rows, s.committed) for s in summaries] == [
        ("stream", 0, 25, True),
        ("stream", 1, 25, True),
        ("stream", 2, 25, True),
    ]
    # delay level 1 (1 s): the broker parks them in its schedule topic first, then moves them over
    schedule = cluster.message_count("SCHEDULE_TOPIC_XXXX")
    assert schedule == 75


def test_python_workers_are_forked_by_the_connectors_daemon(spark: SparkSession) -> None:
    """``local_spark`` sets ``spark.python.daemon.module``: the workers' parent is the connector's daemon,
    which loaded the connector before forking them (``tests/unit/test_spark_daemon.py``)."""

    def parent_command(_: Any) -> str:
        import os

        with open(f"/proc/{os.getppid()}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode()

    parents = set(spark.sparkContext.parallelize(range(4), 2).map(parent_command).collect())
    assert parents and all("-m spark_connector.daemon" in command for command in parents), parents


def test_an_unknown_topic_fails_on_the_driver_unless_brokers_create_topics(
    spark: SparkSession, cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Asked as the producer asks: the topic's route, else the auto-create key topic's (TBW102)."""
    df = spark.createDataFrame([(f"row {i}",) for i in range(4)], "body string").repartition(2)
    store = tmp_path_factory.mktemp("no-auto-create") / "store"
    with LocalCluster(store, auto_create_topic_enable=False) as strict:
        before = strict.commit_log_end()
        with pytest.raises(Exception, match="topic 'SparkNoSuchTopic' does not exist and no broker creates"):
            writer(df, strict, topic="SparkNoSuchTopic").save()
        assert strict.commit_log_end() == before, "nothing was written"
    writer(df, cluster, topic="SparkCreatedOnFirstWrite").save()  # this broker creates topics on demand
    assert cluster.message_count("SparkCreatedOnFirstWrite") == 4
