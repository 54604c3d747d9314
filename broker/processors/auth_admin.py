"""ACL 2.0 administration, AUTH_CREATE_USER .. AUTH_LIST_ACL (3001-3010), answered as Apache 5.3.3's
``AdminBrokerProcessor`` answers them.

Refusals of the user and ACL rules answer NO_PERMISSION with Apache's remark ("The user is existed", "The
subject is not exist.", ...); a missing username answers INVALID_PARAMETER "The username is blank". Only a
super user may create or change a super user. A read that finds nothing answers SUCCESS without a body.
On a broker without ACL 2.0 Apache has no metadata store and fails inside: SYSTEM_ERROR with its generic
remark, which is what these answer then too.
"""

from __future__ import annotations

import logging

from broker.auth import AuthError, AuthService
from broker.auth.model import Acl, Policy, PolicyEntry, Resource, User, action, decision, policy_type
from broker.auth.model import user_status as status_of
from broker.auth.model import user_type as type_of
from broker.processors.common import read_header
from rocketmq_wire import RemotingCommand, ResponseCode
from rocketmq_wire.acl import ACCESS_KEY
from rocketmq_wire.bodies.auth import (
    AclInfo,
    AclInfoList,
    PolicyEntryInfo,
    PolicyInfo,
    UserInfo,
    UserInfoList,
    canonical_subject,
)
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
from rocketmq_wire.transport import Connection

log = logging.getLogger("broker.auth")

SYSTEM_ERROR_REMARK = "An system error occurred, please try again later."
USERNAME_BLANK = "The username is blank"


def _failed(request: RemotingCommand, exc: Exception) -> RemotingCommand:
    if isinstance(exc, AuthError):
        return request.make_response(ResponseCode.NO_PERMISSION, exc.message)
    log.error("ACL 2.0 admin request %d failed: %s", request.code, exc)
    return request.make_response(ResponseCode.SYSTEM_ERROR, SYSTEM_ERROR_REMARK)


def _off(request: RemotingCommand) -> RemotingCommand:
    log.warning("ACL 2.0 admin request %d on a broker with ACL 2.0 off", request.code)
    return request.make_response(ResponseCode.SYSTEM_ERROR, SYSTEM_ERROR_REMARK)


def _not_super_login(request: RemotingCommand, auth: AuthService) -> bool:
    """Whether the request is signed by someone other than a super user (unsigned: no, as Apache)."""
    username = request.fields().get(ACCESS_KEY)
    return bool(username) and not auth.is_super(str(username))


def _user_of(request: RemotingCommand, username: str) -> User:
    try:
        info = UserInfo.from_json(request.body or b"")
    except CodecError as exc:
        raise ValueError(f"the user body cannot be read: {exc}") from None
    return User(username, info.password, type_of(info.user_type), status_of(info.user_status))


def _user_info(user: User) -> UserInfo:
    return UserInfo(
        username=user.username, password=user.password, user_type=user.user_type, user_status=user.user_status
    )


def _acl_of(request: RemotingCommand, header_subject: str | None) -> Acl:
    """The body as Apache converts it: unknown actions dropped, unknown types left for validation."""
    try:
        info = AclInfo.from_json(request.body or b"null") if request.body else None
    except CodecError as exc:
        raise ValueError(f"the ACL body cannot be read: {exc}") from None
    if info is None or not info.policies:
        raise ValueError("The body of acl is null")
    subject = canonical_subject(info.subject or header_subject or "")
    if subject is None:
        raise ValueError(f"the subject {info.subject or header_subject!r} cannot be read")
    policies = []
    for p in info.policies:
        if not p.entries:
            continue
        entries = []
        for e in p.entries:
            resource = Resource.parse(e.resource)
            if resource is None:
                raise _ResourceMissing
            actions = [a for a in (action(text) for text in e.actions or []) if a is not None]
            entries.append(
                PolicyEntry(
                    resource, actions, list(e.source_ips) if e.source_ips else None, decision(e.decision)
                )
            )
        policies.append(Policy(policy_type(p.policy_type) or "Custom", entries))
    return Acl(subject, policies)


class _ResourceMissing(AuthError):
    def __init__(self) -> None:
        super().__init__("The resource is null.")


def _acl_info(acl: Acl) -> AclInfo:
    return AclInfo(
        subject=acl.subject,
        policies=[
            PolicyInfo(
                policy_type=p.policy_type,
                entries=[
                    PolicyEntryInfo(
                        resource=e.resource.key,
                        actions=list(e.actions) or None,
                        source_ips=list(e.source_ips) if e.source_ips else None,
                        decision=e.decision,
                    )
                    for e in p.entries
                ],
            )
            for p in acl.policies
        ],
    )


class _AuthAdmin:
    def __init__(self, *, auth: AuthService | None) -> None:
        self._auth = auth

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        if self._auth is None:
            return _off(request)
        try:
            return self.answer(request, self._auth)
        except (AuthError, ValueError, OSError) as exc:
            return _failed(request, exc)

    def answer(self, request: RemotingCommand, auth: AuthService) -> RemotingCommand:
        raise NotImplementedError


