"""Broker ingest: SEND_MESSAGE_V2 messages per second the project's Broker stores, one by one and pipelined,
from the project's RemotingClient and, sync one at a time, from Apache's C++ producer (PyPI ``rocketmq``
0.4.4), in the same run.

By default the broker runs as its own process (``rmq broker`` on a temporary store, any free port),
registered with a NameServer in another (``rmq namesrv``, which only the C++ client needs), so no client
shares an event loop or a GIL with the broker; ``--address`` measures a broker that is already running
(this project's or Apache's; add ``--namesrv`` to measure the C++ client too), ``--in-process`` runs the
broker in this process for profiling.

    .venv/bin/python -m benchmarks.broker [--seconds 5] [--sizes 100,1024] [--in-flight 1,16,64,256]
                                           [--repeat 3] [--cpp-messages 3000] [--flush ASYNC|SYNC]
                                           [--address host:port [--namesrv host:port]] [--skip-cpp]

Each message of the project's client goes to the next of the topic's 8 queues with a fresh unique id, built
the way a Java producer builds it; every answer is checked for SUCCESS. The C++ producer sends
``--cpp-messages`` messages through the ``tests/integration/cpp_peer`` runner (``send-sync``), timed from
its first SendResult to its last (see ``_cpp.py``). Every row is measured ``--repeat`` times: best and
median.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import socket
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import AsyncIterator
from pathlib import Path

from admin import Admin
from benchmarks import _cpp
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


@contextlib.asynccontextmanager
async def broker_in_process(
    store: Path, flush: str, namesrv: str, metrics_port: int | None = None
) -> AsyncIterator[str]:
    metrics: dict[str, object] = {}
    if metrics_port is not None:
        metrics = {"metrics_exporter_type": "PROM", "metrics_prom_exporter_port": metrics_port}
    broker = Broker(
        config_for_tests(
            store,
            flush_disk_type=f"{flush}_FLUSH",
            mapped_file_size_commit_log=1 << 30,
            namesrv_addr=namesrv,
            **metrics,
        )
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


def rates_text(rates: list[float]) -> str:
    return f"{max(rates):>12,.0f}{statistics.median(rates):>12,.0f}"


async def measure(address: str, args: argparse.Namespace, namesrv: str | None) -> None:
    try:
        await measure_clients(address, args, namesrv)
    finally:
        _cpp.stop_peers()  # a C++ peer still sending when this run was cancelled


async def measure_clients(address: str, args: argparse.Namespace, namesrv: str | None) -> None:
    seconds: float = args.seconds
    repeat: int = args.repeat
    sizes = [int(s) for s in args.sizes.split(",")]
    windows = [int(w) for w in args.in_flight.split(",")]
    sync_rates: dict[int, list[float]] = {}
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
        print(f"project RemotingClient, {repeat} measurements of {seconds:g} s per row")
        print(
            f"{'mode':<12}{'size':>7}{'in flight':>11}{'best msg/s':>12}{'median':>12}{'MB/s':>9}"
            f"{'p50 ms':>9}{'p99 ms':>9}"
        )
        for size in sizes:
            sender = Sender(conn, size)
            await run_sync(sender, min(0.5, seconds))  # warm-up
            for window in windows:
                rates: list[float] = []
                latencies: list[float] = []
                for _ in range(repeat):
                    if window == 1:
                        count, elapsed, run_latencies = await run_sync(sender, seconds)
                        latencies += run_latencies
                    else:
                        count, elapsed = await run_pipelined(sender, seconds, window)
                    rates.append(count / elapsed)
                if window == 1:
                    quantiles = statistics.quantiles(latencies, n=100)
                    p50, p99 = quantiles[49] * 1000, quantiles[98] * 1000
                    mode = "sync"
                    sync_rates[size] = rates
                else:
                    p50 = p99 = float("nan")
                    mode = "pipelined"
                print(
                    f"{mode:<12}{size:>7}{window:>11}{rates_text(rates)}{max(rates) * size / 1e6:>9.2f}"
                    f"{p50:>9.3f}{p99:>9.3f}",
                    flush=True,
                )
    if args.skip_cpp:
        return
    if namesrv is None:
        print("C++ client not measured: it needs a NameServer (--namesrv) that routes the broker")
        return
    reason = await asyncio.to_thread(_cpp.unavailable)
    if reason is not None:
        print(f"C++ client not measured: {reason}")
        return
    async with Admin(namesrv) as admin:
        await _cpp.wait_for_route(admin, TOPIC)
    print()
    print(
        f"sync, one at a time: project RemotingClient ({seconds:g} s per run) vs C++ producer "
        f"({args.cpp_messages} messages per run); msg/s best and median of {repeat}"
    )
    print(
        f"{'size':>6}{'project best':>14}{'median':>10}{'C++ best':>12}{'median':>10}"
        f"{'ratio best':>12}{'median':>8}"
    )
    for size in sizes:
        cpp_rates = []
        for _ in range(repeat):
            run = await asyncio.to_thread(_cpp.send_rate, namesrv, TOPIC, args.cpp_messages, size)
            cpp_rates.append(run.rate)
        project = sync_rates.get(size)
        line = f"{size:>6}"
        if project:
            line += f"{max(project):>14,.0f}{statistics.median(project):>10,.0f}"
        else:
            line += f"{'-':>14}{'-':>10}"
        line += f"{max(cpp_rates):>12,.0f}{statistics.median(cpp_rates):>10,.0f}"
        if project:
            ratio_best = max(project) / max(cpp_rates)
            ratio_median = statistics.median(project) / statistics.median(cpp_rates)
            line += f"{ratio_best:>12.2f}{ratio_median:>8.2f}"
        print(line, flush=True)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextlib.asynccontextmanager
async def scraping(port: int | None) -> AsyncIterator[None]:
    """Reads the broker's /metrics every second while the block runs (a busier scraper than Prometheus'
    default 15 s), so the measurement includes what collection costs the broker."""
    if port is None:
        yield
        return
    url = f"http://127.0.0.1:{port}/metrics"
    scrapes = 0

    async def scrape_forever() -> None:
        nonlocal scrapes
        while True:
            await asyncio.sleep(1.0)
            await asyncio.to_thread(lambda: urllib.request.urlopen(url, timeout=10).read())
            scrapes += 1

    task = asyncio.get_running_loop().create_task(scrape_forever())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        print(f"metrics scraped {scrapes} times")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each measurement")
    parser.add_argument("--sizes", default="100,1024", help="body sizes in bytes, comma-separated")
    parser.add_argument(
        "--in-flight", default="1,16,64,256", help="requests in flight (1 = sync), comma-separated"
    )
    parser.add_argument("--repeat", type=int, default=3, help="measurements per row (best and median)")
    parser.add_argument("--cpp-messages", type=int, default=3000, help="messages per C++ measurement")
    parser.add_argument("--skip-cpp", action="store_true", help="only the project's client")
    parser.add_argument(
        "--flush", default="ASYNC", choices=("ASYNC", "SYNC"), help="flush mode of a spawned broker"
    )
    parser.add_argument("--address", help="measure the broker at host:port instead of starting one")
    parser.add_argument("--namesrv", help="with --address: the NameServer the C++ client asks for routes")
    parser.add_argument("--in-process", action="store_true", help="run the broker in this process and loop")
    parser.add_argument(
        "--metrics",
        action="store_true",
        help="start the broker with Prometheus metrics on (metricsExporterType=PROM), scraped every second",
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    if args.address:
        print(f"broker at {args.address} (already running)")
        await measure(args.address, args, args.namesrv)
        return
    with tempfile.TemporaryDirectory(prefix="broker-bench-") as store:
        async with _cpp.namesrv_process() as namesrv:
            starter: contextlib.AbstractAsyncContextManager[str]
            metrics_port = free_port() if args.metrics else None
            if args.in_process:
                starter = broker_in_process(Path(store) / "store", args.flush, namesrv, metrics_port)
                where = "in this process (client and broker share one event loop)"
            else:
                extra = ["--metrics-port", str(metrics_port)] if metrics_port is not None else []
                starter = _cpp.broker_process(Path(store) / "store", args.flush, namesrv, extra)
                where = "own process"
            async with starter as address, scraping(metrics_port):
                print(
                    f"project Broker, {args.flush}_FLUSH, {where}, at {address}, NameServer {namesrv}; "
                    f"metrics {'on' if metrics_port else 'off'}; Python {sys.version.split()[0]}"
                )
                await measure(address, args, namesrv)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main())
