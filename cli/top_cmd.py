"""``rmq top``: a live view of a cluster in the terminal (brokers, busiest topics, groups by lag)."""

from __future__ import annotations

from typing import Annotated

import typer

from cli import params
from cli.common import AccessKey, Namesrv, SecretKey, TimeoutMs, run_async, target
from cli.errors import friendly


@friendly
def top(
    namesrv: Namesrv = None,
    interval: Annotated[
        float,
        typer.Option("--interval", min=0.5, callback=params.finite, help="Seconds between two refreshes"),
    ] = 3.0,
    sort: Annotated[
        str, typer.Option("--sort", help="Initial order: rate, lag or name (keys r, l, n)")
    ] = "lag",
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Watch a cluster live: brokers' in/out TPS, the busiest topics, groups by lag; q or Ctrl-C quits."""
    from cli.errors import CliError
    from cli.top_render import SortBy
    from cli.top_run import run_top

    try:
        order = SortBy[sort.upper()]
    except KeyError:
        raise CliError(f"--sort {sort!r}: choose rate, lag or name") from None
    where = target(namesrv, access_key, secret_key, timeout_ms)

    async def main() -> None:
        async with where.admin() as admin:
            await run_top(admin, interval=interval, sort=order)

    run_async(main())
