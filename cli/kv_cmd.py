"""``rmq kv get|put|delete|list``: the NameServers' KV settings (e.g. ``ORDER_TOPIC_CONFIG``)."""

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
from cli.errors import CliError, friendly

kv_app = typer.Typer(help="Read and change the NameServers' KV settings.", no_args_is_help=True)

Namespace = Annotated[
    str, typer.Argument(callback=params.not_blank, help="KV namespace, e.g. ORDER_TOPIC_CONFIG")
]
Key = Annotated[str, typer.Argument(callback=params.not_blank, help="Key within the namespace")]


@kv_app.command("get")
@friendly
def get(
    namespace: Namespace,
    key: Key,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Print one value; a missing key is an error (exit code 1)."""
    where = target(namesrv, access_key, secret_key, timeout_ms)
    value = with_admin(where, lambda admin: admin.kv_get(namespace, key))
    if value is None:
        raise CliError(f"no key {key!r} in KV namespace {namespace!r}")
    if as_json:
        emit_json({"namespace": namespace, "key": key, "value": value})
    else:
        out().print(cell(value))


@kv_app.command("list")
@friendly
def list_keys(
    namespace: Namespace,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Every key and value of a namespace."""
    from cli.render import key_value_table

    where = target(namesrv, access_key, secret_key, timeout_ms)
    values = with_admin(where, lambda admin: admin.kv_list(namespace))
    if as_json:
        emit_json(values)
    else:
        out().print(key_value_table(values, title=namespace))


@kv_app.command("put")
@friendly
def put(
    namespace: Namespace,
    key: Key,
    value: Annotated[str, typer.Argument(help="The value")],
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Create or update a value on every NameServer (mqadmin updateKvConfig)."""
    where = target(namesrv, access_key, secret_key, timeout_ms)
    written = with_admin(where, lambda admin: admin.kv_put(namespace, key, value))
    if as_json:
        emit_json({"namespace": namespace, "key": key, "value": value, "namesrvs": written})
    else:
        out().print(cell(f"set {namespace}/{key} on {', '.join(written)}"))


@kv_app.command("delete")
@friendly
def delete(
    namespace: Namespace,
    key: Key,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Remove a key from every NameServer (mqadmin deleteKvConfig)."""
    where = target(namesrv, access_key, secret_key, timeout_ms)
    written = with_admin(where, lambda admin: admin.kv_delete(namespace, key))
    if as_json:
        emit_json({"namespace": namespace, "key": key, "namesrvs": written})
    else:
        out().print(cell(f"deleted {namespace}/{key} from {', '.join(written)}"))
