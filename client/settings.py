"""What a client instance and its members need to know to talk to a cluster, whatever role they play.

Producers, consumers, the admin and the Spark source used to describe this through a ``ProducerConfig``
built just for the purpose; each role now derives one :class:`ClientSettings` from its own configuration
(``ProducerConfig.client_settings()``, ``ConsumerConfig.client_settings()``, ``admin.rpc.admin_settings``), so
the core never depends on any role's options.
"""

from __future__ import annotations

import dataclasses
import ssl as ssl_module
from typing import Protocol

from rocketmq_wire.acl import AclCredentials
from rocketmq_wire.codes import SerializeType
from rocketmq_wire.command import DEFAULT_VERSION

#: Java's ``pollNameServerInterval`` and ``heartbeatBrokerInterval``.
DEFAULT_POLL_NAMESRV_INTERVAL_MS = 30_000.0
DEFAULT_HEARTBEAT_INTERVAL_MS = 30_000.0
#: Java waits 3 s for a NameServer, and for the small requests a client instance sends brokers.
DEFAULT_REQUEST_TIMEOUT_MS = 3000.0


class ClientOptions(Protocol):
    """What a role's configuration (``ProducerConfig``, ``ConsumerConfig``) holds of the client's settings,
    under the same names."""

    @property
    def access_key(self) -> str | None: ...
    @property
    def secret_key(self) -> str | None: ...
    @property
    def security_token(self) -> str | None: ...
    @property
    def ssl(self) -> ssl_module.SSLContext | None: ...
    @property
    def serialize_type(self) -> SerializeType: ...
    @property
    def version(self) -> int: ...
    @property
    def instance_name(self) -> str | None: ...
    @property
    def client_ip(self) -> str | None: ...
    @property
    def heartbeat_interval_ms(self) -> float: ...
    @property
    def poll_namesrv_interval_ms(self) -> float: ...


@dataclasses.dataclass(frozen=True, kw_only=True)
class ClientSettings:
    """Credentials, TLS, header format, identity, timeouts and timer periods of one client.

    A client instance takes the settings of the member that creates it for its own requests (heartbeats,
    route look-ups, unregistration), its connections and its timers, as Java clones the first client
    config; every member still stamps and signs its own requests with its own settings.
    """

    #: ACL credentials; requests are signed when both keys are set.
    access_key: str | None = None
    secret_key: str | None = None
    security_token: str | None = None
    #: TLS for every connection (NameServers and brokers) when given.
    ssl: ssl_module.SSLContext | None = None
    #: Header serialization of every request: JSON (Java's default) or the binary ROCKETMQ one.
    serialize_type: SerializeType = SerializeType.JSON
    #: The ``version`` announced in every command; 409 is Apache 4.9.8.
    version: int = DEFAULT_VERSION
    #: Java's ``instanceName``; ``None`` lets the member pick its default.
    instance_name: str | None = None
    #: The address put in the client id; the local one when unset.
    client_ip: str | None = None
    #: How long heartbeats and unregistration wait for a broker's answer.
    request_timeout_ms: float = DEFAULT_REQUEST_TIMEOUT_MS
    #: How long one request to a NameServer waits before the next NameServer is tried.
    namesrv_timeout_ms: float = DEFAULT_REQUEST_TIMEOUT_MS
    heartbeat_interval_ms: float = DEFAULT_HEARTBEAT_INTERVAL_MS
    poll_namesrv_interval_ms: float = DEFAULT_POLL_NAMESRV_INTERVAL_MS

    def __post_init__(self) -> None:
        if (self.access_key is None) != (self.secret_key is None):
            raise ValueError("access_key and secret_key go together")

    def credentials(self) -> AclCredentials | None:
        """The signing credentials, or ``None`` when requests go unsigned."""
        if self.access_key is None or self.secret_key is None:
            return None
        return AclCredentials(self.access_key, self.secret_key, self.security_token)

    @classmethod
    def of(
        cls, options: ClientOptions, *, request_timeout_ms: float, namesrv_timeout_ms: float
    ) -> ClientSettings:
        """The settings a role's configuration holds under the same names, with the two timeouts each role
        derives in its own way."""
        return cls(
            access_key=options.access_key,
            secret_key=options.secret_key,
            security_token=options.security_token,
            ssl=options.ssl,
            serialize_type=options.serialize_type,
            version=options.version,
            instance_name=options.instance_name,
            client_ip=options.client_ip,
            request_timeout_ms=request_timeout_ms,
            namesrv_timeout_ms=namesrv_timeout_ms,
            heartbeat_interval_ms=options.heartbeat_interval_ms,
            poll_namesrv_interval_ms=options.poll_namesrv_interval_ms,
        )
