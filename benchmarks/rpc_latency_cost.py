"""What timing a request for ``rocketmq_rpc_latency`` costs, in CPU time rather than wall time, so that a
busy machine moves the figures less:

* per call of a handler that answers at once, awaited bare and wrapped by
  :class:`broker.rpc_latency.RpcLatency` (what the broker adds to every request while metrics are exported);
* per send of 1 KiB (64 in flight) to an in-process broker with metrics off and on, alternated, client and
  broker in this one process: the ratio is the send path's throughput with metrics on over off, for a
  process that is CPU-bound.

    .venv/bin/python -m benchmarks.rpc_latency_cost [--calls 200000] [--sends 4000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

from broker.rpc_latency import RpcLatency
from broker.testing import BrokerClient, running_broker
from rocketmq_wire import RemotingCommand, RequestCode
from rocketmq_wire.transport import Connection, Handler
from rocketmq_wire.transport.dispatch import Outcome


class _OpenConnection:
    """Only what the timing reads of a connection."""

    is_closed = False


async def _per_call_us(handler: Handler, request: RemotingCommand, conn: Connection, calls: int) -> float:
    started = time.process_time()
    for _ in range(calls):
        await handler(request, conn)
    return (time.process_time() - started) / calls * 1e6


async def _cpu_per_send_us(metrics: bool, sends: int) -> float:
    extra: dict[str, Any] = (
        {"metrics_exporter_type": "PROM", "metrics_prom_exporter_port": 0} if metrics else {}
    )
    body = b"x" * 1024
    with tempfile.TemporaryDirectory(prefix="rpc-latency-cost-") as root:
        async with running_broker(Path(root) / "store", **extra) as broker:
            async with BrokerClient(broker.address) as client:
                await client.create_topic("RpcLatencyCost", queues=8)
                for _ in range(200):  # warm up
                    await client.send("RpcLatencyCost", body)
                window = asyncio.Semaphore(64)

                async def one(index: int) -> None:
                    async with window:
                        await client.send("RpcLatencyCost", body, queue_id=index % 8)

                started = time.process_time()
                await asyncio.gather(*(one(index) for index in range(sends)))
                return (time.process_time() - started) / sends * 1e6


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--sends", type=int, default=4000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    request = RemotingCommand.request(RequestCode.SEND_MESSAGE_V2)
    answer = request.make_response(0)

    async def answers_at_once(_request: RemotingCommand, _conn: Connection) -> Outcome:
        return answer

    conn: Connection = _OpenConnection()  # type: ignore[assignment]
    wrapped = RpcLatency().wrap(answers_at_once)
    for round_number in range(1, args.rounds + 1):
        bare = await _per_call_us(answers_at_once, request, conn, args.calls)
        timed = await _per_call_us(wrapped, request, conn, args.calls)
        print(f"round {round_number}: bare {bare:.2f} us, timed {timed:.2f} us, added {timed - bare:.2f} us")
    for round_number in range(1, args.rounds + 1):
        off = await _cpu_per_send_us(False, args.sends)
        on = await _cpu_per_send_us(True, args.sends)
        print(
            f"round {round_number}: CPU per send off {off:.0f} us, on {on:.0f} us, on/off rate {off / on:.3f}"
        )


if __name__ == "__main__":
    asyncio.run(main())
