"""``rmq acl update-account|delete-account|update-global-white|version|config``: brokers' plain ACL (4.9.x),
what mqadmin's ``updateAclConfig``, ``deleteAclConfig``, ``updateGlobalWhiteAddr`` and
``clusterAclConfigVersion`` do (and 4.9.7's ``getAclConfig``); ``rmq acl create|update|delete|get|list``:
5.x brokers' ACLs (ACL 2.0, 5.3 and later, with ``rmq user`` for their users), what mqadmin's ``createAcl``,
``updateAcl``, ``deleteAcl``, ``getAcl`` and ``listAcl`` do.

Each command acts on one broker (``-b``) or on a cluster (``-c``): changes go to every broker of the cluster,
slaves included, as mqadmin sends them; reads ask the masters. The short options are mqadmin's, so its
command lines work under their mqadmin names (``rmq updateAclConfig -c DefaultCluster -a key -s secret``).
Sign with an admin account (``--access-key``/``--secret-key``) when the brokers enforce ACL; for ACL 2.0, with
a super user's name and password.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from cli import params
from cli.brokers_run import broker_addrs, read_each, report_done, walk_brokers, where_required
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
    with_admin,
)
from cli.errors import CliError, friendly
from cli.params import Broker, Cluster, one_of, split_list

if TYPE_CHECKING:
    from admin import Admin
    from rocketmq_wire.bodies.acl import GetBrokerClusterAclConfigResponseBody, PlainAccessConfig
    from rocketmq_wire.bodies.auth import AclInfo

acl_app = typer.Typer(
    help="Brokers' ACLs: 5.x's (create, update, delete, get, list) and 4.9.x's plain ACL (accounts, global "
    "white list, versions).",
    no_args_is_help=True,
)

AccountKey = Annotated[
    str, typer.Option("--account-key", "-a", callback=params.not_blank, help="The account's accessKey")
]


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

    where_required(broker, cluster)
    account = PlainAccessConfig(
        access_key=account_key.strip(),
        secret_key=account_secret.strip(),
        white_remote_address=white_address.strip() if white_address is not None else None,
        admin=_flag(admin_flag),
        default_topic_perm=default_topic_perm,
        default_group_perm=default_group_perm,
        topic_perms=split_list(topic_perms),
        group_perms=split_list(group_perms),
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
    where_required(broker, cluster)
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
    where_required(broker, cluster)
    entries = split_list(addresses) or []
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
    where_required(broker, cluster)
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
    where_required(broker, cluster)
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


# -- ACL 2.0 (5.3 and later) -------------------------------------------------------------------------------


def _subject(value: str | None) -> str | None:
    """``User:name`` (the only kind of subject 5.3 has), type spelled as Apache spells it."""
    if value is None:
        return None
    from rocketmq_wire.bodies.auth import canonical_subject

    found = canonical_subject(value)
    if found is None:
        raise typer.BadParameter(f"{value.strip()!r} is not a subject: write User:<username>")
    return found


def _resources(value: str | None) -> str | None:
    """Comma-separated resources, each ``Topic:name``, ``Group:name``, ``Type:prefix*``, ``Type:*`` or
    ``*`` (``Cluster`` and ``Namespace`` too), type spelled as Apache spells it."""
    if value is None:
        return None
    from rocketmq_wire.bodies.auth import canonical_resource

    items = split_list(value) or []
    if not items:
        raise typer.BadParameter("no resource given")
    checked = []
    for item in items:
        found = canonical_resource(item)
        if found is None:
            raise typer.BadParameter(
                f"{item!r} is not a resource: write Topic:<name>, Group:<name>, Type:<prefix>*, Type:* or *"
            )
        checked.append(found)
    return ",".join(checked)


def _actions(value: str | None) -> str | None:
    """Comma-separated actions, each one 5.3 knows (the broker would silently drop an unknown one)."""
    if value is None:
        return None
    check = one_of("ACTIONS", "an action")
    actions = [check(item) or "" for item in split_list(value) or []]
    if not actions:
        raise typer.BadParameter("no action given")
    return ",".join(actions)


Subject = Annotated[
    str, typer.Option("--subject", "-s", callback=_subject, help="Whose ACL: User:<username>")
]
Resources = Annotated[
    str,
    typer.Option(
        "--resources",
        "-r",
        callback=_resources,
        help="Comma-separated: Topic:<name>, Group:<name>, Type:<prefix>*, Type:* or *",
    ),
]
Actions = Annotated[
    str,
    typer.Option(
        "--actions",
        "-a",
        callback=_actions,
        help="Comma-separated: Pub, Sub, Create, Update, Delete, Get, List or All",
    ),
]
SourceIps = Annotated[
    str | None,
    typer.Option("--source-ip", "-i", help="Comma-separated addresses or CIDR blocks (default: any)"),
]
Decision = Annotated[
    str, typer.Option("--decision", "-d", callback=one_of("DECISIONS", "a decision"), help="Allow or Deny")
]


def _acl_of(subject: str, resources: str, actions: str, source_ips: str | None, decision: str) -> AclInfo:
    """The body mqadmin sends: one policy, an entry per resource with the same actions, addresses and
    decision."""
    from rocketmq_wire.bodies.auth import AclInfo

    return AclInfo.of(
        subject, split_list(resources) or [], split_list(actions) or [], split_list(source_ips), decision
    )


def _acl_json(acl: AclInfo | None) -> dict[str, Any] | None:
    """An ACL under Apache's names, every key present (null where the broker sent none)."""
    if acl is None:
        return None
    return {
        "subject": acl.subject,
        "policies": [
            {
                "policyType": policy.policy_type,
                "entries": [
                    {
                        "resource": entry.resource,
                        "actions": entry.actions,
                        "sourceIps": entry.source_ips,
                        "decision": entry.decision,
                    }
                    for entry in policy.entries or []
                ],
            }
            for policy in acl.policies or []
        ],
    }


