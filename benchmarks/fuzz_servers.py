"""Long fuzz runs against the project's NameServer and Broker, with the engine of the unit test's short one.

    .venv/bin/python -m benchmarks.fuzz_servers [--seed 1] [--frames 100000] [--connections 8]
                                                [--timeout 5] [--servers namesrv,broker] [--log-level ERROR]

Both servers run in this process on loopback (the broker on a temporary store, registered with the
NameServer, long polling off so that a held pull is answered within ``shortPollingTimeMills``). Mutated
frames of the common requests (``tests/server_fuzz.py``) are sent to each server in rounds of at most
10,000, the seed of round ``k`` being ``seed + k``. Printed per server: frames sent, answered, closed,
silent (neither answered nor closed within ``--timeout`` seconds: the failures), frames that owe no answer
(oneway, response-flagged, END_TRANSACTION), and the same by kind of mutation, with a hex sample of up to
20 silent frames. The exit status is 1 if any frame went silent or a server stopped answering a clean
request afterwards, else 0.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import tempfile
import time
from pathlib import Path

# This folder holds scripts named like the packages they measure: run as a script, it would come first on
# the import path and shadow them. Drop it, and make the repository (for ``tests``) importable instead.
from broker.testing import running_broker
from nameserver import NameServer, NamesrvConfig
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.transport import RemotingClient, RemotingError
from tests import server_fuzz

ROUND = 10_000


async def _fuzz_one(
    name: str, address: str, frames: int, seed: int, connections: int, timeout: float
) -> server_fuzz.Figures:
    corpus = server_fuzz.namesrv_corpus() if name == "namesrv" else server_fuzz.broker_corpus()
    total = server_fuzz.Figures()
    started = time.perf_counter()
    done = 0
    round_index = 0
    while done < frames:
        count = min(ROUND, frames - done)
        figures = await server_fuzz.fuzz(
            address, corpus, count, seed + round_index, connections=connections, timeout=timeout
        )
        total.add(figures)
        done += count
        round_index += 1
        print(
            f"{name}: {done}/{frames} frames, {total.silent} silent, {time.perf_counter() - started:.1f} s",
            file=sys.stderr,
            flush=True,
        )
    return total


async def _still_answers(address: str, code: int) -> bool:
    try:
        async with RemotingClient() as client:
            answer = await client.invoke(address, RemotingCommand.request(code), 5000)
    except RemotingError as exc:
        print(f"{address} no longer answers: {exc}", file=sys.stderr)
        return False
    return answer.code == ResponseCode.SUCCESS


async def run(args: argparse.Namespace) -> int:
    servers = [s.strip() for s in args.servers.split(",") if s.strip()]
    with tempfile.TemporaryDirectory(prefix="fuzz-servers-") as tmp:
        config = NamesrvConfig(kv_config_path=str(Path(tmp) / "kvConfig.json"))
        async with NameServer("127.0.0.1", 0, config=config) as namesrv:
            namesrv_address = f"127.0.0.1:{namesrv.remoting.port}"
            async with running_broker(
                Path(tmp) / "store",
                namesrv_addr=namesrv_address,
                long_polling_enable=False,
                short_polling_time_mills=100,
            ) as broker:
                addresses = {"namesrv": namesrv_address, "broker": broker.address}
                started = time.perf_counter()
                results = await asyncio.gather(
                    *(
                        _fuzz_one(
                            name, addresses[name], args.frames, args.seed, args.connections, args.timeout
                        )
                        for name in servers
                    )
                )
                elapsed = time.perf_counter() - started
                failed = False
                for name, figures in zip(servers, results, strict=True):
                    print(f"== {name} (seed {args.seed}, {elapsed:.1f} s)")
                    print(server_fuzz.describe(figures))
                    failed = failed or figures.silent > 0
                checks = {
                    "namesrv": RequestCode.GET_BROKER_CLUSTER_INFO,
                    "broker": RequestCode.GET_BROKER_RUNTIME_INFO,
                }
                for name in servers:
                    alive = await _still_answers(addresses[name], checks[name])
                    print(f"{name} answers a clean request afterwards: {'yes' if alive else 'NO'}")
                    failed = failed or not alive
    return 1 if failed else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=1, help="the first round's seed (default 1)")
    parser.add_argument("--frames", type=int, default=100_000, help="frames per server (default 100000)")
    parser.add_argument("--connections", type=int, default=8, help="connections per server (default 8)")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds a frame may wait (default 5)")
    parser.add_argument("--servers", default="namesrv,broker", help="namesrv, broker or both (the default)")
    parser.add_argument("--log-level", default="CRITICAL", help="the servers' log level (default CRITICAL)")
    args = parser.parse_args()
    if args.frames < 1 or args.connections < 1 or args.timeout <= 0:
        parser.error("--frames and --connections must be at least 1, --timeout above 0")
    unknown = {s.strip() for s in args.servers.split(",") if s.strip()} - {"namesrv", "broker"}
    if unknown:
        parser.error(f"--servers: unknown {', '.join(sorted(unknown))}")
    logging.basicConfig(level=args.log_level.upper())
    sys.exit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()
