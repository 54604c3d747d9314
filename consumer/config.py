"""Consumer settings, with the defaults of Apache's ``DefaultMQPushConsumer`` / ``DefaultLitePullConsumer``.

The defaults are Java's on purpose: a group moved from the Java client to this one should pull the same batch
sizes, hold the same number of messages in memory, retry the same number of times and commit as often, so
that brokers (and the people watching their dashboards) see no difference.
"""

from __future__ import annotations

import dataclasses
import enum
import ssl as ssl_module

from client.settings import ClientSettings
from rocketmq_wire.bodies.heartbeat import ConsumeFromWhere, MessageModel
from rocketmq_wire.codes import SerializeType
from rocketmq_wire.command import DEFAULT_VERSION

__all__ = ["AllocateStrategyName", "ConsumeFromWhere", "ConsumerConfig", "MessageModel"]


class AllocateStrategyName(enum.StrEnum):
    """The built-in ways of sharing a topic's queues among a group's members (see :mod:`.allocate`)."""

    AVERAGELY = "averagely"
    CIRCLE = "circle"
    BY_CONFIG = "by_config"


#: ``pullThresholdSizeForQueue``: 100 MiB of bodies held per queue before pulling pauses.
DEFAULT_PULL_THRESHOLD_SIZE_MIB = 100


