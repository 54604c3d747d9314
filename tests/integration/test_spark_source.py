"""The RocketMQ source in a real local Spark (``local[2]``) against the project's NameServer and Broker:
bounded reads between offsets, and streaming reads that resume from their checkpoint."""

from __future__ import annotations

import json
import random
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from admin import Admin
from producer import Message
from spark_connector.testing import LocalCluster, spark_unavailable_reason

pytestmark = pytest.mark.integration

_MISSING = spark_unavailable_reason()
if _MISSING is not None:
    pytest.skip(_MISSING, allow_module_level=True)

from pyspark.sql import DataFrame, SparkSession  # noqa: E402

from spark_connector.progress import read_batch_metrics  # noqa: E402

PER_QUEUE = 20


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with LocalCluster(tmp_path_factory.mktemp("source-cluster") / "store") as local:
        local.create_topic("SourceTopic", 2)
        messages = [
            Message(
                "SourceTopic", f"q{q}-{i}".encode(), tags=f"T{q}", keys=[f"key{i}"], properties={"i": str(i)}
            )
            for i in range(PER_QUEUE)
            for q in (0, 1)
        ]
        local.send(messages, queue_ids=[q for _ in range(PER_QUEUE) for q in (0, 1)])
        yield local


def source(spark: SparkSession, cluster: LocalCluster, topic: str = "SourceTopic", **options: str) -> Any:
    read = spark.read.format("rocketmq").option("namesrv", cluster.namesrv_address).option("topic", topic)
    for name, value in options.items():
        read = read.option(name, value)
    return read


def positions(df: DataFrame) -> list[tuple[int, int]]:
    return sorted((row.queue_id, row.queue_offset) for row in df.select("queue_id", "queue_offset").collect())


def test_everything_by_default_one_partition_per_queue(spark: SparkSession, cluster: LocalCluster) -> None:
    df = source(spark, cluster).load()
    assert df.rdd.getNumPartitions() == 2
    rows = df.collect()
    assert len(rows) == 2 * PER_QUEUE
    for row in rows:
        i = row.queue_offset
        assert row.body == f"q{row.queue_id}-{i}".encode()
        assert (row.tags, row.keys, row.properties) == (f"T{row.queue_id}", [f"key{i}"], {"i": str(i)})


def test_offsets_as_json_and_named_positions(spark: SparkSession, cluster: LocalCluster) -> None:
    df = source(
        spark,
        cluster,
        startingOffsets=json.dumps({"broker-a": {"0": 5, "1": -2}}),
        endingOffsets=json.dumps({"broker-a": {"0": 8}}),
    ).load()
    assert positions(df) == [(0, 5), (0, 6), (0, 7)] + [(1, i) for i in range(PER_QUEUE)]
    assert source(spark, cluster, startingOffsets="latest").load().count() == 0


def test_an_offset_spec_naming_a_missing_queue_is_refused(spark: SparkSession, cluster: LocalCluster) -> None:
    df = source(spark, cluster, startingOffsets=json.dumps({"broker-z": {"0": 1}})).load()
    with pytest.raises(Exception, match="broker-z"):
        df.collect()


def test_an_unknown_topic_is_refused(spark: SparkSession, cluster: LocalCluster) -> None:
    with pytest.raises(Exception, match="NoSuchTopic"):
        source(spark, cluster, topic="NoSuchTopic").load().collect()


class Collected:
    """``foreachBatch`` target: every micro-batch's rows, on the test's side of py4j."""

    def __init__(self) -> None:
        self.batches: list[tuple[int, list[Any]]] = []
        self._lock = threading.Lock()

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        rows = df.collect()
        with self._lock:
            self.batches.append((batch_id, rows))


def run_stream(spark: SparkSession, cluster: LocalCluster, checkpoint: Path, **options: str) -> Collected:
    """One ``availableNow`` run of a streaming read into ``foreachBatch``."""
    collected = Collected()
    read = spark.readStream.format("rocketmq").option("namesrv", cluster.namesrv_address)
    for name, value in options.items():
        read = read.option(name, value)
    query = (
        read.load()
        .writeStream.foreachBatch(collected)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120), "the availableNow run ended"
    assert query.exception() is None
    return collected


def test_streaming_resumes_from_its_checkpoint(
    spark: SparkSession, cluster: LocalCluster, tmp_path: Path
) -> None:
    cluster.create_topic("StreamSource", 2)
    cluster.send([Message("StreamSource", f"first-{i}".encode()) for i in range(12)])
    first = run_stream(spark, cluster, tmp_path / "checkpoint", topic="StreamSource")
    assert sorted(row.body for _, rows in first.batches for row in rows) == sorted(
        f"first-{i}".encode() for i in range(12)
    )
    cluster.send([Message("StreamSource", f"second-{i}".encode()) for i in range(5)])
    second = run_stream(spark, cluster, tmp_path / "checkpoint", topic="StreamSource")
    assert sorted(row.body for _, rows in second.batches for row in rows) == sorted(
        f"second-{i}".encode() for i in range(5)
    ), "only what arrived after the checkpointed offsets"
    assert min(batch_id for batch_id, _ in second.batches) > max(batch_id for batch_id, _ in first.batches)


