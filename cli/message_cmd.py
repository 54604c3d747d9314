"""``rmq message get MSGID`` and ``rmq message query --key K | --unique-key U TOPIC``."""

from __future__ import annotations

from typing import Annotated

import typer

from cli import params
from cli.common import AccessKey, AsJson, Namesrv, SecretKey, TimeoutMs, emit_json, out, target, with_admin
from cli.errors import CliError, friendly
from cli.render import message_detail, message_json, messages_table

message_app = typer.Typer(help="Find stored messages by id or key.", no_args_is_help=True)


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
