"""Entry point of ``rmq``: registers every sub-command."""

from __future__ import annotations

import typer

from cli.broker_cmd import broker
from cli.cluster_cmds import broker_config, broker_stats, clusters, route
from cli.consume_cmd import consume
from cli.consumer_cmds import consumer_connections, consumer_progress, reset_offset
from cli.errors import OneLineErrorsGroup
from cli.inspect_cmd import inspect
from cli.kv_cmd import kv_app
from cli.message_cmd import message_app
from cli.namesrv_cmd import namesrv
from cli.quickstart_cmd import quickstart
from cli.send_cmd import send
from cli.topic_cmd import topic_app

app = typer.Typer(
    name="rmq",
    cls=OneLineErrorsGroup,
    help="Apache RocketMQ from Python: a local cluster in one command, sending, administration, servers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """Apache RocketMQ from Python."""


app.command()(quickstart)
app.command()(send)
app.command()(consume)
app.command()(route)
app.command()(clusters)
app.add_typer(topic_app, name="topic")
app.command("broker-stats")(broker_stats)
app.command("broker-config")(broker_config)
app.command("consumer-progress")(consumer_progress)
app.command("consumer-connections")(consumer_connections)
app.command("reset-offset")(reset_offset)
app.add_typer(message_app, name="message")
app.add_typer(kv_app, name="kv")
app.command()(inspect)
app.command()(namesrv)
app.command()(broker)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