def _user_to_write(
    request: RemotingCommand, auth: AuthService, username: str | None, verb: str
) -> User | RemotingCommand:
    """The user a create or update request carries, or Apache's refusal: a blank name, or a super user
    written by someone who is not one (the remark names the request's ``verb``, in Apache's words)."""
    if not username:
        return request.make_response(ResponseCode.INVALID_PARAMETER, USERNAME_BLANK)
    user = _user_of(request, username)
    if user.is_super and _not_super_login(request, auth):
        return request.make_response(
            ResponseCode.SYSTEM_ERROR, f"The super user can only be {verb} by super user"
        )
    return user


class CreateUserProcessor(_AuthAdmin):
    def answer(self, request: RemotingCommand, auth: AuthService) -> RemotingCommand:
        user = _user_to_write(request, auth, read_header(request, CreateUserRequestHeader).username, "create")
        if isinstance(user, RemotingCommand):
            return user
        auth.metadata.create_user(user)
        return request.make_response(ResponseCode.SUCCESS)


class UpdateUserProcessor(_AuthAdmin):
    def answer(self, request: RemotingCommand, auth: AuthService) -> RemotingCommand:
        user = _user_to_write(request, auth, read_header(request, UpdateUserRequestHeader).username, "update")
        if isinstance(user, RemotingCommand):
            return user
        username = user.username
        old = auth.metadata.user(username)
        if old is None:
            raise _Refused("The user is not exist")
        if old.is_super and _not_super_login(request, auth):
            raise _Refused("The super user can only be update by super user")
        auth.metadata.update_user(user)
        return request.make_response(ResponseCode.SUCCESS)


class _Refused(AuthError):
    pass


class DeleteUserProcessor(_AuthAdmin):
    def answer(self, request: RemotingCommand, auth: AuthService) -> RemotingCommand:
        username = read_header(request, DeleteUserRequestHeader).username
        if not username or not username.strip():
            raise _Refused("username can not be blank")
        old = auth.metadata.user(username)
        if old is not None:
            if old.is_super and _not_super_login(request, auth):
                raise _Refused("The super user can only be update by super user")
            auth.metadata.delete_user(username)
        return request.make_response(ResponseCode.SUCCESS)


class GetUserProcessor(_AuthAdmin):
    def answer(self, request: RemotingCommand, auth: AuthService) -> RemotingCommand:
        username = read_header(request, GetUserRequestHeader).username
        if not username or not username.strip():
            return request.make_response(ResponseCode.INVALID_PARAMETER, USERNAME_BLANK)
        user = auth.metadata.user(username)
        response = request.make_response(ResponseCode.SUCCESS)
        if user is not None:
            response.body = _user_info(user).to_json()
        return response


class ListUsersProcessor(_AuthAdmin):
    def answer(self, request: RemotingCommand, auth: AuthService) -> RemotingCommand:
        users = auth.metadata.users(read_header(request, ListUsersRequestHeader).filter)
        response = request.make_response(ResponseCode.SUCCESS)
        if users:
            response.body = UserInfoList(items=[_user_info(u) for u in users]).to_json()
        return response


class CreateAclProcessor(_AuthAdmin):
    def answer(self, request: RemotingCommand, auth: AuthService) -> RemotingCommand:
        auth.metadata.put_acl(_acl_of(request, read_header(request, CreateAclRequestHeader).subject))
        return request.make_response(ResponseCode.SUCCESS)


class UpdateAclProcessor(_AuthAdmin):
    def answer(self, request: RemotingCommand, auth: AuthService) -> RemotingCommand:
        auth.metadata.put_acl(_acl_of(request, read_header(request, UpdateAclRequestHeader).subject))
        return request.make_response(ResponseCode.SUCCESS)


class DeleteAclProcessor(_AuthAdmin):
    def answer(self, request: RemotingCommand, auth: AuthService) -> RemotingCommand:
        header = read_header(request, DeleteAclRequestHeader)
        subject = canonical_subject(header.subject or "")
        if subject is None:
            raise _Refused("The subject is null.")
        resource = Resource.parse(header.resource)
        auth.metadata.delete_acl(subject, policy_type(header.policy_type) or "Custom", resource)
        return request.make_response(ResponseCode.SUCCESS)


class GetAclProcessor(_AuthAdmin):
    def answer(self, request: RemotingCommand, auth: AuthService) -> RemotingCommand:
        subject = canonical_subject(read_header(request, GetAclRequestHeader).subject or "")
        if subject is None:
            raise ValueError("the subject cannot be read")
        acl = auth.metadata.get_acl(subject)
        response = request.make_response(ResponseCode.SUCCESS)
        if acl is not None:
            response.body = _acl_info(acl).to_json()
        return response


class ListAclsProcessor(_AuthAdmin):
    def answer(self, request: RemotingCommand, auth: AuthService) -> RemotingCommand:
        header = read_header(request, ListAclsRequestHeader)
        acls = auth.metadata.acls(header.subject_filter, header.resource_filter)
        response = request.make_response(ResponseCode.SUCCESS)
        if acls:
            response.body = AclInfoList(items=[_acl_info(a) for a in acls]).to_json()
        return response
