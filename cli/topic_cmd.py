"""``rmq topic list|create|delete|status``."""

from __future__ import annotations

from typing import Annotated

import typer

from admin import DEFAULT_PERM, DEFAULT_QUEUE_NUMS, Admin, TopicDeleted
from cli import params
from cli.common import (
    AccessKey,
    AsJson,
    Namesrv,
    SecretKey,
    TimeoutMs,
    emit_json,
    out,
    target,
    to_plain,
    with_admin,
)
from cli.errors import CliError, friendly
from cli.render import cell, topic_status_table

topic_app = typer.Typer(help="List, create, delete and inspect topics.", no_args_is_help=True)

Topic = Annotated[str, typer.Argument(callback=params.topic_name, help="Topic name")]


@topic_app.command("list")
@friendly
def list_topics(
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Every topic the NameServers know, system topics included (sorted)."""
    where = target(namesrv, access_key, secret_key, timeout_ms)
    names = sorted(with_admin(where, lambda admin: admin.topic_list()))
    if as_json:
        emit_json(names)
        return
    console = out()
    for name in names:
        console.print(cell(name))


async def _only_cluster(admin: Admin) -> str:
    clusters = sorted({b.cluster for b in await admin.brokers()})
    if len(clusters) != 1:
        known = ", ".join(clusters) or "none"
        raise CliError(f"{len(clusters)} clusters registered ({known}): pass --cluster or --broker")
    return clusters[0]


async def _create(
    admin: Admin,
    topic: str,
    cluster: str | None,
    broker: str | None,
    read: int,
    write: int,
    perm: int,
    order: bool,
) -> tuple[str | None, list[str]]:
    if cluster is None and broker is None:
        cluster = await _only_cluster(admin)
    written = await admin.create_topic(
        topic,
        cluster=cluster,
        broker_addr=broker,
        read_queue_nums=read,
        write_queue_nums=write,
        perm=perm,
        order=order,
    )
    return cluster, written


def _perm(value: int) -> int:
    if value not in (2, 4, 6):
        raise typer.BadParameter(f"must be 2 (write), 4 (read) or 6 (read and write), not {value}")
    return value


@topic_app.command("create")
@friendly
def create(
    topic: Topic,
    cluster: Annotated[
        str | None, typer.Option("--cluster", "-c", help="Create on every master of this cluster")
    ] = None,
    broker: Annotated[
        str | None,
        typer.Option("--broker", "-b", callback=params.broker_address, help="Create on this broker only"),
    ] = None,
    read_queues: Annotated[
        int, typer.Option("--read-queues", "-r", min=1, max=params.JAVA_INT_MAX)
    ] = DEFAULT_QUEUE_NUMS,
    write_queues: Annotated[
        int, typer.Option("--write-queues", "-w", min=1, max=params.JAVA_INT_MAX)
    ] = DEFAULT_QUEUE_NUMS,
    perm: Annotated[
        int, typer.Option("--perm", "-p", callback=_perm, help="2 write, 4 read, 6 read+write")
    ] = DEFAULT_PERM,
    order: Annotated[
        bool, typer.Option("--order", help="An ordered topic (layout kept in the NameServers)")
    ] = False,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Create or update a topic on a cluster (the only one by default) or on one broker."""
    if cluster is not None and broker is not None:
        raise CliError("pass either --cluster or --broker, not both")
    where = target(namesrv, access_key, secret_key, timeout_ms)
    used_cluster, written = with_admin(
        where, lambda admin: _create(admin, topic, cluster, broker, read_queues, write_queues, perm, order)
    )
    if as_json:
        emit_json({"topic": topic, "cluster": used_cluster, "brokers": written})
        return
    console = out()
    for addr in written:
        console.print(
            cell(f"created topic {topic} on {addr} ({read_queues} read / {write_queues} write queues)")
        )


@topic_app.command("delete")
@friendly
def delete(
    topic: Topic,
    cluster: Annotated[
        str | None, typer.Option("--cluster", "-c", help="Delete from this cluster only (default: all)")
    ] = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Delete a topic from the brokers, then from the NameServers (as mqadmin deleteTopic does)."""
    where = target(namesrv, access_key, secret_key, timeout_ms)
    deleted: TopicDeleted = with_admin(where, lambda admin: admin.delete_topic(topic, cluster=cluster))
    if as_json:
        emit_json(deleted)
        return
    console = out()
    console.print(cell(f"deleted topic {topic} from brokers {', '.join(deleted.brokers) or '(none)'}"))
    console.print(cell(f"deleted topic {topic} from NameServers {', '.join(deleted.namesrvs)}"))


@topic_app.command("status")
@friendly
def status(
    topic: Topic,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Min and max offset and last store time of every queue (mqadmin topicStatus)."""
    where = target(namesrv, access_key, secret_key, timeout_ms)
    found = with_admin(where, lambda admin: admin.topic_status(topic))
    if as_json:
        emit_json({**to_plain(found), "total_messages": found.total_messages})
    else:
        out().print(topic_status_table(found))
