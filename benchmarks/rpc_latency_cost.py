"""What timing a request for ``rocketmq_rpc_latency`` costs: CPU time per call of a handler that answers at
once, awaited bare and wrapped by :class:`broker.rpc_latency.RpcLatency` (what the broker adds to every
request while metrics are exported). CPU time, not wall time, so a busy machine moves it little.

    .venv/bin/python -m benchmarks.rpc_latency_cost [--calls 200000] [--rounds 3]

Compare the difference with the broker's CPU time per send (``benchmarks/broker.py``'s rate, one core).
"""

from __future__ import annotations

import argparse
import asyncio
import time

from broker.rpc_latency import RpcLatency
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


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200_000)
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


if __name__ == "__main__":
    asyncio.run(main())
