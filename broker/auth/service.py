"""ACL 2.0's two checks on every request, in Apache 5.3.3's order: authentication, then authorization.

Authentication reads the ``AccessKey`` and ``Signature`` a client's RPC hook adds, finds the user and
recomputes the HMAC over the same content the client signed. Authorization finds what the request needs
(:mod:`broker.auth.request_resources`) and lets a super user through; anyone else needs, for every
resource, an ALLOW entry deciding the match (:func:`broker.auth.model.deciding_entry`). Codes listed in
``authenticationWhitelist`` / ``authorizationWhitelist`` skip the check concerned.
"""

from __future__ import annotations

import hmac
import json
import logging

from broker.auth.errors import AuthenticationError, AuthError, AuthorizationError
from broker.auth.metadata import AuthMetadata
from broker.auth.model import User, deciding_entry
from broker.auth.request_resources import Need, needs
from broker.config import BrokerConfig
from rocketmq_wire import RemotingCommand
from rocketmq_wire.acl import ACCESS_KEY, SIGNATURE, signature_of
from rocketmq_wire.codes import MQVersion
from rocketmq_wire.headers.query import UNIQUE_KEY_QUERY

log = logging.getLogger("broker.auth")

#: Up to this client version Apache leaves ``_UNIQUE_KEY_QUERY`` out of the signed content.
_UNIQUE_KEY_UNSIGNED_UP_TO = MQVersion.value_of("V4_9_3")


def _codes(text: str | None) -> frozenset[str]:
    return frozenset(part.strip() for part in (text or "").split(",") if part.strip())


class AuthService:
    """The users, ACLs and both checks of one broker (``authenticationEnabled``/``authorizationEnabled``)."""

    def __init__(self, config: BrokerConfig, metadata: AuthMetadata) -> None:
        self.config = config
        self.metadata = metadata
        self._authn_whitelist = _codes(config.authentication_whitelist)
        self._authz_whitelist = _codes(config.authorization_whitelist)

    @property
    def enabled(self) -> bool:
        return self.config.authentication_enabled or self.config.authorization_enabled

    def start(self) -> None:
        """Read the stored users and ACLs; create the initial and inner users (both super) if missing."""
        self.metadata.load()
        if self.config.init_authentication_user:
            doc = json.loads(self.config.init_authentication_user)
            self.metadata.ensure_user(User(str(doc["username"]), doc.get("password"), "Super", None))
        if self.config.inner_client_authentication_credentials:
            doc = json.loads(self.config.inner_client_authentication_credentials)
            self.metadata.ensure_user(User(str(doc["accessKey"]), doc.get("secretKey"), "Super", None))

    # -- the checks -------------------------------------------------------------------------------------

    def check(self, request: RemotingCommand, remote_address: str) -> None:
        """Raise :class:`AuthError` (its text is the remark) unless ``request`` may go to its handler."""
        code = str(request.code)
        if self.config.authentication_enabled and code not in self._authn_whitelist:
            self.authenticate(request)
        if self.config.authorization_enabled and code not in self._authz_whitelist:
            self.authorize(request, remote_address)

    def authenticate(self, request: RemotingCommand) -> None:
        fields = request.fields()
        username = fields.get(ACCESS_KEY)
        if not username:
            raise AuthenticationError("username cannot be null.")
        user = self.metadata.user(username)
        if user is None:
            raise AuthenticationError(f"User:{username} is not found.")
        if user.is_disabled:
            raise AuthenticationError(f"User:{username} is disabled.")
        signed = {
            key: value
            for key, value in fields.items()
            if key != SIGNATURE
            and not (key == UNIQUE_KEY_QUERY and request.version <= _UNIQUE_KEY_UNSIGNED_UP_TO)
        }
        expected = signature_of(signed, request.body or b"", user.password or "")
        given = fields.get(SIGNATURE)
        if given is None or not hmac.compare_digest(expected.encode(), given.encode()):
            raise AuthenticationError("check signature failed.")

    def authorize(self, request: RemotingCommand, remote_address: str) -> None:
        wanted = needs(request, self.config.broker_cluster_name)
        if not wanted:
            return
        username = request.fields().get(ACCESS_KEY)
        if username is None:
            raise AuthorizationError("Authorization failed. Please verify your access rights and try again.")
        source_ip = remote_address.rpartition(":")[0] if ":" in remote_address else remote_address
        for need in wanted:
            self._authorize_one(username, need, source_ip)

    def _authorize_one(self, username: str, need: Need, source_ip: str) -> None:
        user = self.metadata.user(username)
        if user is None:
            raise AuthorizationError(f"User:{username} not found.")
        if user.is_super:
            return
        subject = f"User:{username}"
        where = f"{subject} has no permission to access {need.resource.key} from {source_ip}, "
        acl = self.metadata.acl(subject)
        entry = None if acl is None else deciding_entry(acl, need.resource, need.actions, source_ip)
        if entry is None:
            raise AuthorizationError(where + "no matched policies.")
        if entry.decision == "Deny":
            raise AuthorizationError(where + "the decision is deny.")

    def is_super(self, username: str) -> bool:
        user = self.metadata.user(username)
        if user is None:
            raise AuthenticationError(f"User:{username} is not found")
        return user.is_super


__all__ = ["AuthError", "AuthService"]
