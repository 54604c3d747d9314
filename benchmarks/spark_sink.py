"""Spark sink throughput against the raw asyncio producer, at the same parallelism, in one run.

The project's NameServer and Broker run in a child process of their own. Both sides then write the same
number of messages of the same size to the same topic:

* raw: ``--parallelism`` processes, each one ``producer.Producer`` keeping ``--in-flight`` sends
  outstanding (timed from the start signal until every process has all acknowledgements, producer start
  and shutdown included, as a Spark task includes them);
* sink: ``df.write.format("rocketmq")`` from a ``local[parallelism]`` session with as many partitions,
  ``max.in.flight`` = ``--in-flight`` (timed around ``save()``, after a warm-up job).

    .venv/bin/python benchmarks/spark_sink.py [--messages 50000] [--size 100] [--parallelism 2]
                                               [--in-flight 64] [--batch-size 1]

Prints messages/s of both and their ratio; the target is a sink at 0.8 x the raw producer or better.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing
import multiprocessing.connection
import multiprocessing.synchronize
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# Run as a script, this folder comes first on the import path, and its producer.py / broker.py benchmarks
# would shadow the packages of those names: drop that entry before anything imports them.
if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]

TOPIC = "SparkSinkBench"
QUEUES = 8


def serve_cluster(store: str, conn: multiprocessing.connection.Connection) -> None:
    """Child process: NameServer + Broker until the parent says stop (or goes away)."""
    from spark_connector.testing import LocalCluster

    logging.basicConfig(level=logging.WARNING)
    with LocalCluster(Path(store)) as cluster:
        cluster.create_topic(TOPIC, QUEUES)
        conn.send(cluster.namesrv_address)
        try:
            while True:
                request = conn.recv()
                if request == "count":
                    conn.send(cluster.message_count(TOPIC))
                else:
                    break
        except EOFError:
            pass


async def _raw_sends(namesrv: str, count: int, in_flight: int, size: int) -> None:
    from producer import Message, Producer

    body = b"x" * size
    slots = asyncio.Semaphore(in_flight)
    failures: list[BaseException] = []

    async def one(producer: Producer) -> None:
        try:
            await producer.send(Message(TOPIC, body))
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
    namesrv: str, count: int, in_flight: int, size: int, go: multiprocessing.synchronize.Event
) -> None:
    """Child process: wait for the start signal, then send ``count`` messages pipelined."""
    go.wait()
    asyncio.run(_raw_sends(namesrv, count, in_flight, size))


def measure_raw(namesrv: str, args: argparse.Namespace) -> float:
    context = multiprocessing.get_context("spawn")
    go = context.Event()
    share: int = args.messages // args.parallelism
    workers = [
        context.Process(target=raw_producer, args=(namesrv, share, args.in_flight, args.size, go))
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
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    raws: list[float] = []
    sinks: list[tuple[float, Any]] = []
    with tempfile.TemporaryDirectory() as scratch:
        server = context.Process(target=serve_cluster, args=(scratch + "/store", child), daemon=True)
        server.start()
        try:
            namesrv = parent.recv()
            runner = SinkRunner(namesrv, args, Path(scratch))
            try:
                for _ in range(args.rounds):
                    raws.append(measure_raw(namesrv, args))
                    sinks.append(runner.measure())
            finally:
                runner.close()
            parent.send("count")
            stored = parent.recv()
        finally:
            parent.send("stop")
            server.join(30)
            if server.is_alive():
                server.kill()
                server.join()
    raw = max(raws)
    sink, summary = max(sinks, key=lambda result: result[0])
    per_round = args.messages // args.parallelism * args.parallelism + args.messages
    expected = per_round * args.rounds + args.parallelism * 100
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
