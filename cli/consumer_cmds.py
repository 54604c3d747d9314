"""``rmq consumer-progress``, ``rmq consumer-connections`` and ``rmq reset-offset`` (:mod:`cli.main` registers
them under ``rmq group`` too)."""

from __future__ import annotations

from typing import Annotated

import typer

from cli import params
from cli.common import (
    AccessKey,
    AsJson,
    Namesrv,
    SecretKey,
    TimeoutMs,
    cell,
    emit_json,
    out,
    target,
    with_admin,
)
from cli.errors import friendly
from cli.params import Group


@friendly
def consumer_progress(
    group: Group,
    topic: Annotated[
        str | None, typer.Option("--topic", "-t", callback=params.topic_name, help="Only this topic")
    ] = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Broker offset, consumer offset and lag of every queue, with totals (mqadmin consumerProgress)."""
    from cli.render import progress_table

    where = target(namesrv, access_key, secret_key, timeout_ms)
    progress = with_admin(where, lambda admin: admin.consumer_progress(group, topic))
    if as_json:
        emit_json(progress)
    else:
        out().print(progress_table(progress))


@friendly
def consumer_connections(
    group: Group,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """The live members of a consumer group and their subscriptions (mqadmin consumerConnection)."""
    from rich.table import Table

    where = target(namesrv, access_key, secret_key, timeout_ms)
    found = with_admin(where, lambda admin: admin.consumer_connections(group))
    if as_json:
        emit_json(found)
        return
    table = Table(
        title=f"Members of {group} ({found.message_model}, {found.consume_type})", title_justify="left"
    )
    for heading in ("Client ID", "Address", "Language", "Version"):
        table.add_column(heading)
    for member in found.connections:
        table.add_row(
            cell(member.client_id), cell(member.client_addr), cell(member.language), cell(member.version)
        )
    subscriptions = Table("Topic", "Subscription")
    for name, expression in sorted(found.subscriptions.items()):
        subscriptions.add_row(cell(name), cell(expression))
    console = out()
    console.print(table)
    console.print(subscriptions)


def parse_when(text: str) -> int:
    """``now``/``latest``, epoch milliseconds, or an ISO date-time (local time unless it has an offset)."""
    if text.lower() in ("now", "latest"):
        from admin import RESET_TO_LATEST

        return RESET_TO_LATEST
    return params.moment_ms(text, "--to")


@friendly
def reset_offset(
    group: Group,
    topic: Annotated[str, typer.Argument(callback=params.topic_name, help="Topic whose offsets move")],
    when: Annotated[
        str,
        typer.Option("--to", help="now, epoch ms, or an ISO date-time: first message stored at or after it"),
    ] = "now",
    force: Annotated[
        bool, typer.Option("--force/--no-force", help="Also move offsets forward (default) or only back")
    ] = True,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Move a consumer group's offsets on a topic to a point in time (mqadmin resetOffsetByTime)."""
    timestamp_ms = parse_when(when)
    where = target(namesrv, access_key, secret_key, timeout_ms)
    from cli.offsets_run import reset_offsets

    reset_offsets(where, group, topic, timestamp_ms, force, as_json)
