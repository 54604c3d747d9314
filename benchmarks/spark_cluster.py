"""The connector on a Spark standalone cluster against the project's raw clients, on an Apache broker, in one
run: source read throughput against raw lite-pull consumers reading the same topic, sink throughput against
raw producers sending the same rows.

The cluster is the integration suite's (``tests/integration/spark_standalone.py``): a master and two workers
of one core each from the pyspark package, each worker with its own executor JVM; this process is the
driver. The brokers are any set-up of the suite (``--setup``, Apache 5.5.0's NameServer and Broker from
Maven Central by default). The raw side runs as many processes as the cluster has cores:

* read: ``spark.read.format("rocketmq")`` of the topic's ``--messages`` messages written to Spark's
  ``noop`` sink (every row read and converted, nothing kept), timed around the action, against processes
  each running one ``consumer.PullConsumer`` assigned its share of the queues (``assign`` + ``seek`` +
  ``poll`` until its share is read; consumer start included, as a task includes its own);
* write: ``df.write.format("rocketmq")`` of as many rows as partitions x ``--messages`` / cores, against
  ``benchmarks.spark_sink``'s raw producers (``--in-flight`` sends outstanding each).

    .venv/bin/python -m benchmarks.spark_cluster [--setup binaries-5.5.0] [--messages 20000] [--size 100]
                                                  [--in-flight 64] [--pull-batch 32] [--rounds 2]

Prints messages/s of each side and the ratios (target: 0.8 or better each); the best of ``--rounds``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing
import multiprocessing.synchronize
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import spark_sink
from benchmarks._clusters import create_topic, provider_cluster, stored_count

SOURCE_TOPIC = "SparkClusterReadBench"
QUEUES = 8
#: Executors (one core each): as many raw processes.
CORES = 2

#: (broker name, queue id, first offset, end offset) of one queue.
QueueRange = tuple[str, int, int, int]


async def _queue_ranges(namesrv: str, topic: str) -> list[QueueRange]:
    from admin import Admin

    async with Admin(namesrv) as admin:
        status = await admin.topic_status(topic)
    return [(q.broker_name, q.queue_id, q.min_offset, q.max_offset) for q in status.queues]


async def _raw_reads(namesrv: str, topic: str, share: list[QueueRange], pull_batch: int) -> None:
    from consumer import ConsumerConfig, MessageQueue, PullConsumer

    expected = sum(end - first for _, _, first, end in share)
    consumer = PullConsumer(
        f"RawReadBench-{share[0][1]}",
        namesrv,
        auto_commit=False,
        config=ConsumerConfig(pull_batch_size=pull_batch),
    )
    async with consumer:
        queues = [MessageQueue(topic, broker, queue_id) for broker, queue_id, _, _ in share]
        consumer.assign(queues)
        for queue, (_, _, first, _) in zip(queues, share, strict=True):
            await consumer.seek(queue, first)
        read = 0
        while read < expected:
            batch = await consumer.poll(timeout=10.0)
            if not batch:
                raise RuntimeError(f"raw reader stalled at {read} of {expected}")
            read += len(batch)


def raw_reader(
    namesrv: str, topic: str, share: list[QueueRange], pull_batch: int, go: multiprocessing.synchronize.Event
) -> None:
    """Child process: wait for the start signal, then read every message of ``share``."""
    go.wait()
    asyncio.run(_raw_reads(namesrv, topic, share, pull_batch))


def measure_raw_read(namesrv: str, ranges: list[QueueRange], args: argparse.Namespace) -> float:
    context = multiprocessing.get_context("spawn")
    go = context.Event()
    shares = [ranges[i::CORES] for i in range(CORES)]
    readers = [
        context.Process(target=raw_reader, args=(namesrv, SOURCE_TOPIC, share, args.pull_batch, go))
        for share in shares
        if share
    ]
    for reader in readers:
        reader.start()
    time.sleep(2)  # not synchronisation: lets the interpreters finish importing before the clock starts
    started = time.perf_counter()
    go.set()
    for reader in readers:
        reader.join()
    elapsed = time.perf_counter() - started
    bad = [r.exitcode for r in readers if r.exitcode != 0]
    if bad:
        raise RuntimeError(f"raw reader process(es) failed with exit codes {bad}")
    return sum(end - first for _, _, first, end in ranges) / elapsed


class ClusterRunner:
    """This process as the driver of one application on the standalone cluster."""

    def __init__(self, master_url: str, namesrv: str, args: argparse.Namespace) -> None:
        from spark_connector.testing import cluster_spark
        from tests.integration.spark_standalone import SESSION_SETTINGS, wait_for_executors

        self.namesrv = namesrv
        self.args = args
        self.spark = cluster_spark(master_url, "rocketmq-cluster-benchmark", **SESSION_SETTINGS)
        wait_for_executors(self.spark, CORES)

    def source(self) -> Any:
        return (
            self.spark.read.format("rocketmq")
            .option("namesrv", self.namesrv)
            .option("topic", SOURCE_TOPIC)
            .option("pull.batch.size", str(self.args.pull_batch))
            .load()
        )

    def count(self) -> int:
        return int(self.source().count())

    def read(self, messages: int) -> float:
        started = time.perf_counter()
        self.source().write.format("noop").mode("overwrite").save()
        return messages / (time.perf_counter() - started)

    def write(self, count: int) -> float:
        from pyspark.sql import functions as F

        args = self.args
        df = self.spark.range(0, count, 1, CORES).select(
            F.expr(f"cast(repeat('x', {args.size}) as binary)").alias("body")
        )
        started = time.perf_counter()
        (
            df.write.format("rocketmq")
            .option("namesrv", self.namesrv)
            .option("topic", spark_sink.TOPIC)
            .option("max.in.flight", str(args.in_flight))
            .option("batch.size", str(args.batch_size))
            .mode("append")
            .save()
        )
        return count / (time.perf_counter() - started)

    def close(self) -> None:
        self.spark.stop()


def _rounds(values: list[float]) -> str:
    return ", ".join(f"{v:.0f}" for v in values)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--setup", default="binaries-5.5.0", help="binaries-5.5.0, binaries-5.3.3, python, …")
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--size", type=int, default=100, help="body bytes")
    parser.add_argument("--in-flight", type=int, default=64, help="sends outstanding per producer / task")
    parser.add_argument("--batch-size", type=int, default=1, help="the sink's batch.size")
    parser.add_argument("--pull-batch", type=int, default=32, help="messages per pull, both sides")
    parser.add_argument("--rounds", type=int, default=2, help="raw then Spark, this many times; best of each")
    args = parser.parse_args()
    args.parallelism = CORES  # benchmarks.spark_sink's raw producers read it

    from spark_connector.testing import spark_unavailable_reason
    from tests.integration.spark_standalone import standalone_cluster

    missing = spark_unavailable_reason()
    if missing is not None:
        sys.exit(f"cannot run: {missing}")
    logging.basicConfig(level=logging.WARNING)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # the driver's JVM binds and reports loopback
    results: dict[str, list[float]] = {"raw read": [], "spark read": [], "raw write": [], "spark write": []}
    with (
        provider_cluster(args.setup) as cluster,
        tempfile.TemporaryDirectory(prefix="rmq-spark-cluster-") as scratch,
        standalone_cluster(Path(scratch)) as spark_cluster,
    ):
        namesrv = cluster.namesrv  # type: ignore[attr-defined]
        cluster_name = cluster.cluster_name  # type: ignore[attr-defined]
        for topic in (SOURCE_TOPIC, spark_sink.TOPIC):
            asyncio.run(create_topic(namesrv, cluster_name, topic, QUEUES))
        results["raw write"].append(spark_sink.measure_raw(namesrv, args, SOURCE_TOPIC))  # also the input
        ranges = asyncio.run(_queue_ranges(namesrv, SOURCE_TOPIC))
        filled = sum(end - first for _, _, first, end in ranges)
        runner = ClusterRunner(spark_cluster.url, namesrv, args)
        try:
            read = runner.count()  # warm-up: Python workers on both executors, the source's code paths
            if read != filled:
                sys.exit(f"the source read {read} of {filled} messages")
            runner.write(CORES * 100)
            for round_ in range(args.rounds):
                results["raw read"].append(measure_raw_read(namesrv, ranges, args))
                results["spark read"].append(runner.read(filled))
                if round_:
                    results["raw write"].append(spark_sink.measure_raw(namesrv, args))
                results["spark write"].append(runner.write(args.messages))
        finally:
            runner.close()
        stored = asyncio.run(stored_count(namesrv, spark_sink.TOPIC))
        broker_kinds = ", ".join(sorted({b.kind for b in cluster.brokers}))  # type: ignore[attr-defined]
    best = {name: max(values) for name, values in results.items()}
    print(f"set-up {args.setup} (broker: {broker_kinds}); Spark standalone, {CORES} workers of 1 core")
    print(
        f"{args.messages} messages of {args.size} B in {QUEUES} queues, {CORES} raw processes, "
        f"pull batch {args.pull_batch}, {args.in_flight} in flight per producer, "
        f"sink batch.size {args.batch_size}"
    )
    for name, values in results.items():
        print(f"{name:<13}: {best[name]:10.0f} msg/s   (rounds: {_rounds(values)})")
    print(f"read ratio   : {best['spark read'] / best['raw read']:10.2f} x   (target >= 0.80)")
    print(f"write ratio  : {best['spark write'] / best['raw write']:10.2f} x   (target >= 0.80)")
    expected = CORES * 100 + args.messages * args.rounds + args.messages // CORES * CORES * (args.rounds - 1)
    print(f"broker stored: {stored} messages in {spark_sink.TOPIC} (expected {expected})")


if __name__ == "__main__":
    main()
