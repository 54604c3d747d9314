"""``rmq topic list|create|config|delete|status|clusters|update-perm|order-conf|stats-all|query-cq``."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Annotated

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
    to_plain,
    walking,
    with_admin,
)
from cli.errors import CliError, friendly
from rocketmq_wire.perm import PERM_READ, PERM_WRITE
from rocketmq_wire.topics import is_dlq_topic, is_retry_topic

if TYPE_CHECKING:
    from admin import Admin, TopicDeleted, TopicGroupStats
    from rocketmq_wire.bodies import TopicConfig

log = logging.getLogger("cli.topic")

#: The defaults of ``admin.Admin.create_topic`` (``admin.topics``), shown in the help; a unit test checks
#: that they still agree.
DEFAULT_QUEUE_NUMS = 8
DEFAULT_PERM = PERM_READ | PERM_WRITE

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
    attributes: dict[str, str],
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
        attributes={key[1:]: value for key, value in attributes.items() if key.startswith("+")},
        remove_attributes=[key[1:] for key in attributes if key.startswith("-")],
    )
    return cluster, written


def parse_attributes(values: list[str] | None) -> dict[str, str]:
    """``--attribute`` values (each ``+name=value``, ``-name``, or several joined by commas), as signed
    keys; malformed ones are a usage error."""
    from rocketmq_wire.errors import CodecError
    from rocketmq_wire.topic_attributes import parse_modification

    merged: dict[str, str] = {}
    for value in values or []:
        try:
            parsed = parse_modification(value)
        except CodecError as exc:
            raise typer.BadParameter(str(exc), param_hint="--attribute") from None
        for key in parsed:
            if key in merged or key[1:] in {k[1:] for k in merged}:
                raise typer.BadParameter(f"attribute {key[1:]!r} is given twice", param_hint="--attribute")
        merged.update(parsed)
    return merged


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
    attribute: Annotated[
        list[str] | None,
        typer.Option(
            "--attribute",
            "-a",
            help="5.x attribute: +message.type=FIFO (NORMAL, FIFO, DELAY, TRANSACTION, MIXED), "
            "+queue.type=..., +cleanup.policy=..., -name to remove; repeatable (mqadmin updateTopic -a)",
        ),
    ] = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Create or update a topic on a cluster (the only one by default) or on one broker."""
    if cluster is not None and broker is not None:
        raise CliError("pass either --cluster or --broker, not both")
    attributes = parse_attributes(attribute)
    where = target(namesrv, access_key, secret_key, timeout_ms)
    used_cluster, written = with_admin(
        where,
        lambda admin: _create(
            admin, topic, cluster, broker, read_queues, write_queues, perm, order, attributes
        ),
    )
    if as_json:
        emit_json({"topic": topic, "cluster": used_cluster, "brokers": written, "attributes": attributes})
        return
    console = out()
    for addr in written:
        console.print(
            cell(f"created topic {topic} on {addr} ({read_queues} read / {write_queues} write queues)")
        )


