"""User and ACL administration of 5.x brokers (ACL 2.0, 5.3 and later): what mqadmin's ``createUser``,
``updateUser``, ``deleteUser``, ``getUser``, ``listUser``, ``createAcl``, ``updateAcl``, ``deleteAcl``,
``getAcl`` and ``listAcl`` do, for one broker.

A broker with ``authenticationEnabled`` only serves signed requests, and with ``authorizationEnabled`` it
lets only super users (the ``initAuthenticationUser``, or users created with type ``Super``) or users whose
ACL grants the cluster resource use these requests: sign with such a user's name and password
(``Admin(..., access_key=username, secret_key=password)``). A refusal raises
:class:`~admin.errors.RequestRefusedError` with the broker's code and remark as it sent them: 5.3.3 answers
NO_PERMISSION for authentication and authorization failures and for refused changes ("The user is
existed"), INVALID_PARAMETER for a blank username, SYSTEM_ERROR when it fails internally, and a broker without
ACL 2.0 (4.x, this project's) REQUEST_CODE_NOT_SUPPORTED.

Every user and ACL is kept by each broker on its own (the local metadata providers), which is why mqadmin
sends changes to every broker of a cluster; these functions act on the one broker they are given.
"""

from __future__ import annotations

from typing import TypeVar

from admin.errors import AdminError
from admin.rpc import AdminRpc, check
from rocketmq_wire.bodies.auth import AclInfo, AclInfoList, UserInfo, UserInfoList
from rocketmq_wire.bodies.base import JsonBody
from rocketmq_wire.codes import RequestCode, ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.auth import (
    CreateAclRequestHeader,
    CreateUserRequestHeader,
    DeleteAclRequestHeader,
    DeleteUserRequestHeader,
    GetAclRequestHeader,
    GetUserRequestHeader,
    ListAclsRequestHeader,
    ListUsersRequestHeader,
    UpdateAclRequestHeader,
    UpdateUserRequestHeader,
)
from rocketmq_wire.headers.base import CommandHeader
from rocketmq_wire.javahash import ExtFields

B = TypeVar("B", bound=JsonBody)


async def _ask(
    rpc: AdminRpc, broker_addr: str, code: int, header: CommandHeader, what: str, body: bytes = b""
) -> RemotingCommand:
    """Send one request and return the broker's SUCCESS answer; any other answer raises with its code and
    remark (a broker that does not know the code is said to predate ACL 2.0, the usual reason)."""
    # Java gives any request with a typed header an ext map, so a header whose fields are all null (a
    # listing without filters) still writes an empty "extFields": the same here.
    request = RemotingCommand.request(code, header, body, ext_fields=ExtFields())
    response = await rpc.server(broker_addr, request)
    if response.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED:
        what = f"{what} (ACL 2.0: brokers 5.3 and later)"
    return check(response, what, broker_addr)


def _read(body_type: type[B], response: RemotingCommand, what: str, broker_addr: str) -> B | None:
    """The answer's body, or ``None`` when there is none (how the broker says "no such user or ACL")."""
    if not response.body:
        return None
    try:
        return body_type.from_json(response.body)
    except CodecError as exc:
        raise AdminError(f"unreadable {what} from {broker_addr}: {exc}") from exc


async def create_user(rpc: AdminRpc, broker_addr: str, user: UserInfo) -> None:
    """Create ``user`` (its type ``Normal`` and status ``enable`` unless given). Only a super user may
    create a super user; an existing name is refused ("The user is existed")."""
    header = CreateUserRequestHeader(username=user.username)
    await _ask(rpc, broker_addr, RequestCode.AUTH_CREATE_USER, header, "user creation", user.to_json())


async def update_user(rpc: AdminRpc, broker_addr: str, user: UserInfo) -> None:
    """Change the password, type or status of ``user.username``: what is ``None`` in ``user`` is kept."""
    header = UpdateUserRequestHeader(username=user.username)
    await _ask(rpc, broker_addr, RequestCode.AUTH_UPDATE_USER, header, "user update", user.to_json())


async def delete_user(rpc: AdminRpc, broker_addr: str, username: str) -> None:
    """Delete the user and its ACL; deleting a name the broker does not know succeeds (as on 5.3.3)."""
    header = DeleteUserRequestHeader(username=username)
    await _ask(rpc, broker_addr, RequestCode.AUTH_DELETE_USER, header, "user deletion")


async def get_user(rpc: AdminRpc, broker_addr: str, username: str) -> UserInfo | None:
    """The user, password included; ``None`` when the broker has no such user."""
    header = GetUserRequestHeader(username=username)
    response = await _ask(rpc, broker_addr, RequestCode.AUTH_GET_USER, header, "user lookup")
    return _read(UserInfo, response, "user", broker_addr)


async def list_users(rpc: AdminRpc, broker_addr: str, name_filter: str | None = None) -> list[UserInfo]:
    """Every user whose name contains ``name_filter`` (all without one), in the broker's order."""
    header = ListUsersRequestHeader(filter=name_filter)
    response = await _ask(rpc, broker_addr, RequestCode.AUTH_LIST_USER, header, "user listing")
    found = _read(UserInfoList, response, "user list", broker_addr)
    return [] if found is None else found.items


async def create_acl(rpc: AdminRpc, broker_addr: str, acl: AclInfo) -> None:
    """Add ``acl``'s entries to its subject's ACL (an entry for a resource already there replaces it).

    The subject must name an existing user.
    """
    header = CreateAclRequestHeader(subject=acl.subject)
    await _ask(rpc, broker_addr, RequestCode.AUTH_CREATE_ACL, header, "ACL creation", acl.to_json())


async def update_acl(rpc: AdminRpc, broker_addr: str, acl: AclInfo) -> None:
    """As :func:`create_acl`: 5.3.3 treats both requests alike."""
    header = UpdateAclRequestHeader(subject=acl.subject)
    await _ask(rpc, broker_addr, RequestCode.AUTH_UPDATE_ACL, header, "ACL update", acl.to_json())


async def delete_acl(
    rpc: AdminRpc,
    broker_addr: str,
    subject: str,
    resource: str | None = None,
    policy_type: str | None = None,
) -> None:
    """Delete the subject's whole ACL, or only its entry for ``resource`` (of the ``Custom`` policy unless
    ``policy_type`` names another). A subject without an ACL is refused ("The acl is not exist")."""
    header = DeleteAclRequestHeader(subject=subject, policy_type=policy_type, resource=resource)
    await _ask(rpc, broker_addr, RequestCode.AUTH_DELETE_ACL, header, "ACL deletion")


async def get_acl(rpc: AdminRpc, broker_addr: str, subject: str) -> AclInfo | None:
    """The subject's ACL; ``None`` when it has none (a subject naming no user is refused)."""
    header = GetAclRequestHeader(subject=subject)
    response = await _ask(rpc, broker_addr, RequestCode.AUTH_GET_ACL, header, "ACL lookup")
    return _read(AclInfo, response, "ACL", broker_addr)


async def list_acls(
    rpc: AdminRpc,
    broker_addr: str,
    subject_filter: str | None = None,
    resource_filter: str | None = None,
) -> list[AclInfo]:
    """The ACLs whose subject contains ``subject_filter``, with only their entries whose resource contains
    ``resource_filter`` (either may be left out)."""
    header = ListAclsRequestHeader(subject_filter=subject_filter, resource_filter=resource_filter)
    response = await _ask(rpc, broker_addr, RequestCode.AUTH_LIST_ACL, header, "ACL listing")
    found = _read(AclInfoList, response, "ACL list", broker_addr)
    return [] if found is None else found.items
