"""Entry point of ``rmq``: registers every sub-command."""

from __future__ import annotations

import typer

from cli.inspect_cmd import inspect
from cli.namesrv_cmd import namesrv

app = typer.Typer(
    name="rmq",
    help="Apache RocketMQ from Python: inspect frames, and (as they land) send, route, clusters, servers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """Apache RocketMQ from Python."""


app.command()(inspect)
app.command()(namesrv)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
