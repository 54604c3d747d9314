"""``rmq consume TOPIC --group G``: print a topic's messages as they arrive, as a member of a consumer group.

It joins the group like any consumer (the group's queues are shared with its other members) and commits
what it printed, so a second run continues where the first stopped; ``--from`` only decides where queues
the group never consumed start. Ctrl-C (or SIGTERM) commits and exits with code 0.
"""

from __future__ import annotations

from typing import Annotated

import typer

from cli import params
from cli.common import AccessKey, Namesrv, SecretKey, quiet_logging, target
from cli.errors import CliError, friendly


def start_position(value: str) -> tuple[str, int | None]:
    """``--from``: ``earliest``, ``latest``, or a time -> (consume-from name, timestamp in ms or None)."""
    text = value.strip().lower()
    if text in ("earliest", "first", "begin", "beginning"):
        return "FIRST_OFFSET", None
    if text in ("latest", "last", "end"):
        return "LAST_OFFSET", None
    from consumer.positioning import timestamp_ms

    try:
        when = timestamp_ms(value)
    except (ValueError, OverflowError):
        raise typer.BadParameter(
            f"{value!r} is not a time: give epoch milliseconds, yyyyMMddHHmmss or an ISO 8601 date",
            param_hint="--from",
        ) from None
    return "TIMESTAMP", params.epoch_ms(when, "--from")


@friendly
def consume(
    topic: Annotated[str, typer.Argument(callback=params.topic_name, help="Topic to consume")],
    group: Annotated[
        str, typer.Option("--group", "-g", callback=params.group_name, help="Consumer group to consume as")
    ],
    tag: Annotated[
        str, typer.Option("--tag", "-t", help="Tag expression, e.g. 'TagA || TagB' ('*': all)")
    ] = "*",
    sql: Annotated[
        str | None,
        typer.Option(
            "--sql",
            help="A SQL92 filter on the message properties instead of tags, e.g. \"a > 5 AND region = 'eu'\" "
            "(brokers need enablePropertyFilter=true)",
        ),
    ] = None,
    from_: Annotated[
        str,
        typer.Option(
            "--from",
            help="Where queues the group never consumed start: earliest, latest, or a time "
            "(epoch ms, ISO 8601, yyyyMMddHHmmss)",
        ),
    ] = "latest",
    count: Annotated[
        int, typer.Option("--count", "-c", min=0, help="Stop after N messages (0: until Ctrl-C)")
    ] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per message")] = False,
    namesrv: Namesrv = None,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
) -> None:
    """Print a topic's messages as they arrive, committing them for the group; Ctrl-C stops."""
    if sql is not None and tag != "*":
        raise CliError("give either --tag or --sql, not both")
    if sql is not None and not sql.strip():
        raise CliError("--sql needs an expression")
    where = target(namesrv, access_key, secret_key)
    start, timestamp = start_position(from_)
    # the consumer is imported only now that the command line is known to be good
    import asyncio

    from cli.consume_run import main
    from consumer import ConsumerError
    from rocketmq_wire.transport import RemotingError

    quiet_logging()
    try:
        asyncio.run(main(where, topic, group, tag, start, timestamp, count, as_json, sql=sql))
    except (ConsumerError, RemotingError, ValueError) as exc:
        raise CliError(str(exc)) from None
    except KeyboardInterrupt:
        pass
