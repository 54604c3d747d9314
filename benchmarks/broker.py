"""Broker ingest: SEND_MESSAGE_V2 messages per second the project's Broker stores, one by one and pipelined.

By default the broker runs as its own process (``rmq broker`` on a temporary store, any free port), so the
client and the broker do not share an event loop; ``--address`` measures a broker that is already running
(this project's or Apache's), ``--in-process`` runs both in this process for profiling.

    .venv/bin/python benchmarks/broker.py [--seconds 5] [--sizes 100,1024] [--in-flight 1,16,64,256]
                                           [--flush ASYNC|SYNC] [--address host:port]

Each message goes to the next of the topic's 8 queues with a fresh unique id, built the way a Java producer
builds it; every answer is checked for SUCCESS.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import re
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

# This script is named like the package it measures: run as a script, its own folder comes first on the
# import path and would shadow the package. Drop that entry before importing it.
if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]

from broker import Broker
from broker.testing import config_for_tests
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.headers.send import SendMessageRequestHeaderV2
from rocketmq_wire.headers.topic import CreateTopicRequestHeader
from rocketmq_wire.message import const
from rocketmq_wire.message.ids import UniqueIdGenerator
from rocketmq_wire.message.properties import encode_properties
from rocketmq_wire.transport import Connection, RemotingClient

TOPIC = "BrokerBench"
QUEUES = 8
_SERVING = re.compile(r"serving on (\S+:\d+)")
_REPO = Path(__file__).resolve().parents[1]


@contextlib.asynccontextmanager
async def broker_process(store: Path, flush: str) -> AsyncIterator[str]:
    """``rmq broker`` in a child process; yields its address, stops it by pid."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        "import typer; from cli.broker_cmd import broker; typer.run(broker)",
        "--store",
        str(store),
        "--port",
        "0",
        "--host",
        "127.0.0.1",
        "--flush",
        flush,
        "--log-level",
        "INFO",
        stderr=asyncio.subprocess.PIPE,
        cwd=_REPO,
        env={**os.environ, "PYTHONPATH": str(_REPO)},
    )
    drain: asyncio.Task[None] | None = None
    try:
        stderr = process.stderr
        assert stderr is not None
        address = None
        async with asyncio.timeout(30):
            while address is None:
                line = (await stderr.readline()).decode()
                if not line:
                    raise RuntimeError("the broker process exited before serving")
                found = _SERVING.search(line)
                address = found.group(1) if found else None

        async def discard_log() -> None:  # a full pipe would stall the broker
            while await stderr.readline():
                pass

        drain = asyncio.create_task(discard_log())
        yield address
    finally:
        if process.returncode is None:
            os.kill(process.pid, signal.SIGTERM)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(30):
                    await process.wait()
            if process.returncode is None:
                os.kill(process.pid, signal.SIGKILL)
                await process.wait()
        if drain is not None:
            drain.cancel()


@contextlib.asynccontextmanager
async def broker_in_process(store: Path, flush: str) -> AsyncIterator[str]:
    broker = Broker(
        config_for_tests(store, flush_disk_type=f"{flush}_FLUSH", mapped_file_size_commit_log=1 << 30)
    )
    await broker.start()
    try:
        yield broker.address
    finally:
        await broker.close()


class Sender:
    """Builds V2 send requests as a Java producer does and sends them over one connection."""

    def __init__(self, conn: Connection, size: int) -> None:
        self.conn = conn
        self.body = os.urandom(size)
        self.ids = UniqueIdGenerator("127.0.0.1")
        self.sent = 0

    def request(self) -> RemotingCommand:
        properties = encode_properties({const.WAIT: "true", const.UNIQ_KEY: self.ids.next_id()})
        header = SendMessageRequestHeaderV2(
            producer_group="bench-producer",
            topic=TOPIC,
            default_topic="TBW102",
            default_topic_queue_nums=QUEUES,
            queue_id=self.sent % QUEUES,
            sys_flag=0,
            born_timestamp=time.time_ns() // 1_000_000,
            flag=0,
            properties=properties,
            reconsume_times=0,
            unit_mode=False,
            batch=False,
            broker_name="broker-a",
        )
        self.sent += 1
        return RemotingCommand.request(RequestCode.SEND_MESSAGE_V2, header, self.body)

    async def send(self) -> None:
        answer = await self.conn.request(self.request(), 30)
        if answer.code != ResponseCode.SUCCESS:
            raise RuntimeError(f"send failed: {answer.code} {answer.remark}")


