"""Users and ACLs of ACL 2.0, kept durably in one JSON file replaced atomically on every change.

Apache keeps them in two RocksDB stores under ``<storePathRootDir>/config``; here both live in
``<storePathRootDir>/config/auth.json``, written by write-then-rename with fsync (file and directory) before
a change is acknowledged: a change that could not be written is not made at all, in memory either, so the
broker never answers SUCCESS for what a restart would not read back. Listings run in key order, as RocksDB
iterates.

Apache's admin-facing rules live here too (its ``*MetadataManagerImpl``): validation and its remarks, a
user's ACL deleted with the user, create and update of an ACL merging into what exists.
"""

from __future__ import annotations

import copy
import json
import logging
from pathlib import Path
from typing import Any

from broker.auth.errors import AuthenticationError, AuthorizationError
from broker.auth.model import Acl, Pattern, Policy, PolicyEntry, Resource, User, valid_ip_or_cidr
from broker.store.atomic_file import write_atomically

log = logging.getLogger("broker.auth")

FILE_NAME = "auth.json"


def _user_doc(user: User) -> dict[str, Any]:
    return {
        "username": user.username,
        "password": user.password,
        "userType": user.user_type,
        "userStatus": user.user_status,
    }


def _acl_doc(acl: Acl) -> dict[str, Any]:
    return {
        "subject": acl.subject,
        "policies": [
            {
                "policyType": p.policy_type,
                "entries": [
                    {
                        "resource": e.resource.key,
                        "actions": list(e.actions),
                        "sourceIps": None if e.source_ips is None else list(e.source_ips),
                        "decision": e.decision,
                    }
                    for e in p.entries
                ],
            }
            for p in acl.policies
        ],
    }


def _read_acl(doc: dict[str, Any]) -> Acl:
    policies = []
    for p in doc["policies"]:
        entries = []
        for e in p["entries"]:
            resource = Resource.parse(e["resource"])
            if resource is None:
                raise ValueError(f"stored resource {e['resource']!r} cannot be read")
            entries.append(PolicyEntry(resource, list(e["actions"]), e["sourceIps"], e["decision"]))
        policies.append(Policy(p["policyType"], entries))
    return Acl(doc["subject"], policies)