def _show_acls(found: dict[str, list[AclInfo]], as_json: bool) -> None:
    """mqadmin's table (a row per entry) with the broker in front, or ``--json``: address -> ACLs."""
    if as_json:
        emit_json({addr: [_acl_json(acl) for acl in acls] for addr, acls in found.items()})
        return
    from rich.table import Table

    table = Table(
        "Broker",
        "Subject",
        "Policy Type",
        "Resource",
        "Actions",
        "Source IPs",
        "Decision",
        title="ACLs",
        title_justify="left",
    )
    for addr, acls in found.items():
        for acl in acls:
            for policy in acl.policies or []:
                for entry in policy.entries or []:
                    table.add_row(
                        cell(addr),
                        cell(acl.subject),
                        cell(policy.policy_type),
                        cell(entry.resource),
                        cell(",".join(entry.actions or [])),
                        cell(",".join(entry.source_ips or []) or "any"),
                        cell(entry.decision),
                    )
    out().print(table)


def _change_acl(
    where: Target, verb: str, acl: AclInfo, broker: str | None, cluster: str | None, as_json: bool
) -> None:
    """Send a create or update to one broker or every broker of the cluster (slaves too, as mqadmin)."""
    if verb == "create":
        done = walk_brokers(
            where, broker, cluster, "creating", False, lambda a, addr: a.create_acl(addr, acl)
        )
    else:
        done = walk_brokers(
            where, broker, cluster, "updating", False, lambda a, addr: a.update_acl(addr, acl)
        )
    resources = ",".join(e.resource or "" for p in acl.policies or [] for e in p.entries or [])
    report_done(done, f"ACL of {acl.subject} {verb}d: {resources}", as_json)


@acl_app.command("create")
@friendly
def create_acl(
    subject: Subject,
    resources: Resources,
    actions: Actions,
    decision: Decision,
    source_ips: SourceIps = None,
    broker: Broker = None,
    cluster: Cluster = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Grant or deny actions on resources to a user (5.x, mqadmin createAcl): its entries for these
    resources are added, or replaced where it has some."""
    where_required(broker, cluster)
    acl = _acl_of(subject, resources, actions, source_ips, decision)
    _change_acl(target(namesrv, access_key, secret_key, timeout_ms), "create", acl, broker, cluster, as_json)


@acl_app.command("update")
@friendly
def update_acl(
    subject: Subject,
    resources: Resources,
    actions: Actions,
    decision: Decision,
    source_ips: SourceIps = None,
    broker: Broker = None,
    cluster: Cluster = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Change a user's entries for these resources (5.x, mqadmin updateAcl; 5.3 treats it as create)."""
    where_required(broker, cluster)
    acl = _acl_of(subject, resources, actions, source_ips, decision)
    _change_acl(target(namesrv, access_key, secret_key, timeout_ms), "update", acl, broker, cluster, as_json)


@acl_app.command("delete")
@friendly
def delete_acl(
    subject: Subject,
    resource: Annotated[
        str | None,
        typer.Option(
            "--resources",
            "-r",
            callback=_resources,
            help="Only the entry of this resource (default: the whole ACL)",
        ),
    ] = None,
    broker: Broker = None,
    cluster: Cluster = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Delete a user's ACL, or its entry for one resource (5.x, mqadmin deleteAcl)."""
    where_required(broker, cluster)
    if resource is not None and "," in resource:
        raise CliError("--resources takes one resource here (as mqadmin deleteAcl sends it)")
    where = target(namesrv, access_key, secret_key, timeout_ms)
    done = walk_brokers(
        where, broker, cluster, "deleting", False, lambda a, addr: a.delete_acl(addr, subject, resource)
    )
    report_done(done, f"ACL of {subject} deleted" + (f" for {resource}" if resource else ""), as_json)


@acl_app.command("get")
@friendly
def get_acl(
    subject: Subject,
    broker: Broker = None,
    cluster: Cluster = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """A user's ACL as each broker asked has it (5.x, mqadmin getAcl); with --json: broker address -> the
    ACL, or null where it has none."""
    where = target(namesrv, access_key, secret_key, timeout_ms)
    found = read_each(where, broker, cluster, lambda a, addr: a.get_acl(addr, subject))
    if as_json:
        emit_json({addr: _acl_json(acl) for addr, acl in found.items()})
        return
    if all(acl is None for acl in found.values()):
        raise CliError(f"no ACL for {subject} on {', '.join(found)}")
    _show_acls({addr: [acl] for addr, acl in found.items() if acl is not None}, as_json=False)


@acl_app.command("list")
@friendly
def list_acls(
    subject_filter: Annotated[
        str | None, typer.Option("--subject", "-s", help="Only subjects containing this text")
    ] = None,
    resource_filter: Annotated[
        str | None, typer.Option("--resource", "-r", help="Only entries whose resource contains this text")
    ] = None,
    broker: Broker = None,
    cluster: Cluster = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Each broker's ACLs (5.x, mqadmin listAcl); with --json: broker address -> ACLs."""
    subjects = subject_filter.strip() if subject_filter and subject_filter.strip() else None
    resources = resource_filter.strip() if resource_filter and resource_filter.strip() else None
    where = target(namesrv, access_key, secret_key, timeout_ms)
    _show_acls(
        read_each(where, broker, cluster, lambda a, addr: a.list_acls(addr, subjects, resources)), as_json
    )
