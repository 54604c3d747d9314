"""``rmq send TOPIC [BODY]``: send one message, or ``--count N`` of them with a progress bar and a
throughput summary, through the project's producer."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from cli import params
from cli.common import AccessKey, AsJson, Namesrv, SecretKey, emit_json, out, run_async, target
from cli.errors import CliError, friendly
from rocketmq_wire.errors import CodecError

if TYPE_CHECKING:
    from rocketmq_wire.message import Message

DEFAULT_BATCH_SIZE = 32


def read_body(body: str | None, file: Path | None) -> bytes:
    """The body from the argument, the file, or standard input (when it is not a terminal)."""
    if body is not None and file is not None:
        raise CliError("give the body either as an argument or with --file, not both")
    if body is not None:
        data = body.encode("utf-8")
    elif file is not None:
        data = file.read_bytes()
    elif not sys.stdin.isatty():
        data = sys.stdin.buffer.read()
    else:
        raise CliError("no message body: give it as an argument, with --file, or on standard input")
    if not data:
        raise CliError("the message body is empty (RocketMQ refuses empty bodies)")
    return data


#: Java's NAME_VALUE_SEPARATOR and PROPERTY_SEPARATOR: inside a name or value they would silently split
#: the message's properties string into other properties.
_SEPARATORS = ("\x01", "\x02")


def no_separators(text: str, option: str) -> str:
    """``text`` unless it holds a property separator (a usage error naming ``option``)."""
    if any(sep in text for sep in _SEPARATORS):
        raise typer.BadParameter(
            f"{text!r} holds \\x01 or \\x02, which separate message properties", param_hint=option
        )
    return text


def parse_properties(pairs: Sequence[str]) -> dict[str, str]:
    """``--property name=value`` values as a mapping; a malformed one is a usage error."""
    properties: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = no_separators(pair, "--property").partition("=")
        if not sep or not name.strip():
            raise typer.BadParameter(f"takes name=value, got {pair!r}", param_hint="--property")
        properties[name] = value
    return properties


def build_message(
    topic: str,
    body: bytes,
    *,
    tags: str | None,
    keys: Sequence[str],
    properties: dict[str, str],
    delay_level: int,
    deliver_at: str | None = None,
    delay: str | None = None,
) -> Message:
    """One message; each ``--keys`` value may hold several space-separated keys. ``deliver_at`` (a time)
    or ``delay`` (``30s``, ``1500ms`` ...) make it a RocketMQ 5 timer message."""
    from rocketmq_wire.message import Message

    split_keys = [no_separators(key, "--keys") for value in keys for key in value.split()]
    if tags is not None:
        no_separators(tags, "--tags")
    if deliver_at is not None and delay is not None:
        raise CliError("give --deliver-at or --delay, not both")
    if (deliver_at is not None or delay is not None) and delay_level:
        raise CliError("--delay-level does not go with --deliver-at or --delay (the broker drops the time)")
    deliver_ms = delay_ms = delay_sec = None
    if deliver_at is not None:
        deliver_ms = params.moment_ms(deliver_at, "--deliver-at")
    elif delay is not None:
        length, in_ms = params.delay(delay, "--delay")
        delay_ms, delay_sec = (length, None) if in_ms else (None, length)
    try:
        return Message(
            topic,
            body,
            tags=tags,
            keys=split_keys,
            properties=dict(properties),
            delay_level=delay_level,
            deliver_time_ms=deliver_ms,
            delay_time_ms=delay_ms,
            delay_time_sec=delay_sec,
        )
    except CodecError as exc:
        raise CliError(str(exc)) from None


@friendly
def send(
    topic: Annotated[str, typer.Argument(callback=params.topic_name, help="Topic to send to")],
    body: Annotated[
        str | None, typer.Argument(help="Message body (else --file, else standard input)")
    ] = None,
    file: Annotated[
        Path | None,
        typer.Option("--file", "-f", exists=True, dir_okay=False, help="Read the body from a file"),
    ] = None,
    tags: Annotated[str | None, typer.Option("--tags", help="Message tag")] = None,
    keys: Annotated[
        list[str] | None, typer.Option("--keys", "-k", help="Message key(s); repeat or separate by spaces")
    ] = None,
    properties: Annotated[
        list[str] | None, typer.Option("--property", "-p", help="User property name=value; repeatable")
    ] = None,
    delay_level: Annotated[
        int,
        typer.Option(
            "--delay-level", min=0, max=params.JAVA_INT_MAX, help="Delay level (1 = 1s, 2 = 5s ...)"
        ),
    ] = 0,
    deliver_at: Annotated[
        str | None,
        typer.Option(
            "--deliver-at",
            help="Deliver at this time (epoch ms or ISO date-time, local unless offset); RocketMQ 5 brokers",
        ),
    ] = None,
    delay: Annotated[
        str | None,
        typer.Option("--delay", help="Deliver after this long: 1500ms, 30s, 5m, 2h, 1d; RocketMQ 5 brokers"),
    ] = None,
    count: Annotated[
        int, typer.Option("--count", min=1, max=params.JAVA_INT_MAX, help="Send the message this many times")
    ] = 1,
    oneway: Annotated[bool, typer.Option("--oneway", help="Do not wait for the broker's answer")] = False,
    batch: Annotated[bool, typer.Option("--batch", help="Send in batches (SEND_BATCH_MESSAGE)")] = False,
    batch_size: Annotated[
        int, typer.Option("--batch-size", min=1, max=params.JAVA_INT_MAX, help="Messages per batch")
    ] = DEFAULT_BATCH_SIZE,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, max=1024, help="Requests in flight at once")
    ] = 1,
    group: params.ProducerGroup = params.CLI_PRODUCER_GROUP,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
) -> None:
    """Send a message (or --count of them, with a throughput and latency summary) (mqadmin sendMessage)."""
    if oneway and batch:
        raise CliError("--oneway and --batch do not go together (batches are always acknowledged)")
    if batch and (deliver_at is not None or delay is not None):
        raise CliError("--batch does not go with --deliver-at or --delay (a broker stores a batch at once)")
    message = build_message(
        topic,
        read_body(body, file),
        tags=tags,
        keys=keys or [],
        properties=parse_properties(properties or []),
        delay_level=delay_level,
        deliver_at=deliver_at,
        delay=delay,
    )
    where = target(namesrv, access_key, secret_key)
    # the producer is imported only now that the command line and the message are known to be good
    from cli.send_run import result_json, results_table, send_messages, summary_table

    many = count > 1
    sender, summary = run_async(
        send_messages(
            where,
            group,
            message,
            count=count,
            oneway=oneway,
            batch_size=batch_size if batch else 0,
            concurrency=concurrency,
            show_progress=many and not as_json,
        )
    )
    if not many and summary.failed:
        raise CliError(summary.first_error or "the send failed")
    if as_json:
        if many:
            emit_json({"summary": summary, "body_bytes": len(message.body), "oneway": oneway, "batch": batch})
        else:
            emit_json(result_json(sender.results[0]) if sender.results else {"oneway": True, "sent": 1})
    elif many:
        out().print(summary_table(summary, len(message.body)))
    elif oneway:
        out().print(f"sent one message to {topic} without waiting for an answer")
    else:
        out().print(results_table(sender.results))
    if summary.failed:
        raise CliError(f"{summary.failed} of {count} messages failed; first error: {summary.first_error}")
