"""``rmq user create|update|delete|get|list``: the users of 5.x brokers (ACL 2.0, 5.3 and later), what
mqadmin's ``createUser``, ``updateUser``, ``deleteUser``, ``getUser`` and ``listUser`` do.

Each broker keeps its own users, so a change goes to one broker (``-b``) or to every broker of a cluster
(``-c``), slaves included, as mqadmin sends it; a read asks one broker or every master of the cluster and
shows each one's answer (``--json``: broker address -> answer). The short options are mqadmin's, so its
command lines work under their mqadmin names too (``rmq createUser -c DefaultCluster -u alice -p secret``).

When the brokers enforce authentication, sign with a super user's name and password
(``--access-key``/``--secret-key``, or ``RMQ_ACCESS_KEY``/``RMQ_SECRET_KEY``): the broker's
``initAuthenticationUser``, say. The checks below (user types, statuses, and for ``rmq acl`` subjects,
resources, actions, decisions) are the names 5.3's broker knows; it would otherwise store an unknown action as
nothing, or fail inside.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from cli import params
from cli.brokers_run import read_each, report_done, walk_brokers, where_required
from cli.common import AccessKey, AsJson, Namesrv, SecretKey, TimeoutMs, cell, emit_json, out, target
from cli.errors import CliError, friendly
from cli.params import Broker, Cluster, one_of

if TYPE_CHECKING:
    from rocketmq_wire.bodies.auth import UserInfo

user_app = typer.Typer(
    help="Users of 5.x brokers (ACL 2.0): create, update, delete, get, list.", no_args_is_help=True
)


Username = Annotated[
    str, typer.Option("--username", "-u", callback=params.not_blank, help="The user's name (its access key)")
]
UserType = Annotated[
    str | None,
    typer.Option(
        "--user-type",
        "-t",
        callback=one_of("USER_TYPES", "a user type"),
        help="Normal (the default) or Super",
    ),
]


def _user_json(user: UserInfo | None) -> dict[str, Any] | None:
    """A user under Apache's names, every key present (null when the broker sent none)."""
    if user is None:
        return None
    return {
        "username": user.username,
        "password": user.password,
        "userType": user.user_type,
        "userStatus": user.user_status,
    }


def _show_users(found: dict[str, list[UserInfo]], as_json: bool) -> None:
    if as_json:
        emit_json({addr: [_user_json(user) for user in users] for addr, users in found.items()})
        return
    from rich.table import Table

    table = Table(
        "Broker", "Username", "Password", "User Type", "User Status", title="Users", title_justify="left"
    )
    for addr, users in found.items():
        for user in users:
            table.add_row(
                cell(addr),
                cell(user.username),
                cell(user.password),
                cell(user.user_type),
                cell(user.user_status),
            )
    out().print(table)


@user_app.command("create")
@friendly
def create(
    username: Username,
    password: Annotated[
        str,
        typer.Option("--password", "-p", callback=params.not_blank, help="The user's password (secret key)"),
    ],
    user_type: UserType = None,
    broker: Broker = None,
    cluster: Cluster = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Create a user (mqadmin createUser); only a super user may create a Super one."""
    from rocketmq_wire.bodies.auth import UserInfo

    where_required(broker, cluster)
    user = UserInfo(username=username.strip(), password=password.strip(), user_type=user_type)
    where = target(namesrv, access_key, secret_key, timeout_ms)
    done = walk_brokers(where, broker, cluster, "creating", False, lambda a, addr: a.create_user(addr, user))
    report_done(done, f"user {user.username} created", as_json)


@user_app.command("update")
@friendly
def update(
    username: Username,
    password: Annotated[str | None, typer.Option("--password", "-p", help="A new password")] = None,
    user_type: UserType = None,
    user_status: Annotated[
        str | None,
        typer.Option(
            "--user-status",
            "-s",
            callback=one_of("USER_STATUSES", "a user status"),
            help="enable or disable (a disabled user is refused at authentication)",
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
    """Change a user's password, type or status; what is not given stays (mqadmin updateUser)."""
    from rocketmq_wire.bodies.auth import UserInfo

    where_required(broker, cluster)
    new_password = password.strip() if password is not None else None
    if not new_password and user_type is None and user_status is None:
        raise CliError("pass --password, --user-type or --user-status: there is nothing to update")
    user = UserInfo(
        username=username.strip(), password=new_password, user_type=user_type, user_status=user_status
    )
    where = target(namesrv, access_key, secret_key, timeout_ms)
    done = walk_brokers(where, broker, cluster, "updating", False, lambda a, addr: a.update_user(addr, user))
    report_done(done, f"user {user.username} updated", as_json)


@user_app.command("delete")
@friendly
def delete(
    username: Username,
    broker: Broker = None,
    cluster: Cluster = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Delete a user and its ACL (mqadmin deleteUser); a name the broker does not know is not an error."""
    where_required(broker, cluster)
    name = username.strip()
    where = target(namesrv, access_key, secret_key, timeout_ms)
    done = walk_brokers(where, broker, cluster, "deleting", False, lambda a, addr: a.delete_user(addr, name))
    report_done(done, f"user {name} deleted", as_json)


@user_app.command("get")
@friendly
def get(
    username: Username,
    broker: Broker = None,
    cluster: Cluster = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """A user as each broker asked has it, password included (mqadmin getUser); with --json: broker
    address -> the user, or null where the broker has no such user."""
    name = username.strip()
    where = target(namesrv, access_key, secret_key, timeout_ms)
    found = read_each(where, broker, cluster, lambda a, addr: a.get_user(addr, name))
    if as_json:
        emit_json({addr: _user_json(user) for addr, user in found.items()})
        return
    missing = [addr for addr, user in found.items() if user is None]
    if len(missing) == len(found):
        raise CliError(f"no user {name!r} on {', '.join(missing)}")
    _show_users({addr: [user] for addr, user in found.items() if user is not None}, as_json=False)


@user_app.command("list")
@friendly
def list_users(
    name_filter: Annotated[
        str | None, typer.Option("--filter", "-f", help="Only users whose name contains this text")
    ] = None,
    broker: Broker = None,
    cluster: Cluster = None,
    namesrv: Namesrv = None,
    as_json: AsJson = False,
    access_key: AccessKey = None,
    secret_key: SecretKey = None,
    timeout_ms: TimeoutMs = 3000,
) -> None:
    """Each broker's users, passwords included (mqadmin listUser); with --json: broker address -> users."""
    wanted = name_filter.strip() if name_filter and name_filter.strip() else None
    where = target(namesrv, access_key, secret_key, timeout_ms)
    _show_users(read_each(where, broker, cluster, lambda a, addr: a.list_users(addr, wanted)), as_json)