@dataclasses.dataclass(frozen=True, kw_only=True)
class ConsumerConfig:
    """Everything that tunes a consumer; frozen, so one instance can be shared by several consumers."""

    # -- connection and identity (as for the producer) -----------------------------------------------------
    #: Prefix for topics and the group (``namespace%topic``), as Java's ``namespace`` option.
    namespace: str | None = None
    #: ACL credentials; requests are signed when both keys are set.
    access_key: str | None = None
    secret_key: str | None = None
    security_token: str | None = None
    #: TLS for every connection when given.
    ssl: ssl_module.SSLContext | None = None
    #: Header serialization of every request: JSON (Java's default) or the binary ROCKETMQ one.
    serialize_type: SerializeType = SerializeType.JSON
    #: The ``version`` announced in every command; 409 is Apache 4.9.8, whose client behaviour is followed.
    version: int = DEFAULT_VERSION
    #: Java's ``instanceName``. By default ``<pid>#<nanoseconds>`` (unique per consumer) when offsets are kept
    #: on the brokers, and Java's ``DEFAULT`` when they are kept in a local file, whose path includes the
    #: client id: a restarted consumer must find its file again. Two consumers of one process that keep
    #: local offsets for the same group need instance names of their own.
    instance_name: str | None = None
    #: The address put in the client id; found from the routing table if unset.
    client_ip: str | None = None
    #: Timeout of one request to a NameServer, and of the small requests to brokers (offsets, locks...).
    request_timeout_ms: float = 3000
    #: Java's ``enableMsgTrace``: the push consumer writes ``SubBefore``/``SubAfter`` trace records, sent
    #: asynchronously by an internal producer (``producer.trace``, ``client.trace``).
    enable_msg_trace: bool = False
    #: Java's ``customizedTraceTopic``; ``RMQ_SYS_TRACE_TOPIC`` when unset.
    trace_topic: str | None = None

    # -- timers --------------------------------------------------------------------------------------------
    #: ``pollNameServerInterval``: how often subscribed topics' routes are fetched again.
    poll_namesrv_interval_ms: float = 30_000
    #: ``heartbeatBrokerInterval``.
    heartbeat_interval_ms: float = 30_000
    #: ``persistConsumerOffsetInterval``: how often consumed offsets are committed.
    persist_offset_interval_ms: float = 5_000
    #: The rebalance service's period (``rocketmq.client.rebalance.waitInterval``); brokers also nudge it.
    rebalance_interval_ms: float = 20_000

    # -- pulling -------------------------------------------------------------------------------------------
    #: ``pullBatchSize``: messages asked for per pull.
    pull_batch_size: int = 32
    #: ``pullBatchSizeInBytes``: sent as ``maxMsgBytes`` by 5.x clients only.
    pull_batch_size_bytes: int = 256 * 1024
    #: ``pullThresholdForQueue``: messages held (pulled, not yet consumed) per queue before pulling pauses.
    pull_threshold_for_queue: int = 1000
    #: ``pullThresholdSizeForQueue`` in MiB.
    pull_threshold_size_for_queue_mib: int = DEFAULT_PULL_THRESHOLD_SIZE_MIB
    #: ``consumeConcurrentlyMaxSpan``: pulling pauses while the held messages of a queue span more offsets.
    consume_max_span: int = 2000
    #: ``pullInterval``: pause between two pulls of one queue (0: pull again at once).
    pull_interval_ms: float = 0
    #: How long a broker may hold a pull that found nothing (push: 15 s, lite pull: 20 s).
    broker_suspend_max_ms: int | None = None
    #: How long the consumer waits for a held pull's answer (both: 30 s).
    consumer_timeout_when_suspend_ms: float = 30_000
    #: Pause after a failed pull before the next (push: 3 s, lite pull: 1 s).
    pull_delay_when_exception_ms: float | None = None
    #: ``postSubscriptionWhenPull``: send the expression with every pull instead of relying on heartbeats.
    post_subscription_when_pull: bool = False

    # -- consuming (push) ----------------------------------------------------------------------------------
    #: ``consumeThreadMax``: how many handler calls may run at once (concurrent consumption).
    consume_workers: int = 20
    #: ``consumeMessageBatchMaxSize``: messages handed to one handler call.
    consume_batch_max_size: int = 1
    #: ``maxReconsumeTimes``; ``None`` is Java's -1: 16 for concurrent consumption, no limit for orderly.
    max_reconsume_times: int | None = None
    #: ``clientRebalance``: members share the queues among themselves. ``False`` asks the brokers instead
    #: (QUERY_ASSIGNMENT), which also makes a concurrent push consumer POP where the group's consume mode
    #: says POP; orderly and broadcasting consumers always share in the client, as in Java.
    client_rebalance: bool = True
    #: ``popInvisibleTime``: how long a message a POP queue hands out stays hidden (5 s to 300 s).
    pop_invisible_time_ms: int = 60_000
    #: ``popBatchNums``: messages one pop asks for (1 to 32).
    pop_batch_nums: int = 32
    #: ``popThresholdForQueue``: a POP queue pauses while more of its messages than this await their ack.
    pop_threshold_for_queue: int = 96
    #: ``suspendCurrentQueueTimeMillis``: how long an orderly queue pauses after SUSPEND_CURRENT_QUEUE.
    suspend_current_queue_ms: float = 1000
    #: How long a message whose send-back failed waits before it is consumed again locally.
    reconsume_later_delay_ms: float = 5000
    #: How long shutdown waits for handler calls under way before it commits what is done.
    await_termination_ms: float = 30_000
    #: ``consumeTimeout``, in minutes (fractions allowed): a message whose concurrent handler has not
    #: finished after this long is sent back for redelivery and stops holding the committed offset back;
    #: the handler keeps running, but its verdict on that message is ignored.
    consume_timeout_minutes: float = 15
    #: How often held messages are checked against ``consume_timeout_minutes`` (``None``: every
    #: ``consume_timeout_minutes``, as Java does).
    expire_check_interval_ms: float | None = None

    # -- lite pull -----------------------------------------------------------------------------------------
    #: ``pullThresholdForAll``: buffered messages (of every queue) before the fetchers pause.
    pull_threshold_for_all: int = 10_000
    #: ``autoCommitIntervalMillis``.
    auto_commit_interval_ms: float = 5_000

    # -- orderly consumption -------------------------------------------------------------------------------
    #: ``REBALANCE_LOCK_INTERVAL``: how often held queue locks are renewed.
    lock_interval_ms: float = 20_000
    #: ``REBALANCE_LOCK_MAX_LIVE_TIME``: a lock not renewed for this long is treated as lost.
    lock_max_live_ms: float = 30_000

    # -- offsets -------------------------------------------------------------------------------------------
    #: Where broadcasting consumers keep offsets (Java: ``~/.rocketmq_offsets``); ``None`` is that default.
    local_offset_dir: str | None = None
    #: Keep offsets in the local file in clustering mode too (Java: a ``LocalFileOffsetStore`` set by hand).
    local_offset_store: bool = False
    #: Ask the broker not to answer "0" for a group that never committed (5.x ``setZeroIfNotFound=false``),
    #: so that ``consume_from`` decides where every new queue starts. Java clients leave this off (and 4.x
    #: brokers ignore it): a queue whose first message is still on disk is then read from its start.
    strict_consume_from: bool = False

    def __post_init__(self) -> None:
        positive = {
            "pull_batch_size": self.pull_batch_size,
            "pull_threshold_for_queue": self.pull_threshold_for_queue,
            "consume_workers": self.consume_workers,
            "consume_batch_max_size": self.consume_batch_max_size,
            "request_timeout_ms": self.request_timeout_ms,
            "consumer_timeout_when_suspend_ms": self.consumer_timeout_when_suspend_ms,
            "consume_timeout_minutes": self.consume_timeout_minutes,
        }
        for name, value in positive.items():
            if value <= 0:
                raise ValueError(f"{name} must be positive, not {value}")
        if not 1 <= self.pull_batch_size <= 1024:
            raise ValueError("pull_batch_size must be between 1 and 1024")
        if not 5_000 <= self.pop_invisible_time_ms <= 300_000:
            raise ValueError("pop_invisible_time_ms must be between 5000 and 300000 (Java's bounds)")
        if not 1 <= self.pop_batch_nums <= 32:
            raise ValueError("pop_batch_nums must be between 1 and 32")
        if self.pop_threshold_for_queue < 1:
            raise ValueError("pop_threshold_for_queue must be positive")
        if not 1 <= self.consume_batch_max_size <= 1024:
            raise ValueError("consume_batch_max_size must be between 1 and 1024")
        if self.expire_check_interval_ms is not None and self.expire_check_interval_ms <= 0:
            raise ValueError("expire_check_interval_ms must be positive")
        if self.max_reconsume_times is not None and self.max_reconsume_times < -1:
            raise ValueError("max_reconsume_times must be -1 or more")
        if self.broker_suspend_max_ms is not None and (
            self.broker_suspend_max_ms >= self.consumer_timeout_when_suspend_ms
        ):
            raise ValueError("broker_suspend_max_ms must be shorter than consumer_timeout_when_suspend_ms")
        if (self.access_key is None) != (self.secret_key is None):
            raise ValueError("access_key and secret_key go together")

    def client_settings(self) -> ClientSettings:
        """What the client core needs of these settings: ``request_timeout_ms`` bounds NameServer requests
        and, for an instance this consumer creates, its heartbeats and unregistration."""
        return ClientSettings.of(
            self, request_timeout_ms=self.request_timeout_ms, namesrv_timeout_ms=self.request_timeout_ms
        )

    def concurrent_max_reconsume_times(self) -> int:
        """Java's ``getMaxReconsumeTimes`` for concurrent consumption: -1 means 16."""
        return 16 if self.max_reconsume_times in (None, -1) else int(self.max_reconsume_times or 0)

    def consume_timeout_ms(self) -> float:
        return self.consume_timeout_minutes * 60_000

    def expire_check_ms(self) -> float:
        """How often the consume timeout is checked."""
        if self.expire_check_interval_ms is not None:
            return self.expire_check_interval_ms
        return self.consume_timeout_ms()

    def orderly_max_reconsume_times(self) -> int:
        """For orderly consumption -1 means no limit (``Integer.MAX_VALUE``)."""
        return 0x7FFFFFFF if self.max_reconsume_times in (None, -1) else int(self.max_reconsume_times or 0)
