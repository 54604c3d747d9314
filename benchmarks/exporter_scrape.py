"""``rmq exporter`` on a large cluster: how long one background reading and one scrape take.

Starts the project's NameServer and Broker in this process, creates ``--topics`` topics (4 queues each)
and ``--groups`` subscription groups, each with committed offsets on ``--topics-per-group`` topics, then
reads the cluster the way the exporter does (:func:`admin.snapshot.read_snapshot`) and fetches
``/metrics`` over HTTP from the exporter's own server.

    .venv/bin/python -m benchmarks.exporter_scrape [--topics 1000] [--groups 100] [--topics-per-group 10]

Prints the set-up time, the collection time, the scrape time and the size of the exposition.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from prometheus_client import start_http_server

from admin import Admin
from cli.exporter_run import Exporter
from cli.local_cluster import LocalCluster, LocalClusterSettings
from rocketmq_wire.bodies import SubscriptionGroupConfig

log = logging.getLogger("benchmarks.exporter_scrape")


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=30) as answer:
        body: bytes = answer.read()
        return body


async def measure(topics: int, groups: int, per_group: int, rounds: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as store:
        async with LocalCluster(LocalClusterSettings(Path(store))) as local:
            async with Admin(local.namesrv_address) as admin:
                started = time.perf_counter()
                names = [f"BenchTopic{i:04d}" for i in range(topics)]
                for name in names:
                    await admin.create_topic(name, broker_addr=local.broker_address)
                for g in range(groups):
                    group = f"BenchGroup{g:03d}"
                    await admin.update_subscription_group(
                        SubscriptionGroupConfig(group_name=group), broker_addr=local.broker_address
                    )
                    for t in range(per_group):
                        for queue in range(4):
                            local.broker.consumer_offsets.commit_offset(
                                group, names[(g * per_group + t) % topics], queue, 0
                            )
                setup_s = time.perf_counter() - started

                exporter = Exporter()
                collect: list[float] = []
                for _ in range(rounds):
                    snapshot = await exporter.refresh(admin)
                    collect.append(snapshot.elapsed)
                server, thread = start_http_server(0, "127.0.0.1", registry=exporter.registry)
                try:
                    url = f"http://127.0.0.1:{server.server_port}/metrics"
                    scrape: list[float] = []
                    body = b""
                    for _ in range(rounds):
                        began = time.perf_counter()
                        body = await asyncio.to_thread(_get, url)
                        scrape.append(time.perf_counter() - began)
                finally:
                    server.shutdown()
                    server.server_close()
                    thread.join(5)
                return {
                    "setup_s": setup_s,
                    "collect_s": statistics.median(collect),
                    "scrape_s": statistics.median(scrape),
                    "pairs": len(snapshot.progress),
                    "bytes": len(body),
                }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--groups", type=int, default=100)
    parser.add_argument("--topics-per-group", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5, help="readings and scrapes measured (median kept)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    f = asyncio.run(measure(args.topics, args.groups, args.topics_per_group, args.rounds))
    sys.stdout.write(
        f"{args.topics} topics, {args.groups} groups ({f['pairs']:.0f} group/topic pairs), "
        f"set up in {f['setup_s']:.1f} s\n"
        f"collection (background reading): {f['collect_s'] * 1000:.0f} ms median of {args.rounds}\n"
        f"scrape (GET /metrics): {f['scrape_s'] * 1000:.1f} ms median of {args.rounds}, "
        f"{f['bytes'] / 1024:.0f} KiB\n"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
