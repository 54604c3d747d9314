"""GET_ROUTEINFO_BY_TOPIC answered per second by the NameServer over loopback.

Run: ``.venv/bin/python -m benchmarks.nameserver [--seconds 3] [--in-flight 64] [--topics 100]``. Starts a
NameServer on 127.0.0.1 in the same event loop, registers one broker with ``--topics`` topics, then keeps
``--in-flight`` route requests outstanding on one RemotingClient connection (as a busy Java client does)
for ``--seconds`` and prints the answers per second. Client and server share one core, so the figure is a
floor for a server with a core of its own.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import zlib

from nameserver.server import NameServer
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.bodies.register_broker import RegisterBrokerBody
from rocketmq_wire.bodies.topic_config import DataVersion, TopicConfig, TopicConfigSerializeWrapper
from rocketmq_wire.codes import MQVersion
from rocketmq_wire.headers.namesrv import GetRouteInfoRequestHeader, RegisterBrokerRequestHeader
from rocketmq_wire.transport import RemotingClient


def _registration(topics: int) -> RemotingCommand:
    table = {
        f"BenchTopic{i}": TopicConfig(topic_name=f"BenchTopic{i}", read_queue_nums=8, write_queue_nums=8)
        for i in range(topics)
    }
    wrapper = TopicConfigSerializeWrapper(
        topic_config_table=table, data_version=DataVersion(timestamp=1, counter=1)
    )
    body = RegisterBrokerBody(topic_config_serialize_wrapper=wrapper).to_json()
    header = RegisterBrokerRequestHeader(
        broker_name="broker-a",
        broker_addr="127.0.0.1:10911",
        cluster_name="DefaultCluster",
        ha_server_addr="127.0.0.1:10912",
        broker_id=0,
        compressed=False,
        body_crc32=zlib.crc32(body) & 0x7FFFFFFF,
    )
    return RemotingCommand.request(RequestCode.REGISTER_BROKER, header, body)


async def _run(seconds: float, in_flight: int, topics: int) -> tuple[int, float]:
    async with NameServer("127.0.0.1", 0) as server, RemotingClient() as broker, RemotingClient() as client:
        reply = await broker.invoke(server.address, _registration(topics), 5000)
        assert reply.code == ResponseCode.SUCCESS, reply
        done = 0
        stop_at = 0.0

        async def worker(index: int) -> None:
            nonlocal done
            topic = f"BenchTopic{index % topics}"
            while time.perf_counter() < stop_at:
                request = RemotingCommand.request(
                    RequestCode.GET_ROUTEINFO_BY_TOPIC,
                    GetRouteInfoRequestHeader(topic=topic),
                    version=MQVersion.V5_3_3,
                )
                response = await client.invoke(server.address, request, 5000)
                if response.code != ResponseCode.SUCCESS:
                    raise RuntimeError(f"unexpected answer {response!r}")
                done += 1

        await client.connection(server.address)
        start = time.perf_counter()
        stop_at = start + seconds
        await asyncio.gather(*(worker(i) for i in range(in_flight)))
        return done, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--in-flight", type=int, default=64)
    parser.add_argument("--topics", type=int, default=100)
    args = parser.parse_args()
    done, elapsed = asyncio.run(_run(args.seconds, args.in_flight, args.topics))
    print(
        f"GET_ROUTEINFO_BY_TOPIC over loopback, {args.in_flight} in flight on one connection: "
        f"{done / elapsed:,.0f} answers/s ({done} in {elapsed:.2f} s)"
    )


if __name__ == "__main__":
    main()
