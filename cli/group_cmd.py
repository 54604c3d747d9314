"""``rmq group ...``: consumer-group administration, one command per mqadmin group command.

Each command's help names the mqadmin command it stands for, so ``rmq group --help`` is where a mqadmin
user finds ``updateSubGroup``, ``consumerStatus`` and the rest.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, TypeVar

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
from cli.params import Broker, Group

if TYPE_CHECKING:
    from admin import Admin
    from rocketmq_wire.bodies import ConsumerRunningInfo, ConsumeStatsList, ProducerTableInfo

group_app = typer.Typer(
    help="Consumer and producer groups: settings, status, offsets (mqadmin's group commands).",
    no_args_is_help=True,
)

Cluster = Annotated[str | None, typer.Option("--cluster", "-c", help="Every master of this cluster")]

T = TypeVar("T")


def _one_target(cluster: str | None, broker: str | None) -> None:
    if (cluster is None) == (broker is None):
        raise CliError("pass either --cluster or --broker")


@group_app.command("update")
@friendly
def update(
    group: Group,
    cluster: Cluster = None,
    broker: Broker = None,
    consume_enable: Annotated[bool, typer.Option("--consume-enable/--consume-disable")] = True,
    from_min: Annotated[
        bool, typer.Option("--from-min/--no-from-min", help="A new group may start from the min offset")
    ] = True,
    broadcast: Annotated[
        bool, typer.Option("--broadcast/--no-broadcast", help="Broadcast consumption allowed")
    ] = True,
    retry_queues: Annotated[int, typer.Option("--retry-queues", "-q", min=0, max=params.JAVA_INT_MAX)] = 1,
    retry_max_times: Annotated[
        int, typer.Option("--retry-max-times", "-r", min=-1, max=params.JAVA_INT_MAX)
    ] = 16,
    broker_id: Annotated[
        int, typer.Option("--broker-id", "-i", min=0, max=params.JAVA_LONG_MAX, help="Consume from this id")
    ] = 0,
    slow_broker_id: Annotated[
        int,
        typer.Option(
            "--slow-broker-id", "-w", min=0, max=params.JAVA_LONG_MAX, help="Id when consuming slowly"
        ),
    ] = 1,
    notify: Annotated[
        bool, typer.Option("--notify-ids-changed/--no-notify-ids-changed", help="Tell members to rebalance")
    ] = True,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Create or update a group's settings on a broker or a cluster (mqadmin updateSubGroup)."""
    from rocketmq_wire.bodies import SubscriptionGroupConfig

    _one_target(cluster, broker)
    config = SubscriptionGroupConfig(
        group_name=group,
        consume_enable=consume_enable,
        consume_from_min_enable=from_min,
        consume_broadcast_enable=broadcast,
        retry_queue_nums=retry_queues,
        retry_max_times=retry_max_times,
        broker_id=broker_id,
        which_broker_when_consume_slowly=slow_broker_id,
        notify_consumer_ids_changed_enable=notify,
    )
    where = target(namesrv, access_key, secret_key, timeout_ms)
    written = with_admin(
        where, lambda admin: admin.update_subscription_group(config, cluster=cluster, broker_addr=broker)
    )
    if as_json:
        emit_json({"group": group, "brokers": written, "config": to_plain(config)})
        return
    for addr in written:
        out().print(cell(f"create subscription group {group} to {addr} success"))


