"""Which body type travels with which request code, for code that meets bodies generically.

Most bodies are fastjson (:class:`JsonBody`); the configuration bodies are ``key=value`` text
(:class:`PropertiesBody`).

A body carries no type tag: what it is follows from the request code, and for a response from the code of
the request it answers. Tools that show any frame (``rmq inspect``), and tests over captures, use these
tables; handlers know their own body types and need not.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from rocketmq_wire import fastjson
from rocketmq_wire.bodies.acl import GetBrokerClusterAclConfigResponseBody
from rocketmq_wire.bodies.auth import AclInfo, AclInfoList, UserInfo, UserInfoList
from rocketmq_wire.bodies.base import Fields, JsonBody
from rocketmq_wire.bodies.cluster import ClusterInfo
from rocketmq_wire.bodies.consume_queue import QueryConsumeQueueResponseBody
from rocketmq_wire.bodies.consumer import (
    CheckClientRequestBody,
    ConsumerConnection,
    ConsumerOffsetSerializeWrapper,
    GetConsumerListByGroupResponseBody,
    GroupList,
    ProducerConnection,
    ProducerTableInfo,
    ResetOffsetBody,
)
from rocketmq_wire.bodies.heartbeat import HeartbeatData
from rocketmq_wire.bodies.kv import KVTable
from rocketmq_wire.bodies.lite import (
    GetBrokerLiteInfoResponseBody,
    GetLiteClientInfoResponseBody,
    GetLiteGroupInfoResponseBody,
    GetLiteTopicInfoResponseBody,
    GetParentTopicInfoResponseBody,
)
from rocketmq_wire.bodies.lock import LockBatchRequestBody, LockBatchResponseBody, UnlockBatchRequestBody
from rocketmq_wire.bodies.pop import (
    BatchAckMessageRequestBody,
    MessageRequestModeSerializeWrapper,
    QueryAssignmentRequestBody,
    QueryAssignmentResponseBody,
    SetMessageRequestModeRequestBody,
)
from rocketmq_wire.bodies.properties_text import PropertiesBody
from rocketmq_wire.bodies.register_broker import RegisterBrokerBody
from rocketmq_wire.bodies.route import TopicRouteData
from rocketmq_wire.bodies.running_info import ConsumeMessageDirectlyResult, ConsumerRunningInfo
from rocketmq_wire.bodies.stats import BrokerStatsData, ConsumeStats, TopicStatsTable
from rocketmq_wire.bodies.subscription_group import (
    ConsumeStatsList,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
)
from rocketmq_wire.bodies.timer import TimerMetricsBody
from rocketmq_wire.bodies.topic_config import (
    DataVersion,
    TopicConfigAndQueueMapping,
    TopicConfigSerializeWrapper,
    TopicList,
    read_topic_config_wrapper,
)
from rocketmq_wire.codes import RequestCode

# Request codes (RequestCode.java) whose bodies live here.
GET_ALL_TOPIC_CONFIG = 21
UPDATE_BROKER_CONFIG = 25
GET_BROKER_CONFIG = 26
GET_BROKER_RUNTIME_INFO = 28
HEART_BEAT = 34
GET_CONSUMER_LIST_BY_GROUP = 38
LOCK_BATCH_MQ = 41
UNLOCK_BATCH_MQ = 42
GET_ALL_CONSUMER_OFFSET = 43
REGISTER_BROKER = 103
GET_ROUTEINFO_BY_TOPIC = 105
GET_BROKER_CLUSTER_INFO = 106
GET_TOPIC_STATS_INFO = 202
GET_CONSUMER_CONNECTION_LIST = 203
GET_ALL_TOPIC_LIST_FROM_NAMESERVER = 206
GET_CONSUME_STATS = 208
GET_KVLIST_BY_NAMESPACE = 219
RESET_CONSUMER_CLIENT_OFFSET = 220
INVOKE_BROKER_TO_RESET_OFFSET = 222
GET_TOPICS_BY_CLUSTER = 224
QUERY_TOPIC_CONSUME_BY_WHO = 300
GET_SYSTEM_TOPIC_LIST_FROM_NS = 304
GET_CONSUMER_RUNNING_INFO = 307
CONSUME_MESSAGE_DIRECTLY = 309
UPDATE_NAMESRV_CONFIG = 318
GET_NAMESRV_CONFIG = 319
QUERY_DATA_VERSION = 322
GET_TOPIC_CONFIG = 351
GET_PRODUCER_CONNECTION_LIST = 204
UPDATE_AND_CREATE_SUBSCRIPTIONGROUP = 200
GET_ALL_SUBSCRIPTIONGROUP_CONFIG = 201
GET_BROKER_CONSUME_STATS = 317
VIEW_BROKER_STATS_DATA = 315
QUERY_CONSUME_QUEUE = 321
GET_ALL_PRODUCER_INFO = 328
GET_BROKER_CLUSTER_ACL_CONFIG = 54

#: Request bodies by request code.
REQUEST_BODY_TYPES: Mapping[int, type[JsonBody]] = MappingProxyType(
    {
        HEART_BEAT: HeartbeatData,
        RequestCode.CHECK_CLIENT_CONFIG: CheckClientRequestBody,
        LOCK_BATCH_MQ: LockBatchRequestBody,
        UNLOCK_BATCH_MQ: UnlockBatchRequestBody,
        REGISTER_BROKER: RegisterBrokerBody,
        RESET_CONSUMER_CLIENT_OFFSET: ResetOffsetBody,
        QUERY_DATA_VERSION: DataVersion,
        UPDATE_AND_CREATE_SUBSCRIPTIONGROUP: SubscriptionGroupConfig,
        RequestCode.AUTH_CREATE_USER: UserInfo,
        RequestCode.AUTH_UPDATE_USER: UserInfo,
        RequestCode.AUTH_CREATE_ACL: AclInfo,
        RequestCode.AUTH_UPDATE_ACL: AclInfo,
        RequestCode.SET_MESSAGE_REQUEST_MODE: SetMessageRequestModeRequestBody,
        RequestCode.BATCH_ACK_MESSAGE: BatchAckMessageRequestBody,
        RequestCode.QUERY_ASSIGNMENT: QueryAssignmentRequestBody,
    }
)

#: Bodies of successful responses, by the code of the request they answer.
RESPONSE_BODY_TYPES: Mapping[int, type[JsonBody]] = MappingProxyType(
    {
        GET_ALL_TOPIC_CONFIG: TopicConfigSerializeWrapper,  # or the 5.x subclass, see decode_response_body
        GET_BROKER_RUNTIME_INFO: KVTable,
        GET_CONSUMER_LIST_BY_GROUP: GetConsumerListByGroupResponseBody,
        LOCK_BATCH_MQ: LockBatchResponseBody,
        GET_ALL_CONSUMER_OFFSET: ConsumerOffsetSerializeWrapper,
        REGISTER_BROKER: KVTable,  # the ORDER_TOPIC_CONFIG namespace
        GET_ROUTEINFO_BY_TOPIC: TopicRouteData,
        GET_BROKER_CLUSTER_INFO: ClusterInfo,
        GET_TOPIC_STATS_INFO: TopicStatsTable,
        GET_CONSUMER_CONNECTION_LIST: ConsumerConnection,
        GET_PRODUCER_CONNECTION_LIST: ProducerConnection,
        GET_ALL_TOPIC_LIST_FROM_NAMESERVER: TopicList,
        GET_CONSUME_STATS: ConsumeStats,
        GET_KVLIST_BY_NAMESPACE: KVTable,
        INVOKE_BROKER_TO_RESET_OFFSET: ResetOffsetBody,
        GET_TOPICS_BY_CLUSTER: TopicList,
        QUERY_TOPIC_CONSUME_BY_WHO: GroupList,
        GET_SYSTEM_TOPIC_LIST_FROM_NS: TopicList,
        GET_CONSUMER_RUNNING_INFO: ConsumerRunningInfo,
        CONSUME_MESSAGE_DIRECTLY: ConsumeMessageDirectlyResult,
        QUERY_DATA_VERSION: DataVersion,
        GET_TOPIC_CONFIG: TopicConfigAndQueueMapping,
        GET_ALL_SUBSCRIPTIONGROUP_CONFIG: SubscriptionGroupWrapper,
        GET_BROKER_CONSUME_STATS: ConsumeStatsList,
        VIEW_BROKER_STATS_DATA: BrokerStatsData,
        QUERY_CONSUME_QUEUE: QueryConsumeQueueResponseBody,
        GET_ALL_PRODUCER_INFO: ProducerTableInfo,
        GET_BROKER_CLUSTER_ACL_CONFIG: GetBrokerClusterAclConfigResponseBody,
        RequestCode.AUTH_GET_USER: UserInfo,
        RequestCode.AUTH_LIST_USER: UserInfoList,  # a JSON array
        RequestCode.AUTH_GET_ACL: AclInfo,
        RequestCode.AUTH_LIST_ACL: AclInfoList,  # a JSON array
        RequestCode.GET_ALL_MESSAGE_REQUEST_MODE: MessageRequestModeSerializeWrapper,
        RequestCode.QUERY_ASSIGNMENT: QueryAssignmentResponseBody,
        RequestCode.GET_BROKER_LITE_INFO: GetBrokerLiteInfoResponseBody,
        RequestCode.GET_PARENT_TOPIC_INFO: GetParentTopicInfoResponseBody,
        RequestCode.GET_LITE_TOPIC_INFO: GetLiteTopicInfoResponseBody,
        RequestCode.GET_LITE_GROUP_INFO: GetLiteGroupInfoResponseBody,
        RequestCode.GET_LITE_CLIENT_INFO: GetLiteClientInfoResponseBody,
        RequestCode.GET_TIMER_METRICS: TimerMetricsBody,
    }
)


#: Codes whose request (UPDATE_*) or response (GET_*) body is ``key=value`` text.
PROPERTIES_REQUEST_CODES = frozenset({UPDATE_BROKER_CONFIG, UPDATE_NAMESRV_CONFIG})
PROPERTIES_RESPONSE_CODES = frozenset({GET_BROKER_CONFIG, GET_NAMESRV_CONFIG})


def decode_request_body(
    code: int, body: bytes, fields: Mapping[str, str]
) -> JsonBody | PropertiesBody | None:
    """The typed body of a request, or ``None`` for codes without a known body type.

    ``fields`` are the request's ext fields: REGISTER_BROKER's ``compressed`` picks the body's form.
    """
    if code in PROPERTIES_REQUEST_CODES and body:
        return PropertiesBody.from_text(body)
    body_type = REQUEST_BODY_TYPES.get(code)
    if body_type is None or not body:
        return None
    if body_type is RegisterBrokerBody:
        return RegisterBrokerBody.decode(body, compressed=fields.get("compressed") == "true")
    return body_type.from_json(body)


def decode_response_body(request_code: int, body: bytes) -> JsonBody | PropertiesBody | None:
    """The typed body of a successful response to ``request_code``, or ``None`` if unknown or empty."""
    if request_code in PROPERTIES_RESPONSE_CODES and body:
        return PropertiesBody.from_text(body)
    body_type = RESPONSE_BODY_TYPES.get(request_code)
    if body_type is None or not body:
        return None
    if body_type is TopicConfigSerializeWrapper:
        return read_topic_config_wrapper(Fields(fastjson.loads(body), "TopicConfigSerializeWrapper"))
    return body_type.from_json(body)
