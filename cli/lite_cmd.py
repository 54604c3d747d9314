"""``rmq lite ...``: RocketMQ 5.5's lite topics, one command per mqadmin lite command.

Each command's help names the mqadmin command it stands for, and its options keep mqadmin's letters. The
reads ask each broker of the parent topic's route; a broker that refuses (an unknown topic, a group that
is not a lite group) shows its error in its row, and when every broker refused the command ends with that
error. A broker older than 5.5.0 is refused before anything is sent.
"""

from __future__ import annotations

from collections.abc import Sequence
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
    with_admin,
)
from cli.errors import CliError, friendly
from cli.params import Broker

if TYPE_CHECKING:
    from admin import BrokerAnswer

lite_app = typer.Typer(
    help="Lite topics of RocketMQ 5.5: broker figures, parent and lite topics, lite groups and clients "
    "(mqadmin's lite commands).",
    no_args_is_help=True,
)

T = TypeVar("T")

ParentTopic = Annotated[
    str, typer.Option("--parent-topic", "-p", callback=params.topic_name, help="The LITE parent topic")
]
LiteGroup = Annotated[
    str, typer.Option("--group", "-g", callback=params.group_name, help="Lite consumer group")
]


def _answered(answers: Sequence[BrokerAnswer[T]], what: str) -> Sequence[BrokerAnswer[T]]:
    """The answers, unless no broker gave one: then the first error is the command's."""
    if not answers:
        raise CliError(f"no broker to ask for {what}")
    if all(a.error is not None for a in answers):
        raise CliError(answers[0].error or f"no broker answered for {what}")
    return answers