class AuthMetadata:
    """The users and ACLs of one broker, and the changes Apache's admin requests make to them."""

    def __init__(self, config_dir: Path) -> None:
        self.path = Path(config_dir) / FILE_NAME
        self._users: dict[str, User] = {}
        self._acls: dict[str, Acl] = {}

    # -- durability -------------------------------------------------------------------------------------

    def load(self) -> None:
        """Read the file if there is one; a file that cannot be read stops the start (raises)."""
        if not self.path.exists():
            return
        doc = json.loads(self.path.read_bytes())
        self._users = {name: User(**_user_fields(u)) for name, u in doc.get("users", {}).items()}
        self._acls = {subject: _read_acl(a) for subject, a in doc.get("acls", {}).items()}
        log.info(
            "ACL 2.0 metadata loaded from %s: %d users, %d ACLs", self.path, len(self._users), len(self._acls)
        )

    def _save(self, users: dict[str, User], acls: dict[str, Acl]) -> None:
        """Write the new state, then make it current: nothing changes when the write fails."""
        doc = {
            "users": {name: _user_doc(users[name]) for name in sorted(users)},
            "acls": {subject: _acl_doc(acls[subject]) for subject in sorted(acls)},
        }
        write_atomically(self.path, json.dumps(doc, indent=1).encode())
        self._users, self._acls = users, acls

    def _copies(self) -> tuple[dict[str, User], dict[str, Acl]]:
        return copy.deepcopy(self._users), copy.deepcopy(self._acls)

    # -- users ------------------------------------------------------------------------------------------

    def user(self, username: str) -> User | None:
        return self._users.get(username)

    def users(self, name_filter: str | None) -> list[User]:
        return [
            self._users[name]
            for name in sorted(self._users)
            if not (name_filter and name_filter.strip()) or name_filter in name
        ]

    def ensure_user(self, user: User) -> None:
        """Create ``user`` unless one of that name exists (the initial and inner users at start-up)."""
        if user.username not in self._users:
            self.create_user(user)

    def create_user(self, user: User) -> None:
        _validate_user(user, creating=True)
        if user.user_type is None:
            user.user_type = "Normal"
        if user.user_status is None:
            user.user_status = "enable"
        if user.username in self._users:
            raise AuthenticationError("The user is existed")
        users, acls = self._copies()
        users[user.username] = user
        self._save(users, acls)

    def update_user(self, change: User) -> None:
        _validate_user(change, creating=False)
        users, acls = self._copies()
        old = users.get(change.username)
        if old is None:
            raise AuthenticationError("The user is not exist")
        if change.password and change.password.strip():
            old.password = change.password
        if change.user_type is not None:
            old.user_type = change.user_type
        if change.user_status is not None:
            old.user_status = change.user_status
        self._save(users, acls)

    def delete_user(self, username: str) -> None:
        """The user and its ACL go together."""
        if not username.strip():
            raise AuthenticationError("username can not be blank")
        users, acls = self._copies()
        users.pop(username, None)
        acls.pop(f"User:{username}", None)
        self._save(users, acls)

    # -- ACLs -------------------------------------------------------------------------------------------

    def acl(self, subject: str) -> Acl | None:
        return self._acls.get(subject)

    def _subject_exists(self, subject: str) -> bool:
        kind, _, name = subject.partition(":")
        return kind != "User" or name in self._users

    def put_acl(self, acl: Acl) -> None:
        """AUTH_CREATE_ACL and AUTH_UPDATE_ACL (the same on 5.3.3): validated, then merged into the
        subject's ACL (a new one when it has none)."""
        _validate_acl(acl)
        if not self._subject_exists(acl.subject):
            raise AuthorizationError(f"The subject of {acl.subject} is not exist.")
        users, acls = self._copies()
        old = acls.get(acl.subject)
        if old is None:
            acls[acl.subject] = acl
        else:
            old.merge(acl.policies)
        self._save(users, acls)

    def delete_acl(self, subject: str, policy_type: str, resource: Resource | None) -> None:
        """The whole ACL, or one resource's entry of one policy (the ACL goes when nothing is left)."""
        if not self._subject_exists(subject):
            raise AuthorizationError("The subject is not exist.")
        if subject not in self._acls:
            raise AuthorizationError("The acl is not exist.")
        users, acls = self._copies()
        if resource is not None:
            acls[subject].remove(policy_type, resource)
        if resource is None or not acls[subject].policies:
            del acls[subject]
        self._save(users, acls)

    def get_acl(self, subject: str) -> Acl | None:
        if not self._subject_exists(subject):
            raise AuthorizationError("The subject is not exist.")
        return self._acls.get(subject)

    def acls(self, subject_filter: str | None, resource_filter: str | None) -> list[Acl]:
        """Apache's listing: subjects containing the first filter; when the subject does not itself contain
        the resource filter, only entries whose resource does (policies and ACLs left empty drop out)."""
        found = []
        for subject in sorted(self._acls):
            if subject_filter and subject_filter.strip() and subject_filter not in subject:
                continue
            acl = copy.deepcopy(self._acls[subject])
            kept = []
            for policy in acl.policies:
                if resource_filter and resource_filter.strip() and resource_filter not in subject:
                    policy.entries = [e for e in policy.entries if resource_filter in e.resource.key]
                if policy.entries:
                    kept.append(policy)
            if kept:
                found.append(Acl(subject, kept))
        return found


def _user_fields(doc: dict[str, Any]) -> dict[str, Any]:
    return {
        "username": doc["username"],
        "password": doc.get("password"),
        "user_type": doc.get("userType"),
        "user_status": doc.get("userStatus"),
    }


def _validate_user(user: User, *, creating: bool) -> None:
    if not user.username.strip():
        raise AuthenticationError("username can not be blank")
    if creating and not (user.password and user.password.strip()):
        raise AuthenticationError("password can not be blank")


def _validate_acl(acl: Acl) -> None:
    if not acl.policies:
        raise AuthorizationError("The policies is empty.")
    for policy in acl.policies:
        if not policy.entries:
            raise AuthorizationError("The policy entries is empty.")
        for entry in policy.entries:
            _validate_entry(entry)


def _validate_entry(entry: PolicyEntry) -> None:
    if entry.resource.pattern not in (Pattern.ANY, Pattern.LITERAL, Pattern.PREFIXED):
        raise AuthorizationError("The resource pattern is null.")
    if not entry.actions:
        raise AuthorizationError("The actions is empty.")
    if "Any" in entry.actions:
        raise AuthorizationError("The actions can not be Any.")
    for ip in entry.source_ips or ():
        if not ip.strip():
            raise AuthorizationError("The source ip is empty.")
        if not valid_ip_or_cidr(ip):
            raise AuthorizationError("The source ip is invalid.")
    if entry.decision is None:
        raise AuthorizationError("The decision is null or illegal.")
