"""Users and ACL policies as Apache 5.3's ``auth`` module models them, and how a policy entry matches.

A resource is ``*`` (anything), ``Type:*`` (every resource of a type), ``Type:prefix*`` or ``Type:name``;
an entry grants or denies a list of actions on one resource, optionally only from some source addresses.
Names of enums are matched without regard to case (Apache's ``getByName``) and written as Apache spells
them, so what is stored reads back exactly as mqadmin shows it.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import ipaddress
from collections.abc import Sequence

from rocketmq_wire.bodies.auth import ACTIONS, DECISIONS, POLICY_TYPES, USER_STATUSES, USER_TYPES

RETRY_PREFIX = "%RETRY%"
DLQ_PREFIX = "%DLQ%"


def _by_name(text: str | None, names: Sequence[str]) -> str | None:
    if text is None:
        return None
    wanted = text.strip().lower()
    return next((name for name in names if name.lower() == wanted), None)


def user_type(text: str | None) -> str | None:
    return _by_name(text, USER_TYPES)


def user_status(text: str | None) -> str | None:
    return _by_name(text, USER_STATUSES)


def action(text: str | None) -> str | None:
    """An action's canonical name; ``Any`` is a name the policy model knows (and refuses in an entry)."""
    return _by_name(text, (*ACTIONS, "Any"))


def decision(text: str | None) -> str | None:
    return _by_name(text, DECISIONS)


def policy_type(text: str | None) -> str | None:
    return _by_name(text, POLICY_TYPES)


@dataclasses.dataclass(slots=True)
class User:
    username: str
    password: str | None = None
    user_type: str | None = None
    user_status: str | None = None

    @property
    def is_super(self) -> bool:
        return self.user_type == "Super"

    @property
    def is_disabled(self) -> bool:
        return self.user_status == "disable"


class Pattern(enum.Enum):
    LITERAL = "literal"
    PREFIXED = "prefixed"
    ANY = "any"


RESOURCE_TYPES = ("Cluster", "Namespace", "Topic", "Group")


@dataclasses.dataclass(frozen=True, slots=True)
class Resource:
    """``kind`` is ``Any`` for ``*``; ``name`` is the literal name or the prefix, ``None`` for ANY."""

    kind: str
    name: str | None
    pattern: Pattern

    @classmethod
    def parse(cls, key: str | None) -> Resource | None:
        """Apache's ``Resource.of(String)``: ``None`` for blank text or an unknown type."""
        if key is None or not key.strip():
            return None
        if key == "*":
            return cls("Any", None, Pattern.ANY)
        kind_text, _, name = key.partition(":")
        kind = _by_name(kind_text, RESOURCE_TYPES)
        if kind is None:
            return None
        if name == "*":
            return cls(kind, None, Pattern.ANY)
        if name.endswith("*"):
            return cls(kind, name[: name.index("*")], Pattern.PREFIXED)
        return cls(kind, name, Pattern.LITERAL)

    @classmethod
    def topic(cls, name: str) -> Resource:
        return cls("Topic", name, Pattern.LITERAL)

    @classmethod
    def group(cls, name: str) -> Resource:
        """A group; a retry topic's name stands for its group (Apache strips the retry and DLQ marks)."""
        if name.startswith(RETRY_PREFIX):
            name = name[len(RETRY_PREFIX) :]
            if name.startswith(DLQ_PREFIX):
                name = name[len(DLQ_PREFIX) :]
        return cls("Group", name, Pattern.LITERAL)

    @classmethod
    def cluster(cls, name: str) -> Resource:
        return cls("Cluster", name, Pattern.LITERAL)

    @property
    def key(self) -> str:
        if self.kind == "Any":
            return "*"
        if self.pattern is Pattern.ANY:
            return f"{self.kind}:*"
        if self.pattern is Pattern.PREFIXED:
            return f"{self.kind}:{self.name}*"
        return f"{self.kind}:{self.name}"

    def matches(self, wanted: Resource) -> bool:
        if self.kind == "Any":
            return True
        if self.kind != wanted.kind:
            return False
        if self.pattern is Pattern.ANY:
            return True
        if self.pattern is Pattern.LITERAL:
            return wanted.name == self.name
        return wanted.name is not None and self.name is not None and wanted.name.startswith(self.name)


