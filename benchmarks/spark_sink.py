"""Spark sink throughput against the raw asyncio producer, at the same parallelism, in one run.

The cluster is any set-up of the integration suite (``--setup``): ``python``, the project's NameServer and
Broker in processes of their own (the default), or ``binaries-4.9.7``, ``binaries-5.3.3``, … , Apache's
NameServer and Broker from Maven Central. Both sides then write the same number of messages of the same
size to the same topic:

* raw: ``--parallelism`` processes, each one ``producer.Producer`` keeping ``--in-flight`` sends
  outstanding (timed from the start signal until every process has all acknowledgements, producer start
  and shutdown included, as a Spark task includes them);
* sink: ``df.write.format("rocketmq")`` from a ``local[parallelism]`` session with as many partitions,
  ``max.in.flight`` = ``--in-flight`` (timed around ``save()``, after a warm-up job).

    .venv/bin/python -m benchmarks.spark_sink [--setup python] [--messages 50000] [--size 100]
                                               [--parallelism 2] [--in-flight 64] [--batch-size 1]

Prints messages/s of both and their ratio; the target is a sink at 0.8 x the raw producer or better.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing
import multiprocessing.synchronize
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# Run as a script, this folder comes first on the import path, and its producer.py / broker.py benchmarks
# would shadow the packages of those names: drop that entry before anything imports them.
from benchmarks._clusters import create_topic, provider_cluster, stored_count

TOPIC = "SparkSinkBench"
QUEUES = 8


async def _raw_sends(namesrv: str, count: int, in_flight: int, size: int, topic: str = TOPIC) -> None:
    from producer import Message, Producer

    body = b"x" * size
    slots = asyncio.Semaphore(in_flight)
    failures: list[BaseException] = []

    async def one(producer: Producer) -> None:
        try:
            await producer.send(Message(topic, body))
        except Exception as exc:
            failures.append(exc)
        finally:
            slots.release()

    async with Producer("RawBench", namesrv) as producer:
        tasks = set()
        for _ in range(count):
            await slots.acquire()
            task = asyncio.ensure_future(one(producer))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
            await asyncio.sleep(0)
        while tasks:
            await asyncio.wait(list(tasks))
    if failures:
        raise RuntimeError(f"{len(failures)} raw send(s) failed, first: {failures[0]}")


def raw_producer(
    namesrv: str,
    count: int,
    in_flight: int,
    size: int,
    go: multiprocessing.synchronize.Event,
    topic: str = TOPIC,
) -> None:
    """Child process: wait for the start signal, then send ``count`` messages pipelined."""
    go.wait()
    asyncio.run(_raw_sends(namesrv, count, in_flight, size, topic))


def measure_raw(namesrv: str, args: argparse.Namespace, topic: str = TOPIC) -> float:
    context = multiprocessing.get_context("spawn")
    go = context.Event()
    share: int = args.messages // args.parallelism
    workers = [
        context.Process(target=raw_producer, args=(namesrv, share, args.in_flight, args.size, go, topic))
        for _ in range(args.parallelism)
    ]
    for worker in workers:
        worker.start()
    time.sleep(2)  # not synchronisation: lets the interpreters finish importing before the clock starts
    started = time.perf_counter()
    go.set()
    for worker in workers:
        worker.join()
    elapsed = time.perf_counter() - started
    bad = [w.exitcode for w in workers if w.exitcode != 0]
    if bad:
        raise RuntimeError(f"raw producer process(es) failed with exit codes {bad}")
    return float(share * args.parallelism / elapsed)


class SinkRunner:
    """One Spark session for every sink measurement (its start-up is not what is measured)."""

    def __init__(self, namesrv: str, args: argparse.Namespace, scratch: Path) -> None:
        from spark_connector.testing import local_spark

        self.namesrv = namesrv
        self.args = args
        self.summary = scratch / "summary.jsonl"
        self.spark = local_spark("rocketmq-sink-benchmark", cores=args.parallelism)
        self.write(args.parallelism * 100)  # warm-up: Python workers, JVM code paths

    def write(self, count: int) -> float:
        from pyspark.sql import functions as F

        args = self.args
        df = self.spark.range(0, count, 1, args.parallelism).select(
            F.expr(f"cast(repeat('x', {args.size}) as binary)").alias("body")
        )
        started = time.perf_counter()
        (
            df.write.format("rocketmq")
            .option("namesrv", self.namesrv)
            .option("topic", TOPIC)
            .option("max.in.flight", str(args.in_flight))
            .option("batch.size", str(args.batch_size))
            .option("summary.path", str(self.summary))
            .mode("append")
            .save()
        )
        return time.perf_counter() - started

    def measure(self) -> tuple[float, Any]:
        from spark_connector import read_summaries

        elapsed = self.write(self.args.messages)
        return self.args.messages / elapsed, read_summaries(self.summary)[-1]

    def close(self) -> None:
        self.spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--setup", default="python", help="python, binaries-4.9.7, binaries-5.3.3, …")
    parser.add_argument("--messages", type=int, default=50_000)
    parser.add_argument("--size", type=int, default=100, help="body bytes")
    parser.add_argument("--parallelism", type=int, default=2, help="raw processes = Spark cores = partitions")
    parser.add_argument("--in-flight", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=1, help="the sink's batch.size")
    parser.add_argument("--rounds", type=int, default=2, help="raw then sink, this many times; best of each")
    args = parser.parse_args()

    from spark_connector.testing import spark_unavailable_reason

    missing = spark_unavailable_reason()
    if missing is not None:
        sys.exit(f"cannot run: {missing}")
    logging.basicConfig(level=logging.WARNING)
    raws: list[float] = []
    sinks: list[tuple[float, Any]] = []
    with provider_cluster(args.setup) as cluster, tempfile.TemporaryDirectory() as scratch:
        namesrv = cluster.namesrv  # type: ignore[attr-defined]
        asyncio.run(create_topic(namesrv, cluster.cluster_name, TOPIC, QUEUES))  # type: ignore[attr-defined]
        runner = SinkRunner(namesrv, args, Path(scratch))
        try:
            for _ in range(args.rounds):
                raws.append(measure_raw(namesrv, args))
                sinks.append(runner.measure())
        finally:
            runner.close()
        stored = asyncio.run(stored_count(namesrv, TOPIC))
        broker_kinds = ", ".join(sorted({b.kind for b in cluster.brokers}))  # type: ignore[attr-defined]
    raw = max(raws)
    sink, summary = max(sinks, key=lambda result: result[0])
    per_round = args.messages // args.parallelism * args.parallelism + args.messages
    expected = per_round * args.rounds + args.parallelism * 100
    print(f"set-up {args.setup} (broker: {broker_kinds})")
    print(
        f"{args.messages} messages of {args.size} B, parallelism {args.parallelism}, "
        f"{args.in_flight} in flight per producer, sink batch.size {args.batch_size}"
    )
    print(f"raw producer : {raw:10.0f} msg/s   (rounds: {', '.join(f'{r:.0f}' for r in raws)})")
    print(
        f"spark sink   : {sink:10.0f} msg/s   (rounds: {', '.join(f'{r:.0f}' for r, _ in sinks)}; "
        f"best: tasks' own send time {summary.task_seconds:.2f} s over {summary.tasks} tasks, "
        f"{summary.requests} requests)"
    )
    print(f"ratio        : {sink / raw:10.2f} x   (target >= 0.80)")
    print(f"broker stored: {stored} messages (expected {expected})")


if __name__ == "__main__":
    main()
