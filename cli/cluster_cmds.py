"""``rmq route``, ``rmq broker-stats``, ``rmq broker-config``: what the NameServers know and what each
broker says about itself (``rmq clusters`` is also ``rmq cluster list``, so it lives in
:mod:`cli.cluster_admin_cmd`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from cli import params
from cli.common import AccessKey, AsJson, Namesrv, SecretKey, TimeoutMs, emit_json, out, target, with_admin
from cli.errors import friendly
from cli.params import ClusterName

if TYPE_CHECKING:
    from admin import Admin, BrokerAddress

BrokerAddr = Annotated[
    str | None,
    typer.Option("--broker", "-b", callback=params.broker_address, help="One broker address, host:port"),
]


@friendly
def route(
    topic: Annotated[str, typer.Argument(callback=params.topic_name, help="Topic name")],
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Show where a topic lives: its brokers, their addresses, queue counts and permissions."""
    from cli.render import route_json, route_table

    where = target(namesrv, access_key, secret_key, timeout_ms)
    data = with_admin(where, lambda admin: admin.topic_route(topic))
    if as_json:
        emit_json(route_json(data))
    else:
        out().print(route_table(topic, data))


async def _chosen_brokers(admin: Admin, broker: str | None, cluster: str | None) -> list[BrokerAddress]:
    from admin import BrokerAddress

    if broker is not None:
        return [b for b in await admin.brokers() if b.addr == broker] or [BrokerAddress("", "", 0, broker)]
    return await admin.brokers(cluster)


async def _stats_of(
    admin: Admin, broker: str | None, cluster: str | None, config: bool
) -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for chosen in await _chosen_brokers(admin, broker, cluster):
        if config:
            found[chosen.addr] = await admin.broker_config(chosen.addr)
        else:
            found[chosen.addr] = await admin.broker_runtime_stats(chosen.addr)
    return found


def _show_tables(found: dict[str, dict[str, str]], as_json: bool, *, sort: bool) -> None:
    from cli.render import key_value_table

    if as_json:
        emit_json(found)
        return
    console = out()
    for addr, values in found.items():
        console.print(key_value_table(values, title=addr, sort=sort))


@friendly
def broker_stats(
    broker: BrokerAddr = None,
    cluster: ClusterName = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Show brokers' runtime figures (mqadmin brokerStatus); every broker unless one is named."""
    where = target(namesrv, access_key, secret_key, timeout_ms)
    found = with_admin(where, lambda admin: _stats_of(admin, broker, cluster, False))
    _show_tables(found, as_json, sort=True)


@friendly
def broker_config(
    broker: BrokerAddr = None,
    cluster: ClusterName = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Show brokers' settings (mqadmin getBrokerConfig); every broker unless one is named."""
    where = target(namesrv, access_key, secret_key, timeout_ms)
    found = with_admin(where, lambda admin: _stats_of(admin, broker, cluster, True))
    _show_tables(found, as_json, sort=False)