def ip_in_range(ip: str, allowed: str) -> bool:
    """Whether ``ip`` is ``allowed`` (an address) or inside it (a CIDR block); garbage matches nothing."""
    try:
        address = ipaddress.ip_address(ip)
        if "/" in allowed:
            return address in ipaddress.ip_network(allowed, strict=False)
        return address == ipaddress.ip_address(allowed)
    except ValueError:
        return False


def valid_ip_or_cidr(text: str) -> bool:
    try:
        if "/" in text:
            ipaddress.ip_network(text, strict=False)
        else:
            ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


@dataclasses.dataclass(slots=True)
class PolicyEntry:
    resource: Resource
    actions: list[str]
    source_ips: list[str] | None
    decision: str | None

    def matches(self, wanted: Resource, actions: Sequence[str], source_ip: str | None) -> bool:
        if not self.resource.matches(wanted) or not self.actions:
            return False
        if "Any" not in actions and not any(a in self.actions or "All" in self.actions for a in actions):
            return False
        if not self.source_ips:
            return True
        if not source_ip:
            return False
        return any(ip_in_range(source_ip, allowed) for allowed in self.source_ips)


@dataclasses.dataclass(slots=True)
class Policy:
    policy_type: str
    entries: list[PolicyEntry]

    def entry_for(self, resource: Resource) -> PolicyEntry | None:
        return next((e for e in self.entries if e.resource == resource), None)

    def merge(self, entries: Sequence[PolicyEntry]) -> None:
        """A new resource's entry is appended; an existing one takes the new actions, addresses, decision."""
        for new in entries:
            old = self.entry_for(new.resource)
            if old is None:
                self.entries.append(new)
            else:
                old.actions, old.source_ips, old.decision = new.actions, new.source_ips, new.decision


@dataclasses.dataclass(slots=True)
class Acl:
    subject: str
    policies: list[Policy]

    def policy(self, kind: str) -> Policy | None:
        return next((p for p in self.policies if p.policy_type == kind), None)

    def merge(self, policies: Sequence[Policy]) -> None:
        for new in policies:
            old = self.policy(new.policy_type)
            if old is None:
                self.policies.append(new)
            else:
                old.merge(new.entries)

    def remove(self, kind: str, resource: Resource) -> None:
        found = self.policy(kind)
        if found is None:
            return
        entry = found.entry_for(resource)
        if entry is not None:
            found.entries.remove(entry)
        if not found.entries:
            self.policies.remove(found)


def compare_entries(first: PolicyEntry, second: PolicyEntry) -> int:
    """Apache 5.3.3's order of matched entries, kept as it is, quirks included, because the first entry
    after sorting decides: an entry on ``*`` goes after a typed one; of two prefixes the SHORTER goes
    first; of two different patterns the first of the pair goes first unless it is an ANY pattern; at equal
    rank an ALLOW goes before a DENY (Apache's comment says the opposite; its code does this)."""
    r1, r2 = first.resource, second.resource
    compare = 0
    if r1.kind != r2.kind:
        if r1.kind == "Any":
            compare = 1
        if r2.kind == "Any":
            compare = -1
    elif r1.pattern is r2.pattern:
        if r1.pattern is Pattern.PREFIXED:
            n1, n2 = len(r1.name or ""), len(r2.name or "")
            compare = (n1 > n2) - (n1 < n2)
    elif r1.pattern is not Pattern.ANY:
        compare = -1
    if compare:
        return compare
    if first.decision == "Deny":
        return 1
    return -1 if second.decision == "Deny" else 0


def deciding_entry(
    acl: Acl, wanted: Resource, actions: Sequence[str], source_ip: str | None
) -> PolicyEntry | None:
    """The entry that decides a request: matches in the Custom policy, else in the Default one, ordered."""
    for kind in ("Custom", "Default"):
        found = acl.policy(kind)
        if found is None:
            continue
        matched = [e for e in found.entries if e.matches(wanted, actions, source_ip)]
        if matched:
            return sorted(matched, key=functools.cmp_to_key(compare_entries))[0]
    return None
