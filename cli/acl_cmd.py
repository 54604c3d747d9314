"""``rmq acl update-account|delete-account|update-global-white|version|config``: brokers' plain ACL (4.9.x),
what mqadmin's ``updateAclConfig``, ``deleteAclConfig``, ``updateGlobalWhiteAddr`` and
``clusterAclConfigVersion`` do (and 4.9.7's ``getAclConfig``).

Each command acts on one broker (``-b``) or on a cluster (``-c``): changes go to every broker of the cluster,
slaves included, as mqadmin sends them; reads ask the masters. The short options are mqadmin's, so its
command lines work under their mqadmin names (``rmq updateAclConfig -c DefaultCluster -a key -s secret``).
Sign with an admin account (``--access-key``/``--secret-key``) when the brokers enforce ACL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from cli import params
from cli.broker_admin_cmd import Broker, Cluster, broker_addrs, not_both, report_done, walk_brokers
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

if TYPE_CHECKING:
    from admin import Admin
    from rocketmq_wire.bodies.acl import GetBrokerClusterAclConfigResponseBody, PlainAccessConfig

acl_app = typer.Typer(
    help="Brokers' plain ACL (4.9.x): accounts, global white list, versions.", no_args_is_help=True
)

AccountKey = Annotated[
    str, typer.Option("--account-key", "-a", callback=params.not_blank, help="The account's accessKey")
]


def _where_required(broker: str | None, cluster: str | None) -> None:
    if broker is None and cluster is None:
        raise CliError("pass --broker or --cluster")
    not_both(broker, cluster)


def _split(text: str | None) -> list[str] | None:
    if text is None:
        return None
    return [item.strip() for item in text.split(",") if item.strip()]


def _flag(text: str | None) -> bool:
    """mqadmin's ``-m true|false`` (anything but ``true`` is false there; here it is refused)."""
    if text is None:
        return False
    value = text.strip().lower()
    if value not in ("true", "false"):
        raise CliError(f"--admin takes true or false, not {text!r}")
    return value == "true"