def test_max_messages_per_trigger_splits_the_backlog(
    spark: SparkSession, cluster: LocalCluster, tmp_path: Path
) -> None:
    collected = run_stream(
        spark, cluster, tmp_path / "checkpoint", topic="SourceTopic", maxMessagesPerTrigger="15"
    )
    sizes = [len(rows) for _, rows in sorted(collected.batches, key=lambda batch: batch[0])]
    assert sizes == [15, 15, 10]
    seen = sorted((row.queue_id, row.queue_offset) for _, rows in collected.batches for row in rows)
    assert seen == [(q, i) for q in (0, 1) for i in range(PER_QUEUE)], "each message exactly once"


def test_streaming_starting_at_latest_reads_only_new_messages(
    spark: SparkSession, cluster: LocalCluster, tmp_path: Path
) -> None:
    cluster.create_topic("StreamLatest", 1)
    cluster.send([Message("StreamLatest", b"old")])
    first = run_stream(
        spark, cluster, tmp_path / "checkpoint", topic="StreamLatest", startingOffsets="latest"
    )
    assert [row for _, rows in first.batches for row in rows] == []
    cluster.send([Message("StreamLatest", b"new")])
    second = run_stream(
        spark, cluster, tmp_path / "checkpoint", topic="StreamLatest", startingOffsets="latest"
    )
    assert [row.body for _, rows in second.batches for row in rows] == [b"new"]


#: Commit-log files of 64 KiB and bodies of 8 KiB: a few dozen messages fill several files (random bytes: the
#: producer compresses bodies over 4 KiB, and a repetitive one would shrink to nothing).
SEGMENT_BYTES = 64 * 1024
BODY = random.Random(37).randbytes(8192)


def test_offsets_deleted_by_retention_fail_the_query_or_are_skipped_and_counted(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A checkpoint left behind by retention: the broker's own clean-up (DELETE_EXPIRED_COMMITLOG, asked as
    ``mqadmin deleteExpiredCommitLog`` asks, no reserve time) removes the files holding its next offset."""
    every_hour = ";".join(str(hour) for hour in range(24))
    settings = {
        "mapped_file_size_commit_log": SEGMENT_BYTES,
        "file_reserved_time": 0,
        "delete_when": every_hour,
    }
    with LocalCluster(tmp_path / "store", **settings) as local:
        local.create_topic("LossTopic", 1)
        local.send([Message("LossTopic", BODY) for _ in range(5)])
        checkpoint = tmp_path / "checkpoint"
        first = run_stream(spark, local, checkpoint, topic="LossTopic")
        assert sum(len(rows) for _, rows in first.batches) == 5
        local.send([Message("LossTopic", BODY + str(i).encode()) for i in range(30)])

        async def delete_expired() -> int:
            async with Admin(local.namesrv_address) as admin:
                await admin.delete_expired_commit_log(broker_addr=local.broker_address)
            return local.broker.store.get_min_offset("LossTopic", 0)

        deadline = time.monotonic() + 20
        low = local.call(delete_expired)
        while low <= 5 and time.monotonic() < deadline:  # a file goes once flushed: the flush is periodic
            time.sleep(0.2)
            low = local.call(delete_expired)
        assert low > 5, "retention deleted the files holding the checkpoint's next offset"

        read = spark.readStream.format("rocketmq").option("namesrv", local.namesrv_address)
        failing = (
            read.option("topic", "LossTopic")
            .load()
            .writeStream.foreachBatch(Collected())
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        # The broker's own clean-up goes on deleting (every hour is a deletion hour), so the low offset the
        # query meets may have moved past the one read above: never back, nor past the file being written.
        with pytest.raises(Exception) as failed:
            failing.awaitTermination(60)
        reported = re.search(
            r"data loss on topic 'LossTopic', broker broker-a, queue 0: the query's next offset is 5 "
            r"but the broker keeps offsets from (\d+) on, so (\d+) message\(s\) were deleted",
            str(failed.value),
        )
        assert reported, f"no data-loss error naming the queue and offsets: {failed.value}"
        kept_from, deleted = int(reported[1]), int(reported[2])
        assert low <= kept_from < 35 and deleted == kept_from - 5

        metrics = tmp_path / "metrics.jsonl"
        skipping = run_stream(
            spark,
            local,
            checkpoint,
            topic="LossTopic",
            failOnDataLoss="false",
            **{"metrics.path": str(metrics)},
        )
        offsets = sorted(row.queue_offset for _, rows in skipping.batches for row in rows)
        first_read = offsets[0] if offsets else 35
        assert kept_from <= first_read and offsets == list(range(first_read, 35)), (
            "read on from the first offset still kept, with no gap after it"
        )
        figures = read_batch_metrics(metrics)
        skipped = first_read - 5
        assert (sum(f.skipped for f in figures), figures[-1].skipped_total) == (skipped, skipped)
        assert sum(f.messages for f in figures) == 35 - first_read
