"""Bodies of the 5.x user and ACL administration (ACL 2.0): ``UserInfo``, ``AclInfo`` with its
``PolicyInfo`` and ``PolicyEntryInfo``, and the JSON arrays of them that the list requests answer.

Every value is a string on the wire, named as Apache's enums name themselves (``Normal``, ``enable``,
``Custom``, ``Pub``, ``Allow``); the broker matches those names without regard to case and drops or refuses
what it does not know, so the names are listed here once, for the tools that check their input before
sending. A resource is ``Type:name`` (``Topic:Orders``), ``Type:prefix*`` (a prefix), ``Type:*`` or ``*``
(anything); a subject is ``User:name``.

The broker answers a read of a missing user or ACL, and a listing that found nothing, with SUCCESS and no
body at all; the admin functions turn that into ``None`` / ``[]``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar, Generic, Self, TypeVar

from rocketmq_wire import fastjson
from rocketmq_wire.bodies.base import Fields, JsonBody, array_of, bean, object_fields, string_list
from rocketmq_wire.errors import CodecError

#: ``UserType`` names: a super user passes every authorization check; only one may create another.
USER_TYPES: tuple[str, ...] = ("Super", "Normal")
#: ``UserStatus`` names: a disabled user is refused at authentication.
USER_STATUSES: tuple[str, ...] = ("enable", "disable")
#: ``SubjectType`` names: the part of a subject before its colon.
SUBJECT_TYPES: tuple[str, ...] = ("User",)
#: ``ResourceType`` names an ACL entry may name (``Any`` is written ``*``).
RESOURCE_TYPES: tuple[str, ...] = ("Cluster", "Namespace", "Topic", "Group")
#: ``Action`` names an ACL entry may grant or deny (the broker refuses ``Any`` and skips unknown names).
ACTIONS: tuple[str, ...] = ("All", "Pub", "Sub", "Create", "Update", "Delete", "Get", "List")
#: ``Decision`` names.
DECISIONS: tuple[str, ...] = ("Allow", "Deny")
#: ``PolicyType`` names: what mqadmin and this project write is ``Custom`` (the broker's default too).
POLICY_TYPES: tuple[str, ...] = ("Custom", "Default")
#: What a resource of every type and name is written as.
ANY_RESOURCE = "*"


def canonical_name(text: str, names: Sequence[str]) -> str | None:
    """``text`` as spelled in ``names`` when it is one of them but for case (the broker's ``getByName``
    ignores case), else ``None``."""
    wanted = text.strip().lower()
    return next((name for name in names if name.lower() == wanted), None)


def canonical_subject(text: str) -> str | None:
    """``User:name`` with the type spelled as Apache spells it; ``None`` for anything the broker could not
    read as a subject (it would fail inside, answering SYSTEM_ERROR)."""
    kind, colon, name = text.strip().partition(":")
    found = canonical_name(kind, SUBJECT_TYPES)
    if found is None or not colon or not name.strip():
        return None
    return f"{found}:{name.strip()}"


def canonical_resource(text: str) -> str | None:
    """A resource with its type spelled as Apache spells it: ``*``, ``Type:*``, ``Type:prefix*`` or
    ``Type:name``; ``None`` for anything else (the broker would refuse it: "The resource is null.")."""
    value = text.strip()
    if value == ANY_RESOURCE:
        return value
    kind, colon, name = value.partition(":")
    found = canonical_name(kind, RESOURCE_TYPES)
    if found is None or not colon or not name.strip():
        return None
    return f"{found}:{name.strip()}"


def _strings(obj: Fields, name: str) -> list[str] | None:
    values = obj.get_array(name)
    return None if values is None else string_list(values, f"{obj.path}.{name}")


def _copy(values: Sequence[str] | None) -> list[fastjson.JsonValue] | None:
    return None if values is None else list(values)


@dataclasses.dataclass(kw_only=True)
class UserInfo(JsonBody):
    """One user as Apache's ``UserInfo``: what create and update send and get/list answer.

    ``password`` travels in clear in both directions (it is the secret the user signs with), so reads
    give it back too, as mqadmin's ``getUser`` shows it.
    """

    username: str | None = None
    password: str | None = None
    user_type: str | None = None
    user_status: str | None = None

    def to_bean(self) -> fastjson.Bean:
        return bean(
            username=self.username,
            password=self.password,
            userType=self.user_type,
            userStatus=self.user_status,
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(
            username=obj.get_str("username"),
            password=obj.get_str("password"),
            user_type=obj.get_str("userType"),
            user_status=obj.get_str("userStatus"),
        )


@dataclasses.dataclass(kw_only=True)
class PolicyEntryInfo(JsonBody):
    """One entry of a policy: a resource, the actions on it, from which addresses, allowed or denied.

    ``source_ips`` (addresses or CIDR blocks) left out means from anywhere.
    """

    resource: str | None = None
    actions: list[str] | None = None
    source_ips: list[str] | None = None
    decision: str | None = None

    def to_bean(self) -> fastjson.Bean:
        return bean(
            resource=self.resource,
            actions=_copy(self.actions),
            sourceIps=_copy(self.source_ips),
            decision=self.decision,
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(
            resource=obj.get_str("resource"),
            actions=_strings(obj, "actions"),
            source_ips=_strings(obj, "sourceIps"),
            decision=obj.get_str("decision"),
        )


def _entry(value: Any, path: str) -> PolicyEntryInfo:
    return PolicyEntryInfo.from_object(object_fields(value, path))


@dataclasses.dataclass(kw_only=True)
class PolicyInfo(JsonBody):
    """A policy: its type (``Custom`` unless said otherwise) and entries."""

    policy_type: str | None = None
    entries: list[PolicyEntryInfo] | None = None

    def to_bean(self) -> fastjson.Bean:
        return bean(
            policyType=self.policy_type,
            entries=None if self.entries is None else [entry.to_bean() for entry in self.entries],
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(policy_type=obj.get_str("policyType"), entries=obj.items_of("entries", _entry))


def _policy(value: Any, path: str) -> PolicyInfo:
    return PolicyInfo.from_object(object_fields(value, path))


@dataclasses.dataclass(kw_only=True)
class AclInfo(JsonBody):
    """A subject's ACL as Apache's ``AclInfo``: what create and update send and get/list answer."""

    subject: str | None = None
    policies: list[PolicyInfo] | None = None

    @classmethod
    def of(
        cls,
        subject: str,
        resources: Sequence[str],
        actions: Sequence[str],
        source_ips: Sequence[str] | None,
        decision: str,
    ) -> Self:
        """One policy (type left to the broker) with one entry per resource, each with the same actions,
        addresses and decision: the body mqadmin's ``createAcl``/``updateAcl`` send."""
        entries = [
            PolicyEntryInfo(
                resource=resource,
                actions=list(actions),
                source_ips=None if source_ips is None else list(source_ips),
                decision=decision,
            )
            for resource in resources
        ]
        return cls(subject=subject, policies=[PolicyInfo(entries=entries)])

    def to_bean(self) -> fastjson.Bean:
        return bean(
            subject=self.subject,
            policies=None if self.policies is None else [policy.to_bean() for policy in self.policies],
        )

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        return cls(subject=obj.get_str("subject"), policies=obj.items_of("policies", _policy))