@topic_app.command("config")
@friendly
def config(
    topic: Topic,
    broker: params.Broker = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """The topic's config on each broker of its route (or on ``--broker`` only): queues, permission, order
    and 5.x attributes."""
    where = target(namesrv, access_key, secret_key, timeout_ms)

    async def read(admin: Admin) -> list[tuple[str, str, TopicConfig]]:
        if broker is not None:
            return [("", broker, await admin.topic_config(topic, broker))]
        route = await admin.topic_route(topic)
        found = []
        for data in sorted(route.broker_datas, key=lambda b: b.broker_name or ""):
            addr = data.broker_addrs.get(0)
            if addr is not None:
                found.append((data.broker_name or "", addr, await admin.topic_config(topic, addr)))
        return found

    configs = with_admin(where, read)
    if as_json:
        emit_json(
            [{"broker_name": name, "broker_addr": addr, "config": to_plain(c)} for name, addr, c in configs]
        )
        return
    from rich.table import Table

    table = Table()
    for heading in ("Broker", "Address", "Read", "Write", "Perm", "Order", "Attributes"):
        table.add_column(heading)
    for name, addr, found in configs:
        attributes = ", ".join(f"{k}={v}" for k, v in sorted((found.attributes or {}).items()))
        table.add_row(
            cell(name),
            cell(addr),
            cell(found.read_queue_nums),
            cell(found.write_queue_nums),
            cell(found.perm),
            cell(found.order),
            cell(attributes if found.attributes is not None else "(4.x: none)"),
        )
    out().print(table)


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
    from cli.render import topic_status_table

    where = target(namesrv, access_key, secret_key, timeout_ms)
    found = with_admin(where, lambda admin: admin.topic_status(topic))
    if as_json:
        emit_json({**to_plain(found), "total_messages": found.total_messages})
    else:
        out().print(topic_status_table(found))


@topic_app.command("clusters")
@friendly
def clusters_of_topic(
    topic: Topic,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """The clusters that hold the topic (mqadmin topicClusterList)."""
    where = target(namesrv, access_key, secret_key, timeout_ms)
    names = with_admin(where, lambda admin: admin.topic_clusters(topic))
    if as_json:
        emit_json(names)
        return
    console = out()
    for name in names:
        console.print(cell(name))


@topic_app.command("update-perm")
@friendly
def update_perm(
    topic: Topic,
    perm: Annotated[int, typer.Option("--perm", "-p", callback=_perm, help="2 write, 4 read, 6 read+write")],
    cluster: Annotated[
        str | None, typer.Option("--cluster", "-c", help="Every master of this cluster")
    ] = None,
    broker: Annotated[
        str | None,
        typer.Option("--broker", "-b", callback=params.broker_address, help="This broker only"),
    ] = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Change a topic's permission, keeping its queues (mqadmin updateTopicPerm)."""
    if (cluster is None) == (broker is None):
        raise CliError("pass either --cluster or --broker")
    where = target(namesrv, access_key, secret_key, timeout_ms)
    written = with_admin(
        where, lambda admin: admin.update_topic_perm(topic, perm, cluster=cluster, broker_addr=broker)
    )
    if as_json:
        emit_json({"topic": topic, "perm": perm, "brokers": written})
        return
    console = out()
    if not written:
        console.print(cell(f"the perm of topic {topic} is already {perm}: nothing changed"))
    for addr in written:
        console.print(cell(f"update topic {topic} perm to {perm} on {addr} success"))


@topic_app.command("order-conf")
@friendly
def order_conf(
    topic: Topic,
    set_to: Annotated[
        str | None,
        typer.Option("--set", callback=params.not_blank, help="brokerName:queueNums;brokerName:queueNums"),
    ] = None,
    delete: Annotated[bool, typer.Option("--delete", help="Remove the topic's ordered layout")] = False,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Show, set or delete an ordered topic's layout in the NameServers (mqadmin updateOrderConf)."""
    if set_to is not None and delete:
        raise CliError("pass either --set or --delete, not both")
    where = target(namesrv, access_key, secret_key, timeout_ms)
    if set_to is None and not delete:
        layout = with_admin(where, lambda admin: admin.order_conf(topic))
        if as_json:
            emit_json({"topic": topic, "order_conf": layout})
        elif layout is None:
            raise CliError(f"topic {topic} has no order conf")
        else:
            out().print(cell(f"get orderConf success. topic={topic}, orderConf={layout}"))
        return
    written = with_admin(where, lambda admin: admin.update_order_conf(topic, None if delete else set_to))
    if as_json:
        emit_json({"topic": topic, "order_conf": None if delete else set_to, "namesrvs": written})
        return
    action = "delete" if delete else "update"
    out().print(cell(f"{action} orderConf success. topic={topic} on {', '.join(written)}"))


async def _stats_all(admin: Admin, only: str | None, active: bool) -> list[TopicGroupStats]:
    from admin import AdminError

    names = [only] if only is not None else sorted(await admin.topic_list())
    names = [n for n in names if not (is_retry_topic(n) or is_dlq_topic(n))]
    rows: list[TopicGroupStats] = []
    with walking("reading statistics") as bar:
        task = bar.add_task("topics", total=len(names))
        for name in names:
            try:
                rows.extend(await admin.topic_stats(name, active_only=active))
            except AdminError as exc:  # as mqadmin: a topic that cannot be read is skipped
                log.info("stats of topic %s skipped: %s", name, exc)
            bar.advance(task)
    return rows


@topic_app.command("stats-all")
@friendly
def stats_all(
    topic: Annotated[
        str | None, typer.Option("--topic", "-t", callback=params.topic_name, help="Only this topic")
    ] = None,
    active: Annotated[bool, typer.Option("--active", "-a", help="Only topics with traffic in a day")] = False,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Put and get rates, day counts and backlog of every topic and consuming group (mqadmin statsAll)."""
    from rich.table import Table

    where = target(namesrv, access_key, secret_key, timeout_ms)
    rows = with_admin(where, lambda admin: _stats_all(admin, topic, active))
    if as_json:
        emit_json(rows)
        return
    table = Table(title="Statistics", title_justify="left")
    headings = ("Topic", "Consumer group", "Accumulation", "In TPS", "Out TPS", "In msg 24h", "Out msg 24h")
    for heading in headings:
        table.add_column(heading, justify="left" if heading in ("Topic", "Consumer group") else "right")
    for row in rows:
        table.add_row(
            cell(row.topic),
            cell(row.group or ""),
            cell(row.accumulation),
            cell(f"{row.in_tps:.2f}"),
            cell("" if row.out_tps is None else f"{row.out_tps:.2f}"),
            cell(row.in_msg_24h),
            cell("NO_CONSUMER" if row.out_msg_24h is None else row.out_msg_24h),
        )
    out().print(table)


@topic_app.command("query-cq")
@friendly
def query_cq(
    topic: Topic,
    queue_id: Annotated[int, typer.Argument(min=0, max=params.JAVA_INT_MAX, help="Queue id")],
    index: Annotated[
        int, typer.Option("--index", "-i", min=0, max=params.JAVA_LONG_MAX, help="First entry")
    ] = 0,
    count: Annotated[int, typer.Option("--count", "-c", min=1, max=params.JAVA_INT_MAX, help="Entries")] = 10,
    group: Annotated[
        str | None, typer.Option("--group", "-g", callback=params.group_name, help="Show this group's filter")
    ] = None,
    broker: Annotated[
        str | None, typer.Option("--broker", "-b", callback=params.broker_address, help="Only this broker")
    ] = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Raw consume-queue entries of one queue: commit-log offset, size, tag code (mqadmin queryCq)."""
    from rich.table import Table

    where = target(namesrv, access_key, secret_key, timeout_ms)
    answers = with_admin(
        where,
        lambda admin: admin.query_consume_queue(
            topic, queue_id, index=index, count=count, group=group, broker_addr=broker
        ),
    )
    if as_json:
        emit_json(
            [{"broker_addr": a.broker_addr, "remark": a.remark, "body": to_plain(a.body)} for a in answers]
        )
        return
    console = out()
    for answer in answers:
        if answer.body is None:
            console.print(cell(f"{answer.broker_addr}: {answer.remark or 'no entries'}"))
            continue
        table = Table(title=f"{queue_id}@{topic} on {answer.broker_addr}", title_justify="left")
        for heading in ("Index", "Commit-log offset", "Size", "Tags code"):
            table.add_column(heading, justify="right")
        for i, entry in enumerate(answer.body.queue_data or []):
            table.add_row(
                cell(index + i), cell(entry.physic_offset), cell(entry.physic_size), cell(entry.tags_code)
            )
        table.caption = f"queue index {answer.body.min_queue_index}..{answer.body.max_queue_index}"
        if answer.body.filter_data is not None:
            table.caption += f"; filter: {answer.body.filter_data}"
        console.print(table)
