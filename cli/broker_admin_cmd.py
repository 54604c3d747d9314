"""Broker maintenance commands: ``rmq update-broker-config``, ``rmq clean-expired-cq``,
``rmq delete-expired-commitlog``, ``rmq clean-unused-topic`` (mqadmin updateBrokerConfig, cleanExpiredCQ,
deleteExpiredCommitLog, cleanUnusedTopic).

``rmq broker`` runs a broker, so these are top-level commands in the help's broker panel. Each walks one
broker or every broker of a cluster (of all clusters when none is named), with a progress bar.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated

import typer

from cli import params
from cli.common import (
    AccessKey,
    AsJson,
    Namesrv,
    SecretKey,
    Target,
    TimeoutMs,
    cell,
    emit_json,
    out,
    target,
    walking,
    with_admin,
)
from cli.errors import CliError, friendly

if TYPE_CHECKING:
    from admin import Admin

Broker = Annotated[
    str | None,
    typer.Option("--broker", "-b", callback=params.broker_address, help="One broker, host:port"),
]
Cluster = Annotated[str | None, typer.Option("--cluster", "-c", help="Every broker of this cluster")]


def not_both(broker: str | None, cluster: str | None) -> None:
    if broker is not None and cluster is not None:
        raise CliError("pass either --cluster or --broker, not both")


async def broker_addrs(
    admin: Admin, broker: str | None, cluster: str | None, masters_only: bool
) -> list[str]:
    """``broker`` alone, or every broker (masters only if asked) of ``cluster`` (of all clusters if None)."""
    if broker is not None:
        return [broker]
    return [b.addr for b in await admin.brokers(cluster, masters_only=masters_only)]


def walk_brokers(
    where: Target,
    broker: str | None,
    cluster: str | None,
    what: str,
    masters_only: bool,
    work: Callable[[Admin, str], Awaitable[object]],
) -> list[str]:
    """Run ``work`` on one broker, or on every broker (masters only if asked) of a cluster; returns the
    addresses done. Shared by the commands that change brokers one after the other (here and ``rmq acl``)."""
    not_both(broker, cluster)

    async def main(admin: Admin) -> list[str]:
        addrs = await broker_addrs(admin, broker, cluster, masters_only)
        with walking(what) as bar:
            task = bar.add_task(what, total=len(addrs))
            for addr in addrs:
                await work(admin, addr)
                bar.advance(task)
        return addrs

    return with_admin(where, main)


def report_done(done: list[str], what: str, as_json: bool) -> None:
    """One "success" row per broker done (or ``{"brokers": [...], "success": true}`` with ``--json``)."""
    from rich.table import Table

    if as_json:
        emit_json({"brokers": done, "success": True})
        return
    table = Table("Broker", "Result", title=what, title_justify="left")
    for addr in done:
        table.add_row(cell(addr), cell("success"))
    out().print(table)


@friendly
def update_broker_config(
    key: Annotated[str, typer.Option("--key", "-k", callback=params.not_blank, help="Setting (Java name)")],
    value: Annotated[str, typer.Option("--value", "-v", help="New value")],
    broker: Broker = None,
    cluster: Cluster = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Change a setting of running brokers: one, or every one of a cluster (mqadmin updateBrokerConfig)."""
    if broker is None and cluster is None:
        raise CliError("pass --broker or --cluster")
    where = target(namesrv, access_key, secret_key, timeout_ms)
    done = walk_brokers(
        where, broker, cluster, "updating", False, lambda a, addr: a.update_broker_config(addr, {key: value})
    )
    report_done(done, f"{key}={value}", as_json)


@friendly
def clean_expired_cq(
    broker: Broker = None,
    cluster: Cluster = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Drop consume queues pointing only at deleted commit-log files (mqadmin cleanExpiredCQ)."""
    where = target(namesrv, access_key, secret_key, timeout_ms)
    done = walk_brokers(
        where,
        broker,
        cluster,
        "cleaning",
        False,
        lambda a, addr: a.clean_expired_consume_queue(broker_addr=addr),
    )
    report_done(done, "clean expired consume queues", as_json)


@friendly
def delete_expired_commitlog(
    broker: Broker = None,
    cluster: Cluster = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Run commit-log retention now (mqadmin deleteExpiredCommitLog)."""
    where = target(namesrv, access_key, secret_key, timeout_ms)
    done = walk_brokers(
        where,
        broker,
        cluster,
        "deleting",
        False,
        lambda a, addr: a.delete_expired_commit_log(broker_addr=addr),
    )
    report_done(done, "delete expired commit log", as_json)


@friendly
def clean_unused_topic(
    broker: Broker = None,
    cluster: Cluster = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Drop consume queues of topics brokers no longer have (mqadmin cleanUnusedTopic)."""
    where = target(namesrv, access_key, secret_key, timeout_ms)
    done = walk_brokers(
        where, broker, cluster, "cleaning", False, lambda a, addr: a.clean_unused_topic(broker_addr=addr)
    )
    report_done(done, "clean unused topics", as_json)
