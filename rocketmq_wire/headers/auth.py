"""Headers of the 5.x user and ACL administration requests (ACL 2.0, RequestCode.AUTH_* 3001-3010).

Each request names what it acts on in its header -- a username, an ACL subject (``User:alice``), or the
filters of a listing -- and, for create and update, carries the whole :mod:`user <rocketmq_wire.bodies.auth>`
or ACL as a JSON body. The broker takes the username or subject from the header, not from the body: a body
whose own name differs is stored under the header's.

No field is ``@CFNotNull`` in Apache's classes: the broker itself answers INVALID_PARAMETER ("The username is
blank") or NO_PERMISSION for what is missing, so nothing is refused while decoding here either. None of these
headers inherits the RPC fields (``bname`` and kin) other 5.x headers carry. Declared in Java's order; no two
of their keys share a bucket of a Java ``HashMap``, so the order never shows on the wire.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from rocketmq_wire.codes import RequestCode
from rocketmq_wire.headers.base import CommandHeader, jstr


@dataclasses.dataclass(slots=True, kw_only=True)
class CreateUserRequestHeader(CommandHeader):
    """AUTH_CREATE_USER: the new user's name; the body is its ``UserInfo``."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.AUTH_CREATE_USER,)

    username: str | None = jstr("username")


@dataclasses.dataclass(slots=True, kw_only=True)
class UpdateUserRequestHeader(CommandHeader):
    """AUTH_UPDATE_USER: the user to change; the body's non-null password, type and status replace its own."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.AUTH_UPDATE_USER,)

    username: str | None = jstr("username")


@dataclasses.dataclass(slots=True, kw_only=True)
class DeleteUserRequestHeader(CommandHeader):
    """AUTH_DELETE_USER: the user to remove (its ACL goes with it; an unknown name is not an error)."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.AUTH_DELETE_USER,)

    username: str | None = jstr("username")


@dataclasses.dataclass(slots=True, kw_only=True)
class GetUserRequestHeader(CommandHeader):
    """AUTH_GET_USER: one user, answered as a ``UserInfo`` body (no body when there is no such user)."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.AUTH_GET_USER,)

    username: str | None = jstr("username")


@dataclasses.dataclass(slots=True, kw_only=True)
class ListUsersRequestHeader(CommandHeader):
    """AUTH_LIST_USER: users whose name contains ``filter`` (all of them without one)."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.AUTH_LIST_USER,)

    filter: str | None = jstr("filter")


@dataclasses.dataclass(slots=True, kw_only=True)
class CreateAclRequestHeader(CommandHeader):
    """AUTH_CREATE_ACL: the subject (``User:alice``) whose policies the ``AclInfo`` body adds or replaces."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.AUTH_CREATE_ACL,)

    subject: str | None = jstr("subject")


@dataclasses.dataclass(slots=True, kw_only=True)
class UpdateAclRequestHeader(CommandHeader):
    """AUTH_UPDATE_ACL: as create (on 5.3.3 both merge the body's entries into the subject's ACL)."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.AUTH_UPDATE_ACL,)

    subject: str | None = jstr("subject")


@dataclasses.dataclass(slots=True, kw_only=True)
class DeleteAclRequestHeader(CommandHeader):
    """AUTH_DELETE_ACL: the subject's whole ACL, or with ``resource`` only that resource's entry.

    ``policyType`` picks the policy the entry is removed from (``Custom`` when left out; Apache's client
    never sends it).
    """

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.AUTH_DELETE_ACL,)

    subject: str | None = jstr("subject")
    policy_type: str | None = jstr("policyType")
    resource: str | None = jstr("resource")


@dataclasses.dataclass(slots=True, kw_only=True)
class GetAclRequestHeader(CommandHeader):
    """AUTH_GET_ACL: one subject's ACL, answered as an ``AclInfo`` body (no body when it has none)."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.AUTH_GET_ACL,)

    subject: str | None = jstr("subject")


@dataclasses.dataclass(slots=True, kw_only=True)
class ListAclsRequestHeader(CommandHeader):
    """AUTH_LIST_ACL: ACLs whose subject contains ``subjectFilter``; with ``resourceFilter`` only their
    entries whose resource contains it (ACLs left without one are not listed). Either may be left out."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.AUTH_LIST_ACL,)

    subject_filter: str | None = jstr("subjectFilter")
    resource_filter: str | None = jstr("resourceFilter")
