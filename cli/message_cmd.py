"""``rmq message get MSGID``, ``rmq message query --key K | --unique-key U TOPIC``, ``rmq message at``,
``rmq message print-queue`` (a queue read by offset), ``rmq message trace MSGID`` (message trace) and
``rmq message recall TOPIC HANDLE`` (take back a timer message)."""

from __future__ import annotations

import datetime as dt
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
    run_async,
    target,
    to_plain,
    walking,
    with_admin,
)
from cli.errors import CliError, friendly
from rocketmq_wire.topics import TRACE_TOPIC

if TYPE_CHECKING:
    from rich.table import Table

    from admin import Admin, SendRtReport
    from rocketmq_wire.message import MessageExt
    from rocketmq_wire.trace import TraceContext

message_app = typer.Typer(
    help="Find stored messages by id or key; recall timer messages.", no_args_is_help=True
)


@message_app.command("get")
@friendly
def get(
    msg_id: Annotated[
        str,
        typer.Argument(
            callback=params.not_blank, help="Offset message id, or a unique id together with --topic"
        ),
    ],
    topic: Annotated[
        str | None,
        typer.Option(
            "--topic", "-t", callback=params.topic_name, help="Topic to search for a unique (producer) id"
        ),
    ] = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Show one message: fields, properties and body (mqadmin queryMsgById / queryMsgByUniqueKey)."""
    from cli.render import message_detail, message_json

    where = target(namesrv, access_key, secret_key, timeout_ms)
    message = with_admin(where, lambda admin: admin.get_message(msg_id.strip(), topic))
    if as_json:
        emit_json(message_json(message))
    else:
        out().print(message_detail(message))


@message_app.command("query")
@friendly
def query(
    topic: Annotated[str, typer.Argument(callback=params.topic_name, help="Topic to search")],
    key: Annotated[
        str | None, typer.Option("--key", "-k", callback=params.not_blank, help="A message key (KEYS)")
    ] = None,
    unique_key: Annotated[
        str | None,
        typer.Option("--unique-key", "-u", callback=params.not_blank, help="A unique (producer) message id"),
    ] = None,
    max_num: Annotated[
        int | None,
        typer.Option("--max", min=1, max=params.JAVA_INT_MAX, help="At most this many per broker"),
    ] = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Messages of a topic by key or by unique key, from every broker of its route (oldest first)."""
    from cli.render import message_json, messages_table

    if (key is None) == (unique_key is None):
        raise CliError("pass exactly one of --key and --unique-key")
    where = target(namesrv, access_key, secret_key, timeout_ms)
    if key is not None:
        found = with_admin(where, lambda admin: admin.query_by_key(topic, key, max_num=max_num))
    else:
        assert unique_key is not None
        found = with_admin(where, lambda admin: admin.query_by_unique_key(topic, unique_key))
    if as_json:
        emit_json([message_json(m) for m in found])
    elif not found:
        out().print(f"no message of topic {topic} has that {'key' if key is not None else 'unique key'}")
    else:
        out().print(messages_table(found))


QueueId = Annotated[int, typer.Argument(min=0, max=params.JAVA_INT_MAX, help="Queue id")]
BrokerName = Annotated[
    str | None,
    typer.Option("--broker", "-b", callback=params.not_blank, help="Broker name (topic on several)"),
]


@message_app.command("at")
@friendly
def at_offset(
    topic: Annotated[str, typer.Argument(callback=params.topic_name, help="Topic")],
    queue_id: QueueId,
    offset: Annotated[int, typer.Argument(min=0, max=params.JAVA_LONG_MAX, help="Queue offset")],
    broker: BrokerName = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """The message at one offset of one queue (mqadmin queryMsgByOffset)."""
    from cli.render import message_detail, message_json

    where = target(namesrv, access_key, secret_key, timeout_ms)
    message = with_admin(where, lambda admin: admin.message_at(topic, queue_id, offset, broker_name=broker))
    if as_json:
        emit_json(message_json(message))
    else:
        out().print(message_detail(message))


@message_app.command("print-queue")
@friendly
def print_queue(
    topic: Annotated[str, typer.Argument(callback=params.topic_name, help="Topic")],
    queue_id: QueueId,
    begin: Annotated[int, typer.Option("--begin", min=0, max=params.JAVA_LONG_MAX, help="First offset")] = 0,
    end: Annotated[
        int | None,
        typer.Option("--end", min=0, max=params.JAVA_LONG_MAX, help="Stop before this offset"),
    ] = None,
    expression: Annotated[str, typer.Option("--subexpression", "-s", help="Tag expression")] = "*",
    broker: BrokerName = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Read a range of one queue without committing anything (mqadmin printMsgByQueue)."""
    from cli.render import message_json, messages_table

    if end is not None and end < begin:
        raise CliError(f"--end {end} is before --begin {begin}")
    where = target(namesrv, access_key, secret_key, timeout_ms)
    found = with_admin(
        where,
        lambda admin: admin.messages_in_range(
            topic, queue_id, begin, end, broker_name=broker, expression=expression
        ),
    )
    if as_json:
        emit_json([message_json(m) for m in found])
    else:
        out().print(messages_table(found))


Amount = Annotated[int, typer.Option("--amount", "-a", min=1, max=1_000_000, help="Messages to send")]
Size = Annotated[int, typer.Option("--size", "-s", min=1, max=4 * 1024 * 1024, help="Body size in bytes")]


def _timings_table(report: SendRtReport) -> Table:
    from rich.table import Table

    table = Table(title=f"Sends to {report.topic}", title_justify="left")
    for heading in ("Broker", "QID", "Result", "RT ms", "Message ID"):
        table.add_column(heading, justify="right" if heading in ("QID", "RT ms") else "left")
    for send in report.sends:
        table.add_row(
            cell(send.broker_name),
            cell(send.queue_id),
            cell("true" if send.ok else f"false: {send.error}"),
            cell(f"{send.rt_ms:.2f}"),
            cell(send.msg_id or ""),
        )
    table.caption = f"Avg RT: {report.avg_rt_ms:.2f} ms"
    return table


def _timings_json(report: SendRtReport) -> dict[str, object]:
    return {"topic": report.topic, "avg_rt_ms": report.avg_rt_ms, "sends": to_plain(report.sends)}


@message_app.command("recall")
@friendly
def recall(
    topic: Annotated[str, typer.Argument(callback=params.topic_name, help="Topic the message was sent to")],
    handle: Annotated[
        str, typer.Argument(callback=params.not_blank, help="Recall handle from the send's result")
    ],
    group: params.ProducerGroup = params.CLI_PRODUCER_GROUP,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Take back a timer message before its delivery time (5.3.2 brokers on; Java's recallMessage)."""
    where = target(namesrv, access_key, secret_key, timeout_ms)
    from cli.send_run import recall_message

    msg_id = run_async(recall_message(where, group, topic, handle))
    if as_json:
        emit_json({"topic": topic, "msg_id": msg_id, "recalled": True})
    else:
        out().print(f"recalled message {msg_id} of {topic}")


@message_app.command("check-send-rt")
@friendly
def check_send_rt(
    topic: Annotated[str, typer.Argument(callback=params.topic_name, help="Topic to send to")],
    amount: Amount = 100,
    size: Size = 128,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Time real sends to each queue of a topic in turn (mqadmin checkMsgSendRT)."""
    where = target(namesrv, access_key, secret_key, timeout_ms)
    report = with_admin(where, lambda admin: admin.check_send_rt(topic, amount, size))
    if as_json:
        emit_json(_timings_json(report))
    else:
        out().print(_timings_table(report))


@message_app.command("send-status")
@friendly
def send_status(
    broker_name: Annotated[
        str, typer.Argument(callback=params.not_blank, help="Broker name (its own topic)")
    ],
    count: Annotated[int, typer.Option("--count", "-c", min=1, max=1_000_000, help="Messages to send")] = 1,
    size: Size = 128,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Send to a broker's own topic and show each result and round trip (mqadmin sendMsgStatus)."""
    where = target(namesrv, access_key, secret_key, timeout_ms)
    report = with_admin(where, lambda admin: admin.send_status(broker_name, count, size))
    if as_json:
        emit_json(_timings_json(report))
    else:
        out().print(_timings_table(report))


def _moment(text: str | None, option: str) -> int | None:
    """Epoch milliseconds or an ISO date-time (local time unless it has an offset)."""
    if text is None:
        return None
    return params.moment_ms(text, option)


@message_app.command("consume")
@friendly
def consume_print(
    topic: Annotated[str, typer.Argument(callback=params.topic_name, help="Topic")],
    broker: BrokerName = None,
    queue_id: Annotated[
        int | None, typer.Option("--queue", "-i", min=0, max=params.JAVA_INT_MAX, help="Queue id")
    ] = None,
    offset: Annotated[
        int | None, typer.Option("--offset", "-o", min=0, max=params.JAVA_LONG_MAX, help="Start offset")
    ] = None,
    begin: Annotated[str | None, typer.Option("--begin", "-s", help="From this time (ms or ISO)")] = None,
    end: Annotated[str | None, typer.Option("--end", "-e", help="Before this time (ms or ISO)")] = None,
    count: Annotated[
        int, typer.Option("--count", "-c", min=1, max=1_000_000, help="At most this many")
    ] = 128,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Print a topic's stored messages without committing anything (mqadmin consumeMessage; with
    --begin/--end across every queue, mqadmin printMsg)."""
    from cli.render import message_json, messages_table

    begin_ms, end_ms = _moment(begin, "--begin"), _moment(end, "--end")
    if offset is not None and (broker is None or queue_id is None):
        raise CliError("--offset needs --broker and --queue")
    where = target(namesrv, access_key, secret_key, timeout_ms)

    async def work(admin: Admin) -> list[MessageExt]:
        with walking("reading queues") as bar:
            task = bar.add_task("queues", total=None)

            def advanced(done: int, total: int) -> None:
                bar.update(task, completed=done, total=total)

            return await admin.consume_messages(
                topic,
                broker_name=broker,
                queue_id=queue_id,
                offset=offset,
                begin_ms=begin_ms,
                end_ms=end_ms,
                count=count,
                on_queue=advanced,
            )

    found = with_admin(where, work)
    if as_json:
        emit_json([message_json(m) for m in found])
    else:
        out().print(messages_table(found))


def trace_rows(found: list[TraceContext]) -> list[dict[str, object]]:
    """One flat row per trace record, as ``rmq message trace --json`` prints them."""
    rows: list[dict[str, object]] = []
    for ctx in found:
        for bean in ctx.beans:
            rows.append(
                {
                    "type": ctx.trace_type.value,
                    "timestamp": ctx.timestamp,
                    "time": _trace_time(ctx.timestamp),
                    "group": ctx.group_name,
                    "client_host": bean.client_host,
                    "store_host": bean.store_host,
                    "cost_ms": ctx.cost_time,
                    "status": _trace_status(ctx),
                    "success": ctx.success,
                    "msg_id": bean.msg_id,
                    "offset_msg_id": bean.offset_msg_id,
                    "topic": bean.topic,
                    "tags": bean.tags,
                    "keys": bean.keys,
                    "request_id": ctx.request_id,
                    "region": ctx.region_id,
                    "retry_times": bean.retry_times,
                    "transaction_state": bean.transaction_state,
                }
            )
    return rows


def _trace_time(ms: int) -> str:
    if ms <= 0:
        return ""
    return dt.datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _trace_status(ctx: TraceContext) -> str:
    from rocketmq_wire.trace import TraceType

    if ctx.trace_type is TraceType.SUB_BEFORE:
        return ""
    if ctx.trace_type is TraceType.END_TRANSACTION:
        return ctx.beans[0].transaction_state if ctx.beans else ""
    return "success" if ctx.success else "failed"


@message_app.command("trace")
@friendly
def trace(
    msg_id: Annotated[
        str, typer.Argument(callback=params.not_blank, help="The traced message's (unique) msgId")
    ],
    trace_topic: Annotated[
        str,
        typer.Option("--trace-topic", "-t", callback=params.topic_name, help="Topic the traces are in"),
    ] = TRACE_TOPIC,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Message trace of one message: Pub, SubBefore, SubAfter and EndTransaction records, oldest first
    (mqadmin queryMsgTraceById)."""
    from rich.table import Table

    where = target(namesrv, access_key, secret_key, timeout_ms)
    found = with_admin(where, lambda admin: admin.query_trace(msg_id.strip(), trace_topic))
    rows = trace_rows(found)
    if as_json:
        emit_json(rows)
        return
    if not rows:
        out().print(f"no trace of message {msg_id.strip()} in topic {trace_topic}")
        return
    table = Table(title=f"Trace of {msg_id.strip()}")
    for column in ("Type", "Time", "Group", "Client host", "Cost (ms)", "Status", "Topic", "Tags", "Keys"):
        table.add_column(column)
    for row in rows:
        host = row["client_host"] or row["store_host"]
        table.add_row(
            *(
                str(value)
                for value in (
                    row["type"], row["time"], row["group"], host, row["cost_ms"], row["status"],
                    row["topic"], row["tags"], row["keys"],
                )
            )
        )  # fmt: skip
    out().print(table)