@group_app.command("delete")
@friendly
def delete(
    group: Group,
    cluster: Cluster = None,
    broker: Broker = None,
    remove_offset: Annotated[
        bool, typer.Option("--remove-offset", help="Also forget the group's committed offsets")
    ] = False,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Delete a group's settings; on a cluster also its retry and DLQ topics (mqadmin deleteSubGroup)."""
    _one_target(cluster, broker)
    where = target(namesrv, access_key, secret_key, timeout_ms)
    deleted = with_admin(
        where,
        lambda admin: admin.delete_subscription_group(
            group, cluster=cluster, broker_addr=broker, remove_offset=remove_offset
        ),
    )
    if as_json:
        emit_json(deleted)
        return
    console = out()
    for addr in deleted.brokers:
        console.print(cell(f"delete subscription group [{group}] from broker [{addr}] success"))
    for topic in deleted.topics_deleted:
        console.print(cell(f"deleted topic {topic}"))


@group_app.command("config")
@friendly
def config(
    group: Group,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """A group's settings on every broker group that has them (mqadmin getConsumerConfig)."""
    from cli.group_render import group_config_table

    where = target(namesrv, access_key, secret_key, timeout_ms)
    found = with_admin(where, lambda admin: admin.subscription_group_configs(group))
    if as_json:
        emit_json(found)
        return
    if not found:
        raise CliError(f"no broker has settings for group {group}")
    out().print(group_config_table(group, found))


async def _running_infos(
    admin: Admin, group: str, client_id: str | None, jstack: bool
) -> list[tuple[str, ConsumerRunningInfo]]:
    if client_id is not None:
        return [(client_id, await admin.consumer_running_info(group, client_id, jstack))]
    members = (await admin.consumer_connections(group)).connections
    found: list[tuple[str, ConsumerRunningInfo]] = []
    with walking("asking each member") as bar:
        task = bar.add_task("members", total=len(members))
        for member in members:
            found.append(
                (member.client_id, await admin.consumer_running_info(group, member.client_id, jstack))
            )
            bar.advance(task)
    return found


@group_app.command("status")
@friendly
def status(
    group: Group,
    client_id: Annotated[
        str | None,
        typer.Option("--client-id", "-i", callback=params.not_blank, help="One member (default: every one)"),
    ] = None,
    jstack: Annotated[bool, typer.Option("--jstack", help="Include the member's thread dump")] = False,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """What the group's members say about themselves: settings, subscriptions, queues, RT and TPS
    (mqadmin consumerStatus)."""
    from cli.group_render import running_info_json, running_info_tables, running_summary_table

    where = target(namesrv, access_key, secret_key, timeout_ms)
    infos = with_admin(where, lambda admin: _running_infos(admin, group, client_id, jstack))
    if as_json:
        emit_json({cid: running_info_json(info) for cid, info in infos})
        return
    console = out()
    if client_id is None:
        console.print(running_summary_table(group, infos))
        return
    for table in running_info_tables(client_id, infos[0][1]):
        console.print(table)


@group_app.command("clone-offset")
@friendly
def clone_offset(
    src: Annotated[str, typer.Option("--src", "-s", callback=params.group_name, help="Group to copy from")],
    dest: Annotated[str, typer.Option("--dest", "-d", callback=params.group_name, help="Group to copy to")],
    topic: Annotated[str, typer.Option("--topic", "-t", callback=params.topic_name, help="Topic")],
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Give one group the committed offsets of another on a topic (mqadmin cloneGroupOffset)."""
    from rich.table import Table

    where = target(namesrv, access_key, secret_key, timeout_ms)
    cloned = with_admin(where, lambda admin: admin.clone_group_offset(src, dest, topic))
    if as_json:
        emit_json({"src_group": src, "dest_group": dest, "topic": topic, "queues": cloned})
        return
    table = Table(title=f"Offsets of {src} cloned to {dest} on {topic}", title_justify="left")
    for heading in ("Broker", "QID", "Offset"):
        table.add_column(heading, justify="left" if heading == "Broker" else "right")
    for row in cloned:
        table.add_row(cell(row.broker_name), cell(row.queue_id), cell(row.offset))
    out().print(table)


@group_app.command("skip-accumulated")
@friendly
def skip_accumulated(
    group: Group,
    topic: Annotated[str, typer.Argument(callback=params.topic_name, help="Topic whose backlog to skip")],
    force: Annotated[bool, typer.Option("--force/--no-force", help="Move offsets forward (default)")] = True,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Move the group to the end of every queue of a topic (mqadmin skipAccumulatedMessage)."""
    where = target(namesrv, access_key, secret_key, timeout_ms)
    from admin import RESET_TO_LATEST
    from cli.offsets_run import reset_offsets

    reset_offsets(where, group, topic, RESET_TO_LATEST, force, as_json)


async def _ask_each_master(
    admin: Admin, broker: str | None, ask: Callable[[str], Awaitable[T]]
) -> list[tuple[str, T]]:
    """``ask(addr)`` of ``broker``, or of every master when none is named, with a progress bar."""
    addrs = [broker] if broker is not None else [b.addr for b in await admin.brokers(masters_only=True)]
    found: list[tuple[str, T]] = []
    with walking("asking each broker") as bar:
        task = bar.add_task("brokers", total=len(addrs))
        for addr in addrs:
            found.append((addr, await ask(addr)))
            bar.advance(task)
    return found


async def _broker_stats(admin: Admin, broker: str | None, order_only: bool) -> list[ConsumeStatsList]:
    asked = await _ask_each_master(
        admin, broker, lambda addr: admin.broker_consume_stats(addr, order_only=order_only)
    )
    return [stats for _addr, stats in asked]


@group_app.command("broker-stats")
@friendly
def broker_stats(
    broker: Broker = None,
    order_only: Annotated[bool, typer.Option("--order", help="Only ordered topics")] = False,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Progress of every group on a broker (every master by default), with lag
    (mqadmin brokerConsumeStats)."""
    from cli.group_render import broker_consume_stats_rows, broker_consume_stats_table

    where = target(namesrv, access_key, secret_key, timeout_ms)
    found = with_admin(where, lambda admin: _broker_stats(admin, broker, order_only))
    if as_json:
        emit_json([broker_consume_stats_rows(stats) for stats in found])
        return
    for stats in found:
        out().print(broker_consume_stats_table(stats))


@group_app.command("producers")
@friendly
def producers(
    group: Annotated[str, typer.Argument(callback=params.group_name, help="Producer group")],
    topic: Annotated[str, typer.Argument(callback=params.topic_name, help="A topic the group sends to")],
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """The live connections of a producer group (mqadmin producerConnection)."""
    from rich.table import Table

    where = target(namesrv, access_key, secret_key, timeout_ms)
    found = with_admin(where, lambda admin: admin.producer_connections(group, topic))
    if as_json:
        emit_json(found)
        return
    table = Table(title=f"Producers of {group}", title_justify="left")
    for heading in ("Client ID", "Address", "Language", "Version"):
        table.add_column(heading)
    for member in found:
        table.add_row(
            cell(member.client_id), cell(member.client_addr), cell(member.language), cell(member.version)
        )
    out().print(table)


async def _producer_tables(admin: Admin, broker: str | None) -> list[tuple[str, ProducerTableInfo]]:
    return await _ask_each_master(admin, broker, admin.producer_table)


@group_app.command("producer-table")
@friendly
def producer_table(
    broker: Broker = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Every producer group on a broker (every master by default) with its connected producers
    (mqadmin producer)."""
    from cli.group_render import producer_table_json, producer_table_table

    where = target(namesrv, access_key, secret_key, timeout_ms)
    found = with_admin(where, lambda admin: _producer_tables(admin, broker))
    if as_json:
        emit_json([producer_table_json(addr, table) for addr, table in found])
        return
    for addr, table in found:
        out().print(producer_table_table(addr, table))


@group_app.command("allocate")
@friendly
def allocate(
    topic: Annotated[str, typer.Argument(callback=params.topic_name, help="Topic")],
    ip_list: Annotated[
        str, typer.Option("--ip-list", "-i", callback=params.not_blank, help="Client ids, comma separated")
    ],
    strategy: Annotated[str, typer.Option("--strategy", help="averagely or circle")] = "averagely",
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Which queues each client would get from a rebalance of the topic (mqadmin allocateMQ)."""
    from cli.group_render import allocation_json, allocation_table

    ids = [part for part in ip_list.split(",") if part.strip()]
    where = target(namesrv, access_key, secret_key, timeout_ms)
    result = with_admin(where, lambda admin: admin.allocate_queues(topic, ids, strategy))
    if as_json:
        emit_json(allocation_json(result))
    else:
        out().print(allocation_table(topic, result))


@group_app.command("set-consume-mode")
@friendly
def set_consume_mode(
    group: Group,
    topic: Annotated[str, typer.Option("--topic", "-t", callback=params.topic_name, help="Topic")],
    mode: Annotated[
        str, typer.Option("--mode", "-m", case_sensitive=False, help="PULL (own queues) or POP (shared)")
    ],
    pop_share_queue_num: Annotated[
        int,
        typer.Option(
            "--pop-share-queue-num",
            "-q",
            min=0,
            max=params.JAVA_INT_MAX,
            help="Queues each POP member shares",
        ),
    ] = 0,
    cluster: Cluster = None,
    broker: Broker = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """How the group's 5.x push consumers read a topic: PULL or POP (mqadmin setConsumeMode)."""
    _one_target(cluster, broker)
    chosen = mode.upper()
    if chosen not in ("PULL", "POP"):
        raise CliError(f"unknown consume mode {mode!r}; choose PULL or POP")
    where = target(namesrv, access_key, secret_key, timeout_ms)
    written = with_admin(
        where,
        lambda admin: admin.set_consume_mode(
            topic, group, chosen, pop_share_queue_num=pop_share_queue_num, cluster=cluster, broker_addr=broker
        ),
    )
    if as_json:
        emit_json(
            {
                "topic": topic,
                "group": group,
                "mode": chosen,
                "pop_share_queue_num": pop_share_queue_num,
                "brokers": written,
            }
        )
        return
    console = out()
    for addr in written:
        console.print(cell(f"set consume mode to {addr} success."))
    console.print(
        cell(f"topic[{topic}] group[{group}] consume mode[{chosen}] popShareQueueNum[{pop_share_queue_num}]")
    )


@group_app.command("consume-modes")
@friendly
def consume_modes(
    broker: Annotated[
        str, typer.Option("--broker", "-b", callback=params.broker_address, help="One broker, host:port")
    ],
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Every group's consume mode on one broker (GET_ALL_MESSAGE_REQUEST_MODE)."""
    where = target(namesrv, access_key, secret_key, timeout_ms)
    found = with_admin(where, lambda admin: admin.consume_modes(broker))
    from cli.group_render import consume_modes_table

    rows = [
        {
            "topic": topic,
            "group": group,
            "mode": str(setting.mode),
            "pop_share_queue_num": setting.pop_share_queue_num,
        }
        for topic, groups in sorted(found.items())
        for group, setting in sorted(groups.items())
    ]
    if as_json:
        emit_json(rows)
        return
    if not rows:
        raise CliError(f"no consume mode is set on {broker}")
    out().print(consume_modes_table(broker, rows))