async def run_sync(sender: Sender, seconds: float) -> tuple[int, float, list[float]]:
    latencies: list[float] = []
    start = time.perf_counter()
    deadline = start + seconds
    while (now := time.perf_counter()) < deadline:
        await sender.send()
        latencies.append(time.perf_counter() - now)
    return len(latencies), time.perf_counter() - start, latencies


async def run_pipelined(sender: Sender, seconds: float, in_flight: int) -> tuple[int, float]:
    done = 0
    start = time.perf_counter()
    deadline = start + seconds

    async def lane() -> None:
        nonlocal done
        while time.perf_counter() < deadline:
            await sender.send()
            done += 1

    await asyncio.gather(*(lane() for _ in range(in_flight)))
    return done, time.perf_counter() - start


async def measure(address: str, seconds: float, sizes: list[int], windows: list[int]) -> None:
    async with RemotingClient() as client:
        create = CreateTopicRequestHeader(
            topic=TOPIC,
            default_topic="TBW102",
            read_queue_nums=QUEUES,
            write_queue_nums=QUEUES,
            perm=6,
            topic_filter_type="SINGLE_TAG",
            topic_sys_flag=0,
            order=False,
        )
        await client.invoke(
            address, RemotingCommand.request(RequestCode.UPDATE_AND_CREATE_TOPIC, create), 5000
        )
        conn = await client.connection(address)
        print(f"{'mode':<12}{'size':>7}{'in flight':>11}{'msgs/s':>12}{'MB/s':>9}{'p50 ms':>9}{'p99 ms':>9}")
        for size in sizes:
            sender = Sender(conn, size)
            await run_sync(sender, min(0.5, seconds))  # warm-up
            for window in windows:
                if window == 1:
                    count, elapsed, latencies = await run_sync(sender, seconds)
                    quantiles = statistics.quantiles(latencies, n=100)
                    p50, p99 = quantiles[49] * 1000, quantiles[98] * 1000
                    mode = "sync"
                else:
                    count, elapsed = await run_pipelined(sender, seconds, window)
                    p50 = p99 = float("nan")
                    mode = "pipelined"
                rate = count / elapsed
                print(
                    f"{mode:<12}{size:>7}{window:>11}{rate:>12,.0f}{rate * size / 1e6:>9.2f}"
                    f"{p50:>9.3f}{p99:>9.3f}"
                )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each measurement")
    parser.add_argument("--sizes", default="100,1024", help="body sizes in bytes, comma-separated")
    parser.add_argument(
        "--in-flight", default="1,16,64,256", help="requests in flight (1 = sync), comma-separated"
    )
    parser.add_argument(
        "--flush", default="ASYNC", choices=("ASYNC", "SYNC"), help="flush mode of a spawned broker"
    )
    parser.add_argument("--address", help="measure the broker at host:port instead of starting one")
    parser.add_argument("--in-process", action="store_true", help="run the broker in this process and loop")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    sizes = [int(s) for s in args.sizes.split(",")]
    windows = [int(w) for w in args.in_flight.split(",")]
    if args.address:
        print(f"broker at {args.address} (already running)")
        await measure(args.address, args.seconds, sizes, windows)
        return
    with tempfile.TemporaryDirectory(prefix="broker-bench-") as store:
        starter = broker_in_process if args.in_process else broker_process
        where = (
            "in this process (client and broker share one event loop)" if args.in_process else "own process"
        )
        async with starter(Path(store) / "store", args.flush) as address:
            print(
                f"project Broker, {args.flush}_FLUSH, {where}, at {address}; Python {sys.version.split()[0]}"
            )
            await measure(address, args.seconds, sizes, windows)


if __name__ == "__main__":
    asyncio.run(main())
