"""Clusters for benchmarks that compare against Apache's servers: any set-up of the integration suite, by id.

``python`` is the project's NameServer and Broker as subprocesses; ``binaries-4.9.7``, ``binaries-5.3.3``, …
are Apache's, started with ``java -cp`` on jars Maven resolves from Maven Central into the suite's cache
(``tests/integration/apache``). Every process is stopped by pid when the ``with`` block ends.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

log = logging.getLogger("benchmarks.clusters")


@contextlib.contextmanager
def provider_cluster(provider_id: str) -> Iterator[object]:
    """The running :class:`tests.integration.clusters.model.Cluster` of set-up ``provider_id``; exits the
    program with the reason when that set-up cannot run here."""
    from tests.integration.clusters.providers import provider_specs, start_cluster

    specs = {spec.id: spec for spec in provider_specs()}
    spec = specs.get(provider_id)
    if spec is None:
        sys.exit(f"unknown set-up {provider_id!r}; choose from {', '.join(specs)}")
    reason = spec.unavailable()
    if reason is not None:
        sys.exit(f"cannot run {provider_id}: {reason}")
    with tempfile.TemporaryDirectory(prefix="rmq-bench-") as root:
        cluster, launch = start_cluster(spec, Path(root) / "work", Path(root) / "logs")
        try:
            yield cluster
        finally:
            leftovers = launch.stop()
            if leftovers:
                print(f"left running: {leftovers}", file=sys.stderr)


async def create_topic(namesrv: str, cluster_name: str, topic: str, queues: int) -> None:
    from admin import Admin

    async with Admin(namesrv) as admin:
        await admin.create_topic(topic, cluster=cluster_name, read_queue_nums=queues, write_queue_nums=queues)
        deadline = time.monotonic() + 30
        while True:
            try:
                await admin.topic_route(topic)
                return
            except Exception:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.5)


async def stored_count(namesrv: str, topic: str) -> int:
    """Messages the brokers hold in ``topic`` (sum of its queues' max offsets)."""
    from admin import Admin

    async with Admin(namesrv) as admin:
        return (await admin.topic_status(topic)).total_messages


async def update_brokers(broker_addrs: list[str], settings: Mapping[str, str]) -> None:
    """UPDATE_BROKER_CONFIG on every broker, as a bare request: an older checkout measured through
    PYTHONPATH may have no admin call for it, and its integration set-ups may start brokers with other
    values, so a benchmark sets what it depends on itself."""
    from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
    from rocketmq_wire.transport import RemotingClient

    body = "".join(f"{key}={value}\n" for key, value in settings.items()).encode()
    async with RemotingClient() as client:
        for addr in broker_addrs:
            request = RemotingCommand.request(RequestCode.UPDATE_BROKER_CONFIG, body=body)
            answer = await client.invoke(addr, request, 5000)
            if answer.code != ResponseCode.SUCCESS:
                raise SystemExit(f"broker {addr} refused {dict(settings)}: {answer.code} {answer.remark}")


def _burn(seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        pass


@contextlib.contextmanager
def busy_core(enabled: bool, limit_s: float = 3600) -> Iterator[None]:
    """Another process keeping one core busy (a "busy machine"), for at most ``limit_s``; stopped on exit."""
    if not enabled:
        yield
        return
    process = multiprocessing.get_context("spawn").Process(target=_burn, args=(limit_s,), daemon=True)
    process.start()
    try:
        yield
    finally:
        process.kill()
        process.join()
