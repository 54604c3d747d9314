"""Producer throughput: sync, pipelined (N sends in flight) and batch messages per second, 100 B and 1 KiB.

Run against a cluster::

    .venv/bin/python benchmarks/producer.py --namesrv 127.0.0.1:9876 [--topic T] [--seconds 5]

The project's own Broker is not runnable yet, so there is no embedded cluster: ``--namesrv`` is required,
unless ``--loopback`` is given. ``--loopback`` starts, in this process, a stand-in NameServer and broker
that answer every send at once without storing anything; its figures measure the producer and the
transport (client and stand-in share one core's event loop), not a broker, and say so when printed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import statistics
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable

# This script is named like the package it measures: run as a script, its own folder comes first on the
# import path and would shadow the package. Drop that entry before importing it.
if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]

from producer import Message, Producer, ProducerConfig
from rocketmq_wire.bodies.route import BrokerData, QueueData, TopicRouteData
from rocketmq_wire.codes import RequestCode, ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.headers.send import SendMessageRequestHeaderV2, SendMessageResponseHeader
from rocketmq_wire.transport import Connection, RemotingServer


@contextlib.asynccontextmanager
async def loopback_cluster(topic: str, queues: int = 8) -> AsyncIterator[str]:
    """A stand-in NameServer and broker on 127.0.0.1; yields the NameServer address."""
    broker = RemotingServer("127.0.0.1", 0)
    namesrv = RemotingServer("127.0.0.1", 0)
    offsets: dict[int, int] = {}

    async def send(request: RemotingCommand, conn: Connection) -> RemotingCommand:
        queue_id = request.read_header(SendMessageRequestHeaderV2).queue_id or 0
        offset = offsets.get(queue_id, 0)
        offsets[queue_id] = offset + 1
        header = SendMessageResponseHeader(
            msg_id="7F00000100002A9F0000000000000000", queue_id=queue_id, queue_offset=offset
        )
        return request.make_response(ResponseCode.SUCCESS, header=header)

    async def ok(request: RemotingCommand, conn: Connection) -> RemotingCommand:
        return request.make_response(ResponseCode.SUCCESS)

    for code in (RequestCode.SEND_MESSAGE_V2, RequestCode.SEND_BATCH_MESSAGE):
        broker.register(code, send)
    for code in (RequestCode.HEART_BEAT, RequestCode.UNREGISTER_CLIENT):
        broker.register(code, ok)
    await broker.start()
    route = TopicRouteData(
        queue_datas=[
            QueueData(broker_name="loopback", read_queue_nums=queues, write_queue_nums=queues, perm=6)
        ],
        broker_datas=[
            BrokerData(cluster="Loopback", broker_name="loopback", broker_addrs={0: broker.address})
        ],
    )

    async def route_of(request: RemotingCommand, conn: Connection) -> RemotingCommand:
        if request.fields().get("topic") != topic:
            return request.make_response(ResponseCode.TOPIC_NOT_EXIST, "no such topic")
        return request.make_response(body=route.to_json())

    namesrv.register(RequestCode.GET_ROUTEINFO_BY_TOPIC, route_of)
    await namesrv.start()
    try:
        yield namesrv.address
    finally:
        await namesrv.close()
        await broker.close()


async def measure(
    seconds: float, step: Callable[[], Awaitable[int]], workers: int = 1
) -> tuple[float, list[float]]:
    """Messages per second of ``step`` (returning how many messages it sent) run by ``workers`` tasks for
    ``seconds``, and each step's latency in ms."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    latencies: list[float] = []
    sent = 0

    async def worker() -> None:
        nonlocal sent
        while loop.time() < deadline:
            began = loop.time()
            count = await step()  # not "sent += await ...": that reads sent before the await
            sent += count
            latencies.append((loop.time() - began) * 1000)

    started = loop.time()
    await asyncio.gather(*(worker() for _ in range(workers)))
    return sent / (loop.time() - started), latencies


def describe(rate: float, size: int, latencies: list[float]) -> str:
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return (
        f"{rate:>10,.0f} msg/s {rate * size / 1e6:>7.2f} MB/s   "
        f"per call p50 {statistics.median(ordered):6.2f} ms  p99 {p99:6.2f} ms"
    )


async def run(namesrv: str, args: argparse.Namespace) -> None:
    config = ProducerConfig(send_timeout_ms=10_000)
    async with Producer(args.group, namesrv, config=config) as producer:
        await producer.send(Message(args.topic, b"warm-up"))
        topic: str = args.topic
        batch_size: int = args.batch
        for size in args.sizes:

            async def one(body: bytes = b"x" * size) -> int:
                await producer.send(Message(topic, body))
                return 1

            async def batch(body: bytes = b"x" * size) -> int:
                await producer.send_batch([Message(topic, body) for _ in range(batch_size)])
                return batch_size

            rate, lat = await measure(args.seconds, one)
            print(f"{size:>5} B  sync                {describe(rate, size, lat)}")
            rate, lat = await measure(args.seconds, one, args.in_flight)
            print(f"{size:>5} B  pipelined ({args.in_flight:>3} in flight) {describe(rate, size, lat)}")
            rate, lat = await measure(args.seconds, batch)
            print(f"{size:>5} B  batch of {args.batch:<3}        {describe(rate, size, lat)}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--namesrv", help="NameServer address(es), host:port;host:port")
    parser.add_argument(
        "--loopback", action="store_true", help="in-process stand-in cluster (client cost only)"
    )
    parser.add_argument("--topic", default="ProducerBenchmark")
    parser.add_argument("--group", default="ProducerBenchmarkGroup")
    parser.add_argument("--seconds", type=float, default=3.0, help="time per measurement")
    parser.add_argument("--in-flight", type=int, default=64, help="concurrent sends of the pipelined run")
    parser.add_argument("--batch", type=int, default=32, help="messages per batch")
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[100, 1024])
    args = parser.parse_args()
    if not args.namesrv and not args.loopback:
        parser.error("--namesrv is required: the project's Broker cannot be embedded yet (or use --loopback)")
    logging.basicConfig(level=logging.WARNING)

    async def go() -> None:
        if args.namesrv:
            print(f"cluster at {args.namesrv}, topic {args.topic}, {time.strftime('%Y-%m-%d %H:%M')}")
            await run(args.namesrv, args)
            return
        print("LOOPBACK stand-in broker: producer + transport cost only, nothing is stored")
        async with loopback_cluster(args.topic) as namesrv:
            await run(namesrv, args)

    asyncio.run(go())
    sys.stdout.flush()


if __name__ == "__main__":
    main()
