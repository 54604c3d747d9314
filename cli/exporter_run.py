"""``rmq exporter``: read the cluster in the background on an interval, serve the last reading.

A scrape only renders the snapshot already in memory, so its time does not grow with the cluster; the
reading itself is bounded by :data:`admin.snapshot.DEFAULT_CONCURRENCY` brokers at a time.
"""

from __future__ import annotations

import asyncio
import logging
import threading

from prometheus_client import CollectorRegistry, start_http_server

from admin.admin import Admin
from admin.snapshot import DEFAULT_CONCURRENCY, ClusterSnapshot, read_snapshot
from cli.exporter_metrics import SnapshotCollector

logger = logging.getLogger("cli.exporter")


class Exporter:
    """One exporter: its own registry (never the process-wide default), its latest snapshot."""

    def __init__(self, *, concurrency: int = DEFAULT_CONCURRENCY) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.registry.register(SnapshotCollector(self.latest))
        self._concurrency = concurrency
        self._snapshot: ClusterSnapshot | None = None
        self._lock = threading.Lock()

    def latest(self) -> ClusterSnapshot | None:
        with self._lock:
            return self._snapshot

    async def refresh(self, admin: Admin) -> ClusterSnapshot:
        """Read the cluster once and make that the reading scrapes see."""
        snapshot = await read_snapshot(admin, concurrency=self._concurrency)
        with self._lock:
            self._snapshot = snapshot
        logger.info(
            "cluster read in %.3f s: %d brokers, %d group/topic pairs%s",
            snapshot.elapsed,
            len(snapshot.brokers),
            len(snapshot.progress),
            f", unanswered: {snapshot.failures}" if snapshot.failures else "",
        )
        return snapshot

    async def keep_reading(self, admin: Admin, interval: float, stop: asyncio.Event) -> None:
        """Refresh every ``interval`` seconds until ``stop``; a failed reading keeps the previous one."""
        while not stop.is_set():
            try:
                await self.refresh(admin)
            except Exception as exc:  # one bad round must not end the exporter
                logger.warning("cluster not read: %s", exc)
            try:
                await asyncio.wait_for(stop.wait(), interval)
            except TimeoutError:
                pass


async def serve(admin: Admin, *, host: str, port: int, interval: float, concurrency: int) -> None:
    """Serve ``/metrics`` on ``host:port`` until cancelled (Ctrl-C)."""
    exporter = Exporter(concurrency=concurrency)
    await exporter.refresh(admin)
    server, thread = start_http_server(port, host, registry=exporter.registry)
    logger.info("serving http://%s:%d/metrics", host, server.server_port)
    stop = asyncio.Event()
    try:
        await exporter.keep_reading(admin, interval, stop)
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
        thread.join(5)
