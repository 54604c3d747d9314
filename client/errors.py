"""The failures of the client core, under one root every client role shares.

Producer, consumer and admin errors derive from :class:`ClientError` too, so code that talks to a cluster
through several roles can catch one class; the core itself only raises the few below, and each role turns
them into its own errors where its users expect those (a producer's send raises ``ProducerError``).
"""

from __future__ import annotations

from rocketmq_wire.codes import MQVersion


class ClientError(Exception):
    """Base of every failure raised by a client of this project (producer, consumer, admin, core)."""


class ClientStateError(ClientError):
    """The client instance is closed, or refused a member."""


class DuplicateGroupError(ClientStateError):
    """A second producer (or consumer) of one group on one client instance; Java refuses it too."""


class NameServerError(ClientError):
    """No NameServer answered, or one answered with something unreadable."""


class RouteRefusedError(NameServerError):
    """A NameServer answered a route request with a failure code (not just "no such topic")."""


class BrokerVersionError(ClientError):
    """A feature the broker's release does not have (a timer message to a 4.x broker, say), refused before
    anything was sent: an older broker would take the request and quietly ignore what it cannot read."""

    def __init__(self, feature: str, addr: str, broker_version: str, needed: str) -> None:
        super().__init__(f"{feature} needs a {needed} broker; {addr} is {broker_version}")
        self.feature = feature
        self.addr = addr
        self.broker_version = broker_version
        self.needed = needed

    @classmethod
    def check(cls, feature: str, addr: str, version: int, minimum: int) -> None:
        """Raise (this class: each role has its own) unless ``version`` is ``minimum`` or later, both
        ``MQVersion`` numbers."""
        if version < minimum:
            raise cls(feature, addr, MQVersion.name_of(version), MQVersion.name_of(minimum) + " or later")
