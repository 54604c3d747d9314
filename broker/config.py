"""The broker's settings, under the names Apache's ``BrokerConfig`` / ``MessageStoreConfig`` give them.

Admin tools read and change a broker's settings as a Java properties text (GET_BROKER_CONFIG /
UPDATE_BROKER_CONFIG, ``mqadmin getBrokerConfig`` / ``updateBrokerConfig``), so every setting here carries
its Java name and is rendered the way Java's ``toString`` renders the value. Python code uses the snake-case
attribute names. Unknown keys in an update are ignored and malformed values skipped, as Java's reflective
update does.
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from broker.store import BrokerRole as BrokerRole  # re-exported: callers name it broker.config.BrokerRole
from broker.store import FlushDiskType, StoreConfig
from nameserver.metrics_http import MetricsExporterType
from rocketmq_wire.bodies.properties_text import PropertiesBody
from rocketmq_wire.codes import MQVersion
from rocketmq_wire.transport.server import (
    DEFAULT_MAX_BUFFERED,
    DEFAULT_MAX_BUFFERED_PER_CONNECTION,
    RemotingLimits,
)

log = logging.getLogger("broker.config")

_JAVA = "java"

#: The Apache release this broker answers as (``version`` of every response, ``brokerVersion`` in its runtime
#: info): clients read features off it. 5.3.3, the newest release whose requests it serves: LiteTopic, 5.5's
#: addition, is not served (docs/compatibility.md), and a 5.5 answer would send clients its requests.
BROKER_VERSION = MQVersion.V5_3_3

#: Apache's default ``messageDelayLevel``.
DEFAULT_DELAY_LEVELS = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
#: Keys an update may never change (Apache's default ``configBlackList``).
DEFAULT_CONFIG_BLACKLIST = "configBlackList;brokerConfigPath"

_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def _setting(java: str, default: Any) -> Any:
    if isinstance(default, (list, dict, set)):
        raise TypeError("mutable defaults are not settings")
    return dataclasses.field(default=default, metadata={_JAVA: java})


#: ``haMasterAddress`` only counts from this length on (Apache's check for a usable "host:port").
MIN_HA_MASTER_ADDRESS_LENGTH = 6


@dataclasses.dataclass(slots=True)
class BrokerConfig:
    """One broker's settings. Mutable: UPDATE_BROKER_CONFIG changes them while the broker runs."""

    # identity and network
    broker_name: str = _setting("brokerName", "broker-a")
    broker_cluster_name: str = _setting("brokerClusterName", "DefaultCluster")
    broker_id: int = _setting("brokerId", 0)
    broker_role: str = _setting("brokerRole", BrokerRole.ASYNC_MASTER.value)
    listen_host: str = _setting("listenHost", "0.0.0.0")
    listen_port: int = _setting("listenPort", 10911)
    ha_listen_port: int = _setting("haListenPort", 10912)
    broker_ip1: str = _setting("brokerIP1", "127.0.0.1")
    broker_ip2: str = _setting("brokerIP2", "127.0.0.1")
    region_id: str = _setting("regionId", "DefaultRegion")
    trace_on: bool = _setting("traceOn", True)
    namesrv_addr: str | None = _setting("namesrvAddr", None)
    register_name_server_period: int = _setting("registerNameServerPeriod", 30_000)
    register_broker_timeout_mills: int = _setting("registerBrokerTimeoutMills", 6000)
    broker_permission: int = _setting("brokerPermission", 6)
    # metrics (Apache 5.x): DISABLE, OTLP_GRPC, PROM or LOG; this broker serves PROM (broker/metrics.py)
    metrics_exporter_type: str = _setting("metricsExporterType", "DISABLE")
    metrics_prom_exporter_port: int = _setting("metricsPromExporterPort", 5557)
    #: Empty: every interface, as Apache's exporter binds.
    metrics_prom_exporter_host: str = _setting("metricsPromExporterHost", "")
    # the remoting server (Apache's NettyServerConfig): a connection that neither reads nor writes for this
    # long is closed; 0 or less: never
    server_channel_max_idle_time_seconds: int = _setting("serverChannelMaxIdleTimeSeconds", 120)
    #: This project's own, no Apache equivalent: unsent bytes (answers a peer has not read) past which its
    #: connection is no longer read until they drain below half; 0 or less: no bound.
    server_channel_max_buffered_bytes: int = _setting(
        "serverChannelMaxBufferedBytes", DEFAULT_MAX_BUFFERED_PER_CONNECTION
    )
    #: This project's own: the same over all connections of a port together; 0 or less: no bound.
    server_max_buffered_bytes: int = _setting("serverMaxBufferedBytes", DEFAULT_MAX_BUFFERED)
    # replication (classic master/slave HA, broker/ha/): haListenPort 0 or less means listenPort + 1
    ha_send_heartbeat_interval: int = _setting("haSendHeartbeatInterval", 5000)
    ha_housekeeping_interval: int = _setting("haHousekeepingInterval", 20_000)
    ha_transfer_batch_size: int = _setting("haTransferBatchSize", 32 * 1024)
    ha_master_address: str | None = _setting("haMasterAddress", None)
    ha_slave_fallbehind_max: int = _setting("haSlaveFallbehindMax", 256 * 1024 * 1024)
    ha_max_gap_not_in_sync: int = _setting("haMaxGapNotInSync", 256 * 1024 * 1024)
    slave_timeout: int = _setting("slaveTimeout", 3000)
    slave_read_enable: bool = _setting("slaveReadEnable", False)
    offset_check_in_slave: bool = _setting("offsetCheckInSlave", False)
    access_message_in_memory_max_ratio: int = _setting("accessMessageInMemoryMaxRatio", 40)
    # topics and groups
    auto_create_topic_enable: bool = _setting("autoCreateTopicEnable", True)
    default_topic_queue_nums: int = _setting("defaultTopicQueueNums", 8)
    cluster_topic_enable: bool = _setting("clusterTopicEnable", True)
    broker_topic_enable: bool = _setting("brokerTopicEnable", True)
    trace_topic_enable: bool = _setting("traceTopicEnable", False)
    msg_trace_topic_name: str = _setting("msgTraceTopicName", "RMQ_SYS_TRACE_TOPIC")
    auto_create_subscription_group: bool = _setting("autoCreateSubscriptionGroup", True)
    notify_consumer_ids_changed_enable: bool = _setting("notifyConsumerIdsChangedEnable", True)
    channel_expired_timeout: int = _setting("channelExpiredTimeout", 120_000)
    # consuming
    long_polling_enable: bool = _setting("longPollingEnable", True)
    short_polling_time_mills: int = _setting("shortPollingTimeMills", 1000)
    enable_property_filter: bool = _setting("enablePropertyFilter", False)
    #: Whether a topic may be created with ``message.type=MIXED`` (Apache refuses it by default).
    enable_mixed_message_type: bool = _setting("enableMixedMessageType", False)
    #: Whether a reply (SEND_REPLY_MESSAGE) is also stored in its topic, besides pushed to its requester.
    store_reply_message_enable: bool = _setting("storeReplyMessageEnable", True)
    default_query_max_num: int = _setting("defaultQueryMaxNum", 32)
    flush_consumer_offset_interval: int = _setting("flushConsumerOffsetInterval", 5000)
    rebalance_lock_max_live_time: int = _setting("rebalanceLockMaxLiveTime", 60_000)
    # delayed messages
    message_delay_level: str = _setting("messageDelayLevel", DEFAULT_DELAY_LEVELS)
    flush_delay_offset_interval: int = _setting("flushDelayOffsetInterval", 10_000)
    # timer messages (broker/timer.py), Apache's MessageStoreConfig names and defaults
    timer_wheel_enable: bool = _setting("timerWheelEnable", True)
    timer_precision_ms: int = _setting("timerPrecisionMs", 1000)
    timer_max_delay_sec: int = _setting("timerMaxDelaySec", 3 * 24 * 3600)
    timer_flush_interval_ms: int = _setting("timerFlushIntervalMs", 1000)
    timer_congest_num_each_slot: int = _setting("timerCongestNumEachSlot", 2**31 - 1)
    # recall of timer messages (RECALL_MESSAGE, 5.3.2+)
    recall_message_enable: bool = _setting("recallMessageEnable", False)
    allow_recall_when_broker_not_writeable: bool = _setting("allowRecallWhenBrokerNotWriteable", True)
    # transactions
    reject_transaction_message: bool = _setting("rejectTransactionMessage", False)
    transaction_time_out: int = _setting("transactionTimeOut", 6000)
    transaction_check_max: int = _setting("transactionCheckMax", 15)
    transaction_check_interval: int = _setting("transactionCheckInterval", 60_000)
    # fast failure: refusing sends with SYSTEM_BUSY before they are stored (broker/flow_control.py)
    broker_fast_failure_enable: bool = _setting("brokerFastFailureEnable", True)
    wait_time_mills_in_send_queue: int = _setting("waitTimeMillsInSendQueue", 200)
    send_thread_pool_queue_capacity: int = _setting("sendThreadPoolQueueCapacity", 10_000)
    # store
    store_path_root_dir: str = _setting("storePathRootDir", str(Path.home() / "store"))
    flush_disk_type: str = _setting("flushDiskType", FlushDiskType.ASYNC_FLUSH.value)
    max_message_size: int = _setting("maxMessageSize", 4 * 1024 * 1024)
    mapped_file_size_commit_log: int = _setting("mappedFileSizeCommitLog", 1024 * 1024 * 1024)
    mapped_file_size_consume_queue: int = _setting("mappedFileSizeConsumeQueue", 300_000 * 20)
    flush_interval_commit_log: int = _setting("flushIntervalCommitLog", 500)
    flush_interval_consume_queue: int = _setting("flushIntervalConsumeQueue", 1000)
    sync_flush_timeout: int = _setting("syncFlushTimeout", 5000)
    file_reserved_time: int = _setting("fileReservedTime", 72)
    delete_when: str = _setting("deleteWhen", "04")
    disk_max_used_space_ratio: int = _setting("diskMaxUsedSpaceRatio", 75)
    #: Percent of the disk in use above which sends are refused (5.x's field; 4.9 took it from the
    #: ``rocketmq.broker.diskSpaceWarningLevelRatio`` system property). Clamped to [35, 90] as Apache does.
    disk_space_warning_level_ratio: int = _setting("diskSpaceWarningLevelRatio", 90)
    #: Percent above which retention deletes the oldest files whatever their age; clamped to [30, 85].
    disk_space_clean_forcibly_ratio: int = _setting("diskSpaceCleanForciblyRatio", 85)
    #: Whether retention may delete the oldest commit-log files before their time on a filling disk.
    clean_file_forcibly_enable: bool = _setting("cleanFileForciblyEnable", True)
    clean_resource_interval: int = _setting("cleanResourceInterval", 10_000)
    message_index_enable: bool = _setting("messageIndexEnable", True)
    max_hash_slot_num: int = _setting("maxHashSlotNum", 5_000_000)
    max_index_num: int = _setting("maxIndexNum", 20_000_000)
    max_transfer_bytes_on_message_in_memory: int = _setting("maxTransferBytesOnMessageInMemory", 262_144)
    max_transfer_count_on_message_in_memory: int = _setting("maxTransferCountOnMessageInMemory", 32)
    check_crc_on_recover: bool = _setting("checkCRCOnRecover", True)
    os_page_cache_busy_time_out_mills: int = _setting("osPageCacheBusyTimeOutMills", 1000)
    config_black_list: str = _setting("configBlackList", DEFAULT_CONFIG_BLACKLIST)
    # access control (broker/acl/): Apache's plain ACL, read from ``acl_file`` when ``aclEnable`` is true
    acl_enable: bool = _setting("aclEnable", False)
    #: The plain_acl.yml to enforce; ``None`` means Apache's ``$ROCKETMQ_HOME/conf/plain_acl.yml``. Not a Java
    #: setting (Apache takes it from a system property), so remote config updates cannot repoint it.
    acl_file: str | None = None
    #: How often the ACL file is checked for changes (Apache's watcher looks every 5 s).
    acl_watch_interval_ms: int = 5000
    # ACL 2.0 (broker/auth/): Apache 5.3's users and policies, kept in ``<storePathRootDir>/config/auth.json``
    authentication_enabled: bool = _setting("authenticationEnabled", False)
    authorization_enabled: bool = _setting("authorizationEnabled", False)
    #: ``{"username": ..., "password": ...}``: created as a super user at start when missing.
    init_authentication_user: str | None = _setting("initAuthenticationUser", None)
    #: ``{"accessKey": ..., "secretKey": ...}``: the broker's own clients' user, a super user too.
    inner_client_authentication_credentials: str | None = _setting(
        "innerClientAuthenticationCredentials", None
    )
    #: Request codes (comma-separated numbers) that skip authentication / authorization.
    authentication_whitelist: str | None = _setting("authenticationWhitelist", None)
    authorization_whitelist: str | None = _setting("authorizationWhitelist", None)
    #: Apache's provider class names: only its default providers exist here, so these are accepted and shown.
    authentication_provider: str | None = _setting("authenticationProvider", None)
    authentication_metadata_provider: str | None = _setting("authenticationMetadataProvider", None)
    authorization_provider: str | None = _setting("authorizationProvider", None)
    authorization_metadata_provider: str | None = _setting("authorizationMetadataProvider", None)

    # -- derived values ---------------------------------------------------------------------------------

    @property
    def store_host(self) -> str:
        """The address stamped on stored messages and into offset message ids."""
        return f"{self.broker_ip1}:{self.listen_port}"

    @property
    def broker_addr(self) -> str:
        return f"{self.broker_ip1}:{self.listen_port}"

    @property
    def ha_server_addr(self) -> str:
        return f"{self.broker_ip2}:{self.ha_listen_port}"

    @property
    def role(self) -> BrokerRole:
        return BrokerRole(self.broker_role)

    @property
    def is_slave(self) -> bool:
        return self.role is BrokerRole.SLAVE

    @property
    def static_ha_master_address(self) -> str | None:
        """``haMasterAddress`` when it names a master; otherwise a slave learns it from the NameServer."""
        address = (self.ha_master_address or "").strip()
        return address if len(address) >= MIN_HA_MASTER_ADDRESS_LENGTH else None

    @property
    def slave_fall_behind_limit(self) -> int:
        """How far behind (bytes) a slave may be and still be waited for by a SYNC_MASTER.

        4.9 calls this ``haSlaveFallbehindMax`` and 5.x ``haMaxGapNotInSync`` (same default, same test);
        both are read, and the smaller one counts, so a broker.conf written for either release works.
        """
        return min(self.ha_slave_fallbehind_max, self.ha_max_gap_not_in_sync)

    def ha_port_to_bind(self, listen_port_requested: int) -> int:
        """The HA port to listen on, as Apache's ``BrokerStartup`` settles it: ``haListenPort`` when above
        0, otherwise ``listenPort + 1`` -- or any free port when the listen port was itself asked to be
        any free one (``listen_port_requested`` 0)."""
        if self.ha_listen_port > 0:
            return self.ha_listen_port
        return 0 if listen_port_requested == 0 else self.listen_port + 1

    @property
    def namesrv_addrs(self) -> list[str]:
        """``namesrvAddr`` is a semicolon-separated list, as in Java."""
        if not self.namesrv_addr:
            return []
        return [addr.strip() for addr in self.namesrv_addr.split(";") if addr.strip()]

    @property
    def config_dir(self) -> Path:
        return Path(self.store_path_root_dir) / "config"

    @property
    def acl_path(self) -> Path:
        """The ACL file this broker enforces when ``aclEnable`` is true."""
        if self.acl_file:
            return Path(self.acl_file)
        return Path(os.environ.get("ROCKETMQ_HOME", ".")) / "conf" / "plain_acl.yml"

    def remoting_limits(self) -> RemotingLimits:
        """What the remoting servers (the listen port and the VIP channel) are built with."""
        return RemotingLimits(
            idle_timeout=float(self.server_channel_max_idle_time_seconds),
            max_buffered_per_connection=self.server_channel_max_buffered_bytes,
            max_buffered=self.server_max_buffered_bytes,
        )

    def delay_levels_ms(self) -> list[int]:
        """``messageDelayLevel`` parsed; level ``n`` (1-based) waits ``result[n - 1]`` ms."""
        return parse_delay_levels(self.message_delay_level)

    def store_config(self) -> StoreConfig:
        """The message store's own settings, derived from these."""
        flush = FlushDiskType(self.flush_disk_type)
        return StoreConfig(
            commit_log_segment_size=self.mapped_file_size_commit_log,
            consume_queue_entries_per_file=max(1, self.mapped_file_size_consume_queue // 20),
            max_message_size=self.max_message_size,
            flush_disk_type=flush,
            flush_interval_commit_log_ms=self.flush_interval_commit_log,
            flush_interval_consume_queue_ms=self.flush_interval_consume_queue,
            sync_flush_timeout_ms=self.sync_flush_timeout,
            check_crc_on_recover=self.check_crc_on_recover,
            message_index_enable=self.message_index_enable,
            max_hash_slot_num=self.max_hash_slot_num,
            max_index_num=self.max_index_num,
            max_transfer_bytes_on_message=self.max_transfer_bytes_on_message_in_memory,
            max_transfer_count_on_message=self.max_transfer_count_on_message_in_memory,
            file_reserved_time_hours=self.file_reserved_time,
            delete_when=self.delete_when,
            disk_max_used_space_ratio=self.disk_max_used_space_ratio,
            disk_space_warning_level_ratio=min(max(self.disk_space_warning_level_ratio, 35), 90) / 100,
            disk_space_clean_forcibly_ratio=min(max(self.disk_space_clean_forcibly_ratio, 30), 85) / 100,
            clean_file_forcibly_enable=self.clean_file_forcibly_enable,
            os_page_cache_busy_timeout_ms=self.os_page_cache_busy_time_out_mills,
            broker_role=self.role,
            slave_timeout_ms=self.slave_timeout,
            offset_check_in_slave=self.offset_check_in_slave,
            access_message_in_memory_max_ratio=self.access_message_in_memory_max_ratio,
        )

    def validate(self) -> None:
        """Refuse settings the broker cannot run with (checked at start, not on every update)."""
        FlushDiskType(self.flush_disk_type)
        BrokerRole(self.broker_role)
        parse_delay_levels(self.message_delay_level)
        MetricsExporterType.parse(self.metrics_exporter_type)
        if not self.broker_name or not self.broker_cluster_name:
            raise ValueError("brokerName and brokerClusterName must not be empty")
        if not 0 <= self.listen_port <= 0xFFFF:
            raise ValueError(f"listenPort {self.listen_port} is not a port")
        if self.ha_listen_port > 0xFFFF:
            raise ValueError(f"haListenPort {self.ha_listen_port} is not a port")
        if self.is_slave and self.broker_id <= 0:
            raise ValueError("a SLAVE needs a brokerId greater than 0")
        if self.ha_transfer_batch_size <= 0 or self.ha_send_heartbeat_interval <= 0:
            raise ValueError("haTransferBatchSize and haSendHeartbeatInterval must be positive")
        if self.acl_watch_interval_ms <= 0:
            raise ValueError("acl_watch_interval_ms must be positive")

    # -- Java properties --------------------------------------------------------------------------------

    @classmethod
    def java_names(cls) -> dict[str, str]:
        """Java name -> attribute name, for every setting."""
        return {f.metadata[_JAVA]: f.name for f in dataclasses.fields(cls) if _JAVA in f.metadata}

    def items(self) -> Iterator[tuple[str, str]]:
        """(Java name, Java rendering) of every set value; unset (null) values are left out, as Java does."""
        for f in dataclasses.fields(self):
            if _JAVA not in f.metadata:
                continue  # a Python-only setting (acl_file, ...): Java has no such key to show
            if f.metadata[_JAVA] in AUTH_CONFIG_KEYS:
                continue  # Apache's AuthConfig: read from broker.conf, never shown by GET_BROKER_CONFIG
            value = getattr(self, f.name)
            if value is None:
                continue
            yield f.metadata[_JAVA], render_java(value)

    def to_properties(self) -> str:
        """The GET_BROKER_CONFIG body: ``key=value`` lines, in the order a 4.x broker writes them."""
        return PropertiesBody(properties=dict(self.items()), sorted_keys=False).to_text().decode("utf-8")

    def blacklisted(self, keys: Mapping[str, str]) -> list[str]:
        """Keys of an update that the blacklist forbids changing."""
        forbidden = {name.strip() for name in self.config_black_list.split(";") if name.strip()}
        return [key for key in keys if key in forbidden]

    def update(self, properties: Mapping[str, str], *, remote: bool = False) -> list[str]:
        """Apply Java-named settings; returns the Java names actually changed. ``remote`` (an
        UPDATE_BROKER_CONFIG) leaves ACL 2.0's settings alone: Apache reads its AuthConfig from the file.
        """
        names = self.java_names()
        changed: list[str] = []
        for key, text in properties.items():
            attribute = names.get(key)
            if attribute is None or (remote and key in AUTH_CONFIG_KEYS):
                continue
            current = getattr(self, attribute)
            try:
                value = parse_java(text, type(current) if current is not None else str)
            except ValueError:
                log.warning("ignoring broker setting %s=%r: not a valid value", key, text)
                continue
            if value != current:
                setattr(self, attribute, value)
                changed.append(key)
        return changed

    @classmethod
    def from_properties(cls, text: str, **overrides: Any) -> BrokerConfig:
        """A config from a ``broker.conf``-style text, then keyword overrides (Python names)."""
        config = cls()
        config.update(parse_properties(text))
        for name, value in overrides.items():
            setattr(config, name, value)
        return config


#: Settings of Apache's ``AuthConfig`` (ACL 2.0), not of its ``BrokerConfig``.
AUTH_CONFIG_KEYS = frozenset(
    {
        "authenticationEnabled",
        "authorizationEnabled",
        "initAuthenticationUser",
        "innerClientAuthenticationCredentials",
        "authenticationWhitelist",
        "authorizationWhitelist",
        "authenticationProvider",
        "authenticationMetadataProvider",
        "authorizationProvider",
        "authorizationMetadataProvider",
    }
)


def render_java(value: object) -> str:
    """A value as Java's ``String.valueOf`` writes it."""
    if value is True:
        return "true"
    if value is False:
        return "false"
    return str(value)


def parse_java(text: str, kind: type) -> object:
    """A setting's text as Java's reflective update reads it; ValueError when it does not parse."""
    text = text.strip()
    if kind is bool:
        return text.lower() == "true"
    if kind is int:
        return int(text)
    if kind is float:
        return float(text)
    return text


def parse_properties(text: str) -> dict[str, str]:
    """A ``broker.conf`` / UPDATE_BROKER_CONFIG text (``Properties.load`` syntax) as a mapping.

    Raises :class:`~rocketmq_wire.errors.CodecError` for text Java could not load either.
    """
    return dict(PropertiesBody.from_text(text).properties)


def parse_delay_levels(text: str) -> list[int]:
    """``"1s 5s 1m 2h"`` -> milliseconds per level; units s, m, h, d as Apache accepts them."""
    levels: list[int] = []
    for token in text.split():
        unit = token[-1:]
        number = token[:-1]
        if unit not in _UNIT_MS or not number.isdigit():
            raise ValueError(f"delay level {token!r} is not a number followed by s, m, h or d")
        levels.append(int(number) * _UNIT_MS[unit])
    if not levels:
        raise ValueError("messageDelayLevel names no level")
    return levels