@acl_app.command("update-account")
@friendly
def update_account(
    account_key: AccountKey,
    account_secret: Annotated[
        str, typer.Option("--account-secret", "-s", callback=params.not_blank, help="The account's secretKey")
    ],
    white_address: Annotated[
        str | None, typer.Option("--white-address", "-w", help="whiteRemoteAddress (skips signature checks)")
    ] = None,
    default_topic_perm: Annotated[
        str | None, typer.Option("--default-topic-perm", "-i", help="PUB, SUB, PUB|SUB or DENY")
    ] = None,
    default_group_perm: Annotated[
        str | None, typer.Option("--default-group-perm", "-u", help="PUB, SUB, PUB|SUB or DENY")
    ] = None,
    topic_perms: Annotated[
        str | None, typer.Option("--topic-perms", "-t", help="e.g. topicA=DENY,topicB=SUB")
    ] = None,
    group_perms: Annotated[str | None, typer.Option("--group-perms", "-g", help="e.g. groupA=SUB")] = None,
    admin_flag: Annotated[
        str | None, typer.Option("--admin", "-m", help="true or false (left out: false, as mqadmin sends it)")
    ] = None,
    broker: Broker = None,
    cluster: Cluster = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Create an ACL account, or update the one with this key (mqadmin updateAclConfig)."""
    from rocketmq_wire.bodies.acl import PlainAccessConfig

    _where_required(broker, cluster)
    account = PlainAccessConfig(
        access_key=account_key.strip(),
        secret_key=account_secret.strip(),
        white_remote_address=white_address.strip() if white_address is not None else None,
        admin=_flag(admin_flag),
        default_topic_perm=default_topic_perm,
        default_group_perm=default_group_perm,
        topic_perms=_split(topic_perms),
        group_perms=_split(group_perms),
    )
    where = target(namesrv, access_key, secret_key, timeout_ms)
    done = walk_brokers(
        where, broker, cluster, "updating", False, lambda a, addr: a.update_acl_account(addr, account)
    )
    report_done(done, f"ACL account {account.access_key}", as_json)


@acl_app.command("delete-account")
@friendly
def delete_account(
    account_key: AccountKey,
    broker: Broker = None,
    cluster: Cluster = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Delete an ACL account (mqadmin deleteAclConfig)."""
    _where_required(broker, cluster)
    where = target(namesrv, access_key, secret_key, timeout_ms)
    key = account_key.strip()
    done = walk_brokers(
        where, broker, cluster, "deleting", False, lambda a, addr: a.delete_acl_account(addr, key)
    )
    report_done(done, f"ACL account {key} deleted", as_json)


@acl_app.command("update-global-white")
@friendly
def update_global_white(
    addresses: Annotated[
        str,
        typer.Option(
            "--addresses",
            "-g",
            callback=params.not_blank,
            help="Comma-separated patterns, e.g. 10.10.103.*,192.168.0.*",
        ),
    ],
    acl_file: Annotated[
        str | None,
        typer.Option("--acl-file", "-p", help="The broker's ACL file (default: the one the broker reports)"),
    ] = None,
    broker: Broker = None,
    cluster: Cluster = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Replace the global white list: addresses let in without keys (mqadmin updateGlobalWhiteAddr)."""
    _where_required(broker, cluster)
    entries = _split(addresses) or []
    where = target(namesrv, access_key, secret_key, timeout_ms)
    done = walk_brokers(
        where,
        broker,
        cluster,
        "updating",
        False,
        lambda a, addr: a.update_global_white_addrs(addr, entries, acl_file),
    )
    report_done(done, f"global white list {','.join(entries)}", as_json)


@acl_app.command("version")
@friendly
def version(
    broker: Broker = None,
    cluster: Cluster = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Each master's ACL files and their versions (mqadmin clusterAclConfigVersion)."""
    _where_required(broker, cluster)
    where = target(namesrv, access_key, secret_key, timeout_ms)

    async def main(admin: Admin) -> list[dict[str, Any]]:
        rows = []
        for addr in await broker_addrs(admin, broker, cluster, masters_only=True):
            info = await admin.acl_version(addr)
            for path, stamp in info.files.items():
                rows.append(
                    {
                        "cluster": info.cluster,
                        "brokerName": info.broker_name,
                        "brokerAddr": info.broker_addr,
                        "aclFilePath": path,
                        "counter": stamp.counter,
                        "timestamp": stamp.timestamp,
                    }
                )
        return rows

    rows = with_admin(where, main)
    if as_json:
        emit_json(rows)
        return
    from rich.table import Table

    from cli.render import timestamp

    table = Table(
        "Cluster", "Broker Name", "Broker Addr", "ACL File", "Version", "Last Update", title="ACL versions"
    )
    for row in rows:
        table.add_row(
            cell(row["cluster"]),
            cell(row["brokerName"]),
            cell(row["brokerAddr"]),
            cell(row["aclFilePath"]),
            cell(row["counter"]),
            cell(timestamp(row["timestamp"])),
        )
    out().print(table)


@acl_app.command("config")
@friendly
def config(
    broker: Broker = None,
    cluster: Cluster = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Each master's global white list and accounts, secrets included (4.9.7's mqadmin getAclConfig; a
    4.9.8 broker does not answer it)."""
    _where_required(broker, cluster)
    where = target(namesrv, access_key, secret_key, timeout_ms)

    async def main(admin: Admin) -> dict[str, GetBrokerClusterAclConfigResponseBody]:
        return {
            addr: await admin.acl_config(addr)
            for addr in await broker_addrs(admin, broker, cluster, masters_only=True)
        }

    configs = with_admin(where, main)
    if as_json:
        emit_json(
            {
                addr: {
                    "globalWhiteAddrs": body.global_white_addrs or [],
                    "accounts": [_account_json(account) for account in body.plain_access_configs or []],
                }
                for addr, body in configs.items()
            }
        )
        return
    from rich.table import Table

    for addr, body in configs.items():
        table = Table(
            "Access Key",
            "Secret Key",
            "White Address",
            "Admin",
            "Default Topic",
            "Default Group",
            "Topic Perms",
            "Group Perms",
            title=f"{addr}: global white list {', '.join(body.global_white_addrs or []) or '(none)'}",
            title_justify="left",
        )
        for account in body.plain_access_configs or []:
            table.add_row(
                cell(account.access_key),
                cell(account.secret_key),
                cell(account.white_remote_address),
                cell("true" if account.admin else "false"),
                cell(account.default_topic_perm),
                cell(account.default_group_perm),
                cell(",".join(account.topic_perms or [])),
                cell(",".join(account.group_perms or [])),
            )
        out().print(table)


def _account_json(account: PlainAccessConfig) -> dict[str, Any]:
    return {
        "accessKey": account.access_key,
        "secretKey": account.secret_key,
        "whiteRemoteAddress": account.white_remote_address,
        "admin": account.admin,
        "defaultTopicPerm": account.default_topic_perm,
        "defaultGroupPerm": account.default_group_perm,
        "topicPerms": account.topic_perms or [],
        "groupPerms": account.group_perms or [],
    }
