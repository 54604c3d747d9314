"""The running half shared by the commands that act on one broker (``-b``) or on the brokers of a cluster
(``-c``): ``rmq update-broker-config`` and the other broker maintenance commands, ``rmq user``, ``rmq acl``.

It lives in a run module of its own so that those command modules share it without importing one another.
Command modules import it when they load, so it keeps the clients and tables out of its module-level imports
(``rmq --help`` must stay fast); :class:`admin.Admin` is named for the type checker only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from cli.common import Target, cell, emit_json, out, walking, with_admin
from cli.errors import CliError

if TYPE_CHECKING:
    from admin import Admin

T = TypeVar("T")


def not_both(broker: str | None, cluster: str | None) -> None:
    """``--broker`` and ``--cluster`` name the same thing two ways: one of them at most."""
    if broker is not None and cluster is not None:
        raise CliError("pass either --cluster or --broker, not both")


def where_required(broker: str | None, cluster: str | None) -> None:
    """Exactly one of ``--broker``/``--cluster`` (mqadmin makes one of them required too)."""
    if broker is None and cluster is None:
        raise CliError("pass --broker or --cluster")
    not_both(broker, cluster)


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
    """Run ``work`` on one broker, or on every broker (masters only if asked) of a cluster, one after the
    other with a progress bar; returns the addresses done."""
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


def read_each(
    where: Target, broker: str | None, cluster: str | None, work: Callable[[Admin, str], Awaitable[T]]
) -> dict[str, T]:
    """``work`` on one broker, or on every master of a cluster; each broker's answer by its address (the
    brokers keep users and ACLs each on its own, so their answers may differ)."""
    where_required(broker, cluster)

    async def main(admin: Admin) -> dict[str, T]:
        addrs = await broker_addrs(admin, broker, cluster, masters_only=True)
        if not addrs:
            raise CliError(f"cluster {cluster} has no master broker to ask")
        return {addr: await work(admin, addr) for addr in addrs}

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
