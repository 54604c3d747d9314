"""``rmq exporter``: a Prometheus exporter for any cluster (Apache's 4.x/5.x or the project's), with
apache/rocketmq-exporter's metric names."""

from __future__ import annotations

from typing import Annotated

import typer

from cli import params
from cli.common import AccessKey, Namesrv, SecretKey, TimeoutMs, run_async, target
from cli.errors import friendly

DEFAULT_PORT = 5557


@friendly
def exporter(
    namesrv: Namesrv = None,
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="HTTP port of /metrics")
    ] = DEFAULT_PORT,
    host: Annotated[str, typer.Option("--host", help="Address to listen on")] = "0.0.0.0",
    interval: Annotated[
        float,
        typer.Option(
            "--interval", min=0.5, callback=params.finite, help="Seconds between two readings of the cluster"
        ),
    ] = 15.0,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, help="Brokers read at the same time")
    ] = 8,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Serve the cluster's metrics on /metrics for Prometheus (names of apache/rocketmq-exporter)."""
    import logging

    from cli.exporter_run import serve

    where = target(namesrv, access_key, secret_key, timeout_ms)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")

    async def main() -> None:
        async with where.admin() as admin:
            await serve(admin, host=host, port=port, interval=interval, concurrency=concurrency)

    try:
        run_async(main())
    except KeyboardInterrupt:
        pass