E = TypeVar("E", bound=JsonBody)


@dataclasses.dataclass(kw_only=True)
class _JsonArrayBody(JsonBody, Generic[E]):
    """A body that is a bare JSON array of beans (Java's ``JSON.toJSONString(list)``), not an object.

    It has no bean of its own, so :meth:`to_json` and :meth:`from_json` write and read the array directly;
    :meth:`to_bean` and :meth:`from_object` refuse, saying so.
    """

    ITEM: ClassVar[type[JsonBody]]

    items: list[E] = dataclasses.field(default_factory=list)

    def to_json(self) -> bytes:
        return fastjson.dump_bytes([item.to_bean() for item in self.items])

    @classmethod
    def from_json(cls, data: bytes | bytearray | memoryview | str) -> Self:
        where = cls.__name__
        parsed = fastjson.loads(data)
        if parsed is None:  # fastjson reads "null" as a null list
            return cls()
        read = cls.ITEM.from_object
        items: list[Any] = array_of(parsed, where, lambda value, path: read(object_fields(value, path)))
        return cls(items=items)

    def to_bean(self) -> fastjson.Bean:
        raise TypeError(f"{type(self).__name__} is a JSON array, not a bean: use to_json()")

    @classmethod
    def from_object(cls, obj: Fields) -> Self:
        raise CodecError(f"{obj.path}: {cls.__name__} is a JSON array, not an object")


@dataclasses.dataclass(kw_only=True)
class UserInfoList(_JsonArrayBody[UserInfo]):
    """The answer to AUTH_LIST_USER: ``List<UserInfo>``."""

    ITEM: ClassVar[type[JsonBody]] = UserInfo


@dataclasses.dataclass(kw_only=True)
class AclInfoList(_JsonArrayBody[AclInfo]):
    """The answer to AUTH_LIST_ACL: ``List<AclInfo>``."""

    ITEM: ClassVar[type[JsonBody]] = AclInfo
