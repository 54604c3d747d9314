"""Replication's price: send throughput under SYNC_MASTER against ASYNC_MASTER, and how far the slave lags,
for the project's master and Apache's master with the same slave (the project's), in one run.

Each (master, role) gets a pair of its own (``tests/integration/clusters/replication.py``): Apache's
NameServer of ``--release``, the master, the project's slave. Once the master acknowledges SEND_OK (for a
SYNC_MASTER: once the slave has caught on) and the slave holds that warm-up message, one producer keeps
``--in-flight`` sends of ``--size`` bytes outstanding until ``--messages`` are acknowledged; meanwhile the
commit-log ends of master and slave are sampled every 100 ms (GET_BROKER_RUNTIME_INFO). Printed per pair:
messages/s (best and median of ``--rounds``), the slave's lag in bytes (largest and mean of the samples),
and how long the slave took to hold everything after the last acknowledgement; then the project/Apache
ratios.

    .venv/bin/python -m benchmarks.ha [--release 4.9.7] [--messages 20000] [--size 1024]
                                      [--in-flight 64] [--rounds 2]
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path

from admin import Admin
from producer import Message, Producer, SendStatus
from tests.integration.apache.releases import ApacheRelease, full_releases
from tests.integration.clusters.providers import java_unavailable, start_cluster
from tests.integration.clusters.replication import (
    Pair,
    commit_log_ends,
    pair_spec,
    wait_for_slave,
    wait_in_sync,
)

ROLES = ("ASYNC_MASTER", "SYNC_MASTER")
SAMPLE_S = 0.1
CATCH_UP_LIMIT_S = 60.0
#: Longest wait for the slave to link before a round (Apache brokers register every 30 s).
LINK_LIMIT_S = 45.0


@dataclasses.dataclass
class Figures:
    rates: list[float] = dataclasses.field(default_factory=list)
    lags: list[int] = dataclasses.field(default_factory=list)
    catch_up_ms: list[float] = dataclasses.field(default_factory=list)


async def _sample_lag(namesrv: str, addrs: dict[int, str], lags: list[int], stop: asyncio.Event) -> None:
    while not stop.is_set():
        ends = await commit_log_ends(namesrv, addrs)
        lags.append(max(0, ends[0] - ends[1]))
        await asyncio.sleep(SAMPLE_S)


async def _caught_up(namesrv: str, addrs: dict[int, str], limit_s: float) -> bool:
    """Whether the slave's commit log reached the master's end within ``limit_s``."""
    deadline = time.monotonic() + limit_s
    while True:
        ends = await commit_log_ends(namesrv, addrs)
        if ends[1] >= ends[0]:
            return True
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(0.01)


async def _round(
    namesrv: str, addrs: dict[int, str], topic: str, args: argparse.Namespace, out: Figures
) -> None:
    body = b"x" * args.size
    slots = asyncio.Semaphore(args.in_flight)
    not_ok = 0
    async with Producer("HaBench", namesrv, send_timeout_ms=10_000) as producer:
        await wait_in_sync(producer, topic, set())
        # An ASYNC_MASTER acknowledges before any slave is linked (a slave links once a registration answer
        # names its master's HA address): time nothing until the slave holds the warm-up message.
        if not await _caught_up(namesrv, addrs, LINK_LIMIT_S):
            raise SystemExit(f"the slave did not link to its master within {LINK_LIMIT_S:.0f} s")

        async def one() -> None:
            nonlocal not_ok
            async with slots:
                result = await producer.send(Message(topic, body))
                not_ok += result.status is not SendStatus.SEND_OK

        stop = asyncio.Event()
        sampler = asyncio.ensure_future(_sample_lag(namesrv, addrs, out.lags, stop))
        started = time.perf_counter()
        await asyncio.gather(*(one() for _ in range(args.messages)))
        elapsed = time.perf_counter() - started
        acked_at = time.perf_counter()
        await _caught_up(namesrv, addrs, CATCH_UP_LIMIT_S)
        out.catch_up_ms.append((time.perf_counter() - acked_at) * 1000)
        stop.set()
        await sampler
    if not_ok:
        print(f"  ({not_ok} sends stored with a status other than SEND_OK)")
    out.rates.append(args.messages / elapsed)


def measure(release: ApacheRelease, master_kind: str, role: str, args: argparse.Namespace) -> Figures:
    pair = Pair(master_kind, "python", role)
    out = Figures()
    with tempfile.TemporaryDirectory(prefix="rmq-ha-bench-") as root:
        _cluster, launch = start_cluster(pair_spec(release, pair), Path(root) / "work", Path(root) / "logs")
        try:

            async def run() -> None:
                addrs = await wait_for_slave(pair.namesrv)
                topic = "HaBench"
                async with Admin(pair.namesrv) as admin:
                    await admin.create_topic(
                        topic, broker_addr=addrs[0], read_queue_nums=8, write_queue_nums=8
                    )
                for _ in range(args.rounds):
                    await _round(pair.namesrv, addrs, topic, args, out)

            asyncio.run(run())
        finally:
            leftovers = launch.stop()
            if leftovers:
                print(f"left running: {leftovers}", file=sys.stderr)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--release", default=None, help="Apache release of the other master (default: the first full one)"
    )
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--in-flight", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    known = {r.version: r for r in full_releases()}
    release = known.get(args.release or "", full_releases()[0])
    reason = java_unavailable(release)
    if reason is not None:
        sys.exit(f"cannot run: {reason}")
    results: dict[tuple[str, str], Figures] = {}
    for master_kind in ("python", release.version):
        for role in ROLES:
            results[(master_kind, role)] = measure(release, master_kind, role, args)

    print(
        f"{args.messages} messages of {args.size} B, {args.in_flight} in flight, {args.rounds} round(s); "
        f"slave: the project's; Apache {release.version}"
    )
    print(
        f"{'master':>14} {'role':>13} {'best msg/s':>11} {'median':>9} {'max lag B':>11} "
        f"{'mean lag B':>11} {'catch-up ms':>12}"
    )
    for (kind, role), f in results.items():
        name = "project" if kind == "python" else f"apache {kind}"
        print(
            f"{name:>14} {role:>13} {max(f.rates):11.0f} {statistics.median(f.rates):9.0f} "
            f"{max(f.lags, default=0):11d} {statistics.mean(f.lags) if f.lags else 0:11.0f} "
            f"{statistics.median(f.catch_up_ms):12.1f}"
        )
    for role in ROLES:
        ours, theirs = results[("python", role)], results[(release.version, role)]
        print(
            f"{role}: project/Apache throughput {max(ours.rates) / max(theirs.rates):.2f} x (best), "
            f"{statistics.median(ours.rates) / statistics.median(theirs.rates):.2f} x (median)"
        )
    for kind in ("python", release.version):
        sync, asynchronous = results[(kind, "SYNC_MASTER")], results[(kind, "ASYNC_MASTER")]
        name = "project" if kind == "python" else f"apache {kind}"
        print(f"{name}: SYNC/ASYNC throughput {max(sync.rates) / max(asynchronous.rates):.2f} x (best)")


if __name__ == "__main__":
    main()
