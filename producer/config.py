"""Producer settings, with Apache's ``DefaultMQProducer`` defaults.

The defaults are Java's on purpose: someone moving a service from the Java client expects the same retry,
timeout and compression behaviour without re-tuning, and the broker sees the same header values.
"""

from __future__ import annotations

import dataclasses
import ssl as ssl_module

from client.settings import ClientSettings
from rocketmq_wire.codes import SerializeType
from rocketmq_wire.command import DEFAULT_VERSION
from rocketmq_wire.topics import AUTO_CREATE_TOPIC

#: ``DefaultMQProducer.maxMessageSize``: 4 MiB.
DEFAULT_MAX_MESSAGE_SIZE = 4 * 1024 * 1024


@dataclasses.dataclass(frozen=True, kw_only=True)
class ProducerConfig:
    """Everything that tunes a producer; one instance may be shared by several producers (it is frozen)."""

    #: Prefix for topics and the group (``namespace%topic``), as Java's ``namespace`` option.
    namespace: str | None = None
    #: ACL credentials; requests are signed when both keys are set.
    access_key: str | None = None
    secret_key: str | None = None
    security_token: str | None = None
    #: TLS for every connection (NameServers and brokers) when given.
    ssl: ssl_module.SSLContext | None = None

    #: ``sendMsgTimeout``: the whole budget of one send, retries included.
    send_timeout_ms: float = 3000
    #: ``retryTimesWhenSendFailed``: extra attempts of a sync send after the first.
    retry_times: int = 2
    #: ``retryAnotherBrokerWhenNotStoreOK``: retry when the broker stored the message but not durably.
    retry_another_broker_when_not_store_ok: bool = False
    #: A send refused as busy (SYSTEM_BUSY …) by every broker tried is resent after a delay that starts
    #: here and doubles up to ``busy_backoff_max_ms``, until ``send_timeout_ms`` runs out
    #: (``producer.flow_control``).
    busy_backoff_initial_ms: float = 10
    busy_backoff_max_ms: float = 1000
    #: ``compressMsgBodyOverHowmuch``: bodies of at least this many bytes are zlib-compressed.
    compress_over: int = 4096
    #: ``compressLevel``.
    compress_level: int = 5
    #: ``maxMessageSize``: larger bodies (and batches) are refused before anything is sent.
    max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE
    #: ``sendLatencyFaultEnable``: avoid brokers that were slow or failing, per the latency table.
    send_latency_fault_enable: bool = False
    #: ``createTopicKey`` and ``defaultTopicQueueNums``: how unknown topics are auto-created by brokers.
    create_topic_key: str = AUTO_CREATE_TOPIC
    default_topic_queue_nums: int = 4
    #: ``unitMode`` header flag.
    unit_mode: bool = False

    #: ``pollNameServerInterval`` and ``heartbeatBrokerInterval``.
    poll_namesrv_interval_ms: float = 30_000
    heartbeat_interval_ms: float = 30_000
    #: How long shutdown waits for each UNREGISTER_CLIENT answer.
    unregister_timeout_ms: float = 3000
    #: Timeout of one route request to a NameServer (Java uses 3 s as well).
    namesrv_timeout_ms: float = 3000

    #: Header serialization of every request: JSON (Java's default) or the binary ROCKETMQ one.
    serialize_type: SerializeType = SerializeType.JSON
    #: The ``version`` announced in every command; 409 is Apache 4.9.8, whose client behaviour is followed.
    version: int = DEFAULT_VERSION
    #: Java's ``instanceName``; by default ``<pid>#<nanoseconds>``, unique per producer as in 4.9.x.
    instance_name: str | None = None
    #: The address put in the client id and unique message ids; found from the routing table if unset.
    client_ip: str | None = None

    #: Java's ``enableMsgTrace``: write a trace record (``Pub``, ``EndTransaction``) for every send, sent
    #: asynchronously by an internal producer (``producer.trace``, ``client.trace``).
    enable_msg_trace: bool = False
    #: Java's ``customizedTraceTopic``; ``RMQ_SYS_TRACE_TOPIC`` when unset.
    trace_topic: str | None = None

    def __post_init__(self) -> None:
        if self.retry_times < 0:
            raise ValueError("retry_times must not be negative")
        if self.send_timeout_ms <= 0:
            raise ValueError("send_timeout_ms must be positive")
        if not 0 < self.busy_backoff_initial_ms <= self.busy_backoff_max_ms:
            raise ValueError("the busy backoff needs 0 < busy_backoff_initial_ms <= busy_backoff_max_ms")
        if self.max_message_size <= 0:
            raise ValueError("max_message_size must be positive")
        if self.compress_over < 0:
            raise ValueError("compress_over must not be negative")
        if not 0 <= self.compress_level <= 9:
            raise ValueError("compress_level must be between 0 and 9")
        if self.default_topic_queue_nums <= 0:
            raise ValueError("default_topic_queue_nums must be positive")
        if (self.access_key is None) != (self.secret_key is None):
            raise ValueError("access_key and secret_key go together")

    def client_settings(self) -> ClientSettings:
        """What the client core needs of these settings. Heartbeats and unregistration of an instance a
        producer creates wait as long as a send may (as they always did)."""
        return ClientSettings.of(
            self, request_timeout_ms=self.send_timeout_ms, namesrv_timeout_ms=self.namesrv_timeout_ms
        )
