"""The compiled ACL rules and the check every request goes through, in Apache 4.9.8's order.

For a request from ``host``:

1. a global white address matching ``host`` lets it through -- no key, no signature needed;
2. otherwise it must name an ``AccessKey`` the file knows;
3. the account's own ``whiteRemoteAddress`` matching ``host`` lets it through -- the signature and the
   topic/group permissions are then *not* checked (Apache's behaviour: a white-listed account host is
   trusted outright);
4. the ``Signature`` must be the one the account's secret gives;
5. a publish to ``RMQ_SYS_TRACE_TOPIC`` (message traces) is let through;
6. an admin-only request code needs ``admin: true``: Apache's five admin codes, and here also the ACL
   administration codes that change the file or read secrets (50, 51, 53, 54) -- Apache 4.9.x lets *any*
   signed account create accounts, admin ones included, which this broker does not. Then every topic and
   group the request needs must be allowed by the account's explicit permission for it, else by its
   default topic or group permission.
   An admin account with no explicit permissions at all may do anything; one with some is checked like
   any other.

Each refusal is an :class:`AclError` with Apache's message and the Java frame Apache's broker names.
"""

from __future__ import annotations

import dataclasses
import logging

from broker.acl.addresses import AddressPattern, compile_pattern, host_of
from broker.acl.errors import AclError
from broker.acl.permission import ADMIN_CODES, PUB, check_permission, parse_perm, split_resource_perm
from broker.acl.plain_file import AccountConfig, PlainAclFile
from broker.acl.resources import Needs, needs_of, signed_fields
from rocketmq_wire.acl import ACCESS_KEY, SIGNATURE, signature_of
from rocketmq_wire.bodies.java_collections import HASH_MAP, insertion_order, string_hash
from rocketmq_wire.codes import RequestCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.topics import TRACE_TOPIC, is_retry_topic, retry_topic

log = logging.getLogger("broker.acl")

_MANAGER = "org.apache.rocketmq.acl.plain.PlainPermissionManager"
_VALIDATE_NO_KEY = f"{_MANAGER}.validate(PlainPermissionManager.java:664)"
_VALIDATE_UNKNOWN_KEY = f"{_MANAGER}.validate(PlainPermissionManager.java:668)"
_VALIDATE_SIGNATURE = f"{_MANAGER}.validate(PlainPermissionManager.java:684)"
_CHECK_ADMIN = f"{_MANAGER}.checkPerm(PlainPermissionManager.java:581)"
_CHECK_DEFAULT = f"{_MANAGER}.checkPerm(PlainPermissionManager.java:606)"
_CHECK_OWNED = f"{_MANAGER}.checkPerm(PlainPermissionManager.java:611)"

#: The codes only admin accounts may send here: Apache's, plus ACL administration (a deliberate difference,
#: see the module text).
ADMIN_ONLY_CODES: frozenset[int] = ADMIN_CODES | {
    RequestCode.UPDATE_AND_CREATE_ACL_CONFIG,
    RequestCode.DELETE_ACL_CONFIG,
    RequestCode.UPDATE_GLOBAL_WHITE_ADDRS_CONFIG,
    RequestCode.GET_BROKER_CLUSTER_ACL_CONFIG,
}


@dataclasses.dataclass(frozen=True, slots=True)
class Account:
    """One account, compiled: patterns parsed and permission words turned into bits.

    ``perms`` maps topics, and groups as ``%RETRY%group``, to their explicit permission; ``None`` when
    the account lists none (which is what lets an admin account through everything).
    """

    access_key: str
    secret_key: str
    white: AddressPattern
    admin: bool
    default_topic_perm: int
    default_group_perm: int
    perms: dict[str, int] | None

    @classmethod
    def compile(cls, config: AccountConfig) -> Account:
        config.check_keys()
        assert config.access_key is not None and config.secret_key is not None
        perms: dict[str, int] = {}
        for entry in config.group_perms or ():
            group, perm = split_resource_perm(entry, "group")
            perms[retry_topic(group)] = perm
        for entry in config.topic_perms or ():
            topic, perm = split_resource_perm(entry, "topic")
            perms[topic] = perm
        return cls(
            access_key=config.access_key,
            secret_key=config.secret_key,
            white=compile_pattern(config.white_remote_address),
            admin=config.admin,
            default_topic_perm=parse_perm(config.default_topic_perm),
            default_group_perm=parse_perm(config.default_group_perm),
            perms=perms or None,
        )


def _printable(resource: str) -> str:
    if is_retry_topic(resource):
        return f"group:{resource[len('%RETRY%') :]}"
    return f"topic:{resource}"


@dataclasses.dataclass(frozen=True, slots=True)
class AclRules:
    """Everything a check needs, immutable: a reload builds a new one and swaps it in whole."""

    global_white: tuple[AddressPattern, ...] = ()
    accounts: dict[str, Account] = dataclasses.field(default_factory=dict)

    @classmethod
    def compile(cls, parsed: PlainAclFile) -> AclRules:
        """Compile a parsed file; a bad pattern, key or permission entry raises :class:`AclError`."""
        white = tuple(compile_pattern(text) for text in parsed.global_white_addresses)
        accounts: dict[str, Account] = {}
        for config in parsed.accounts:
            account = Account.compile(config)
            if account.access_key in accounts:
                log.warning("access key %s is defined twice; the first definition counts", account.access_key)
                continue
            accounts[account.access_key] = account
        return cls(white, accounts)

    def check(self, request: RemotingCommand, remote_address: str) -> None:
        """Let ``request`` from ``remote_address`` (``ip:port``) through, or raise :class:`AclError`."""
        host = host_of(remote_address)
        fields = request.fields()
        # Apache reads nothing of a request without ext fields (an unsigned heartbeat, say): it can only
        # pass through the global white list, which does not look at what it needs.
        needs = needs_of(request, fields) if fields else {}
        if any(pattern.matches(host) for pattern in self.global_white):
            return
        access_key = fields.get(ACCESS_KEY)
        if access_key is None:
            raise AclError("No accessKey is configured", _VALIDATE_NO_KEY)
        account = self.accounts.get(access_key)
        if account is None:
            raise AclError(f"No acl config for {access_key}", _VALIDATE_UNKNOWN_KEY)
        if account.white.matches(host):
            return
        expected = signature_of(signed_fields(fields), request.body, account.secret_key)
        if fields.get(SIGNATURE) != expected:
            raise AclError(f"Check signature failed for accessKey={access_key}", _VALIDATE_SIGNATURE)
        if needs.get(TRACE_TOPIC) == PUB:
            return
        self._check_perms(request.code, needs, account)

    @staticmethod
    def _check_perms(code: int, needs: Needs, account: Account) -> None:
        if code in ADMIN_ONLY_CODES and not account.admin:
            raise AclError(
                f"Need admin permission for request code={code}, but accessKey={account.access_key} is not",
                _CHECK_ADMIN,
            )
        if not needs or (account.perms is None and account.admin):
            return
        owned = account.perms or {}
        # Apache walks its HashMap of needs: the first refused resource in that order is the one named.
        for resource in insertion_order(list(needs), string_hash, HASH_MAP):
            needed = needs[resource]
            explicit = owned.get(resource)
            if explicit is None:
                fallback = (
                    account.default_group_perm if is_retry_topic(resource) else account.default_topic_perm
                )
                if not check_permission(needed, fallback):
                    raise AclError(f"No default permission for {_printable(resource)}", _CHECK_DEFAULT)
            elif not check_permission(needed, explicit):
                raise AclError(f"No default permission for {_printable(resource)}", _CHECK_OWNED)
