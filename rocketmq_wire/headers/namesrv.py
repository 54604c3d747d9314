"""Headers of the NameServer's requests: routes, broker registration, KV config, broker write permission."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from rocketmq_wire.codes import RequestCode
from rocketmq_wire.headers.base import CommandHeader, jbool, jint, jlong, jstr
from rocketmq_wire.headers.rpc import RpcRequestHeader, TopicRequestHeader


@dataclasses.dataclass(slots=True, kw_only=True)
class GetRouteInfoRequestHeader(TopicRequestHeader):
    """GET_ROUTEINFO_BY_TOPIC. ``acceptStandardJsonOnly`` (5.x) asks for a route body strict JSON accepts."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.GET_ROUTEINFO_BY_TOPIC,)

    topic: str | None = jstr("topic", required=True)
    accept_standard_json_only: bool | None = jbool("acceptStandardJsonOnly")


@dataclasses.dataclass(slots=True, kw_only=True)
class RegisterBrokerRequestHeader(CommandHeader):
    """REGISTER_BROKER. The body's CRC32 lets the NameServer reject a body damaged in transit.

    Java always sends ``compressed`` and ``bodyCrc32`` (a primitive and an initialised field); set them when
    building one. ``heartbeatTimeoutMillis`` and ``enableActingMaster`` are 5.x additions.
    """

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.REGISTER_BROKER,)

    broker_name: str | None = jstr("brokerName", required=True)
    broker_addr: str | None = jstr("brokerAddr", required=True)
    cluster_name: str | None = jstr("clusterName", required=True)
    ha_server_addr: str | None = jstr("haServerAddr", required=True)
    broker_id: int | None = jlong("brokerId", required=True)
    heartbeat_timeout_millis: int | None = jlong("heartbeatTimeoutMillis")
    enable_acting_master: bool | None = jbool("enableActingMaster")
    compressed: bool | None = jbool("compressed")
    body_crc32: int | None = jint("bodyCrc32")


@dataclasses.dataclass(slots=True, kw_only=True)
class RegisterBrokerResponseHeader(CommandHeader):
    """Tells a slave where its master and the master's HA port are."""

    ha_server_addr: str | None = jstr("haServerAddr")
    master_addr: str | None = jstr("masterAddr")


@dataclasses.dataclass(slots=True, kw_only=True)
class UnRegisterBrokerRequestHeader(CommandHeader):
    """UNREGISTER_BROKER, sent by a broker on shutdown."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.UNREGISTER_BROKER,)

    broker_name: str | None = jstr("brokerName", required=True)
    broker_addr: str | None = jstr("brokerAddr", required=True)
    cluster_name: str | None = jstr("clusterName", required=True)
    broker_id: int | None = jlong("brokerId", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class DeleteTopicFromNamesrvRequestHeader(TopicRequestHeader):
    """DELETE_TOPIC_IN_NAMESRV; without ``clusterName`` the topic goes from every cluster."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.DELETE_TOPIC_IN_NAMESRV,)

    topic: str | None = jstr("topic", required=True)
    cluster_name: str | None = jstr("clusterName")


@dataclasses.dataclass(slots=True, kw_only=True)
class PutKVConfigRequestHeader(CommandHeader):
    """PUT_KV_CONFIG (e.g. namespace ``ORDER_TOPIC_CONFIG`` holds ordered-topic queue layouts)."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.PUT_KV_CONFIG,)

    namespace: str | None = jstr("namespace", required=True)
    key: str | None = jstr("key", required=True)
    value: str | None = jstr("value", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class GetKVConfigRequestHeader(CommandHeader):
    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.GET_KV_CONFIG,)

    namespace: str | None = jstr("namespace", required=True)
    key: str | None = jstr("key", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class GetKVConfigResponseHeader(CommandHeader):
    """The value found; a missing key is a QUERY_NOT_FOUND response, not an empty value."""

    value: str | None = jstr("value")


@dataclasses.dataclass(slots=True, kw_only=True)
class DeleteKVConfigRequestHeader(CommandHeader):
    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.DELETE_KV_CONFIG,)

    namespace: str | None = jstr("namespace", required=True)
    key: str | None = jstr("key", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class GetKVListByNamespaceRequestHeader(CommandHeader):
    """GET_KVLIST_BY_NAMESPACE; the answer is a KV table body."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.GET_KVLIST_BY_NAMESPACE,)

    namespace: str | None = jstr("namespace", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class WipeWritePermOfBrokerRequestHeader(CommandHeader):
    """WIPE_WRITE_PERM_OF_BROKER: take a broker out of the write path before maintenance."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.WIPE_WRITE_PERM_OF_BROKER,)

    broker_name: str | None = jstr("brokerName", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class WipeWritePermOfBrokerResponseHeader(CommandHeader):
    wipe_topic_count: int | None = jint("wipeTopicCount", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class AddWritePermOfBrokerRequestHeader(CommandHeader):
    """ADD_WRITE_PERM_OF_BROKER: undo a wipe once maintenance is over."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.ADD_WRITE_PERM_OF_BROKER,)

    broker_name: str | None = jstr("brokerName", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class AddWritePermOfBrokerResponseHeader(CommandHeader):
    add_topic_count: int | None = jint("addTopicCount", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class QueryDataVersionRequestHeader(CommandHeader):
    """QUERY_DATA_VERSION: a broker asks whether its registration is stale before re-sending all topics."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.QUERY_DATA_VERSION,)

    broker_name: str | None = jstr("brokerName", required=True)
    broker_addr: str | None = jstr("brokerAddr", required=True)
    cluster_name: str | None = jstr("clusterName", required=True)
    broker_id: int | None = jlong("brokerId", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class QueryDataVersionResponseHeader(CommandHeader):
    changed: bool | None = jbool("changed", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class GetTopicsByClusterRequestHeader(RpcRequestHeader):
    """GET_TOPICS_BY_CLUSTER; the answer is a topic list body."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.GET_TOPICS_BY_CLUSTER,)

    cluster: str | None = jstr("cluster", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class BrokerHeartbeatRequestHeader(CommandHeader):
    """BROKER_HEARTBEAT (5.x): a broker in acting-master or controller mode refreshing its liveness."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.BROKER_HEARTBEAT,)

    cluster_name: str | None = jstr("clusterName", required=True)
    broker_addr: str | None = jstr("brokerAddr", required=True)
    broker_name: str | None = jstr("brokerName", required=True)
    broker_id: int | None = jlong("brokerId")
    epoch: int | None = jint("epoch")
    max_offset: int | None = jlong("maxOffset")
    confirm_offset: int | None = jlong("confirmOffset")
    heartbeat_timeout_mills: int | None = jlong("heartbeatTimeoutMills")
    election_priority: int | None = jint("electionPriority")


@dataclasses.dataclass(slots=True, kw_only=True)
class RegisterTopicRequestHeader(TopicRequestHeader):
    """REGISTER_TOPIC_IN_NAMESRV (5.x): add queues to a topic's route; the queues come as route data body."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.REGISTER_TOPIC_IN_NAMESRV,)

    topic: str | None = jstr("topic", required=True)
