"""The broker's own requests to other brokers (a slave syncing from its master) signed as Apache signs them:
with ``innerClientAuthenticationCredentials``, the user every ACL 2.0 broker of the cluster creates as a
super user, so a master with authentication on still serves its slaves."""

from __future__ import annotations

import json
import logging

from broker.config import BrokerConfig
from rocketmq_wire.acl import AclCredentials

log = logging.getLogger("broker.auth")


def inner_credentials(config: BrokerConfig) -> AclCredentials | None:
    """The credentials to sign with, or ``None`` when none are set (or the setting cannot be read)."""
    text = config.inner_client_authentication_credentials
    if not text:
        return None
    try:
        doc = json.loads(text)
        return AclCredentials(str(doc["accessKey"]), str(doc["secretKey"]))
    except (ValueError, KeyError, TypeError) as exc:
        log.error("innerClientAuthenticationCredentials cannot be read (%s): requests go unsigned", exc)
        return None