@lite_app.command("broker-info")
@friendly
def broker_info(
    broker: Broker = None,
    cluster: Annotated[
        str | None, typer.Option("--cluster", "-c", help="Every master of this cluster")
    ] = None,
    show_detail: Annotated[
        bool, typer.Option("--show-detail", "-d", help="Each parent topic's TTL and bound groups too")
    ] = False,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """A broker's lite figures: light queues, subscriptions, table sizes (mqadmin getBrokerLiteInfo)."""
    from admin import BrokerAnswer
    from cli.lite_render import broker_lite_detail, broker_lite_table

    if (cluster is None) == (broker is None):
        raise CliError("pass either --cluster or --broker")
    where = target(namesrv, access_key, secret_key, timeout_ms)
    if broker is not None:
        info = with_admin(where, lambda admin: admin.broker_lite_info(broker))
        answers = [BrokerAnswer("", broker, answer=info)]
    else:
        cluster_name = cluster or ""
        found = with_admin(where, lambda admin: admin.cluster_lite_info(cluster_name))
        answers = list(_answered(found, f"the lite figures of cluster {cluster_name}"))
    if as_json:
        emit_json(answers)
        return
    console = out()
    console.print(broker_lite_table(answers))
    if show_detail:
        for answer in answers:
            for line in broker_lite_detail(answer):
                console.print(cell(line))


@lite_app.command("parent-topic")
@friendly
def parent_topic(
    topic: ParentTopic,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """A LITE parent topic on each broker: TTL, lite topics, bound groups (mqadmin getParentTopicInfo)."""
    from cli.lite_render import parent_topic_table

    where = target(namesrv, access_key, secret_key, timeout_ms)
    answers = _answered(with_admin(where, lambda admin: admin.parent_topic_info(topic)), f"topic {topic}")
    if as_json:
        emit_json(answers)
        return
    out().print(parent_topic_table(topic, answers))


@lite_app.command("topic")
@friendly
def lite_topic(
    parent: ParentTopic,
    lite: Annotated[str, typer.Option("--lite-topic", "-l", callback=params.not_blank, help="Lite topic")],
    show_client_id: Annotated[
        bool, typer.Option("--show-client-id", "-s", help="List each subscriber (clientId@group)")
    ] = False,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """A lite topic on each broker: offsets, subscribers (mqadmin getLiteTopicInfo)."""
    from cli.lite_render import lite_topic_table
    from rocketmq_wire.topics import lite_queue_name

    where = target(namesrv, access_key, secret_key, timeout_ms)
    found = with_admin(where, lambda admin: admin.lite_topic_info(parent, lite))
    answers = _answered(found, f"lite topic {lite}")
    if as_json:
        emit_json(answers)
        return
    console = out()
    console.print(
        lite_topic_table(f"Lite topic {lite} of {parent} ({lite_queue_name(parent, lite)})", answers)
    )
    if show_client_id:
        for a in answers:
            members = a.answer.subscriber if a.answer is not None else None
            for member in members or ():
                console.print(cell(f"{a.broker_name}: {member.client_id}@{member.group}"))


@lite_app.command("group")
@friendly
def lite_group(
    parent: ParentTopic,
    group: LiteGroup,
    lite: Annotated[
        str | None,
        typer.Option("--lite-topic", "-l", callback=params.not_blank, help="One lite topic (default: top K)"),
    ] = None,
    top_k: Annotated[
        int, typer.Option("--top-k", "-k", min=0, max=params.JAVA_INT_MAX, help="Most lagging per broker")
    ] = 20,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """A lite group's lag: on one lite topic, or its most lagging ones, and in total
    (mqadmin getLiteGroupInfo)."""
    from cli.lite_render import lite_group_tables

    where = target(namesrv, access_key, secret_key, timeout_ms)
    lag = with_admin(where, lambda admin: admin.lite_group_info(parent, group, lite, top_k))
    _answered(lag.brokers, f"the lag of group {group}")
    if as_json:
        emit_json(lag)
        return
    console = out()
    for table in lite_group_tables(lag):
        console.print(table)


@lite_app.command("client")
@friendly
def lite_client(
    parent: ParentTopic,
    group: LiteGroup,
    client_id: Annotated[str, typer.Option("--client-id", "-c", callback=params.not_blank, help="Client id")],
    show_detail: Annotated[
        bool, typer.Option("--show-detail", "-s", help="List the lite topics too")
    ] = False,
    max_count: Annotated[
        int,
        typer.Option(
            "--max-count",
            min=1,
            max=params.JAVA_INT_MAX,
            help="Most lite topics listed per broker (5.5.0 lists 10000 at most)",
        ),
    ] = 1000,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """A client's lite subscriptions on each broker (mqadmin getLiteClientInfo)."""
    from cli.lite_render import lite_client_table

    where = target(namesrv, access_key, secret_key, timeout_ms)
    found = with_admin(where, lambda admin: admin.lite_client_info(parent, group, client_id, max_count))
    answers = _answered(found, f"client {client_id}")
    if as_json:
        emit_json(answers)
        return
    console = out()
    console.print(lite_client_table(f"Lite client {client_id} of {group} on {parent}", answers))
    if show_detail:
        for a in answers:
            if a.answer is not None and a.answer.lite_topic_set is not None:
                console.print(cell(f"{a.broker_name}: {', '.join(a.answer.lite_topic_set)}"))


@lite_app.command("trigger-dispatch")
@friendly
def trigger_dispatch(
    parent: ParentTopic,
    group: LiteGroup,
    client_id: Annotated[
        str | None, typer.Option("--client-id", "-c", callback=params.not_blank, help="Only this client")
    ] = None,
    broker_name: Annotated[
        str | None, typer.Option("--broker-name", "-b", callback=params.not_blank, help="Only this broker")
    ] = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Have the brokers offer a lite group's ready lite topics to its clients again
    (mqadmin triggerLiteDispatch)."""
    where = target(namesrv, access_key, secret_key, timeout_ms)
    found = with_admin(
        where, lambda admin: admin.trigger_lite_dispatch(parent, group, client_id, broker_name)
    )
    answers = _answered(found, f"group {group}")
    if as_json:
        emit_json([{"broker_name": a.broker_name, "addr": a.addr, "error": a.error} for a in answers])
        return
    console = out()
    for a in answers:
        console.print(cell(f"{a.broker_name} {'dispatched' if a.error is None else 'error: ' + a.error}"))
