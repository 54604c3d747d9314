"""Typed JSON bodies, written byte for byte as Java's ``RemotingSerializable.encode`` (fastjson) does.

Every class has ``to_json() -> bytes`` and ``from_json(data)``; attributes are snake_case, the JSON names
Java's. Fields a 5.x class added and 4.x lacks are ``None`` when absent, and left out when written.
"""

from rocketmq_wire.bodies.acl import GetBrokerClusterAclConfigResponseBody, PlainAccessConfig
from rocketmq_wire.bodies.auth import (
    AclInfo,
    AclInfoList,
    PolicyEntryInfo,
    PolicyInfo,
    UserInfo,
    UserInfoList,
)
from rocketmq_wire.bodies.base import JsonBody
from rocketmq_wire.bodies.cluster import ClusterInfo
from rocketmq_wire.bodies.consume_queue import ConsumeQueueData, QueryConsumeQueueResponseBody
from rocketmq_wire.bodies.consumer import (
    CheckClientRequestBody,
    Connection,
    ConsumerConnection,
    ConsumerOffsetSerializeWrapper,
    GetConsumerListByGroupResponseBody,
    GroupList,
    OffsetSerializeWrapper,
    ProducerConnection,
    ProducerInfo,
    ProducerTableInfo,
    ResetOffsetBody,
)
from rocketmq_wire.bodies.heartbeat import (
    ConsumeFromWhere,
    ConsumerData,
    ConsumeType,
    HeartbeatData,
    MessageModel,
    ProducerData,
    SubscriptionData,
)
from rocketmq_wire.bodies.java_collections import JavaMap, JavaSet
from rocketmq_wire.bodies.kv import KVTable
from rocketmq_wire.bodies.lite import (
    ClientGroup,
    GetBrokerLiteInfoResponseBody,
    GetLiteClientInfoResponseBody,
    GetLiteGroupInfoResponseBody,
    GetLiteTopicInfoResponseBody,
    GetParentTopicInfoResponseBody,
    LiteLagInfo,
)
from rocketmq_wire.bodies.lock import LockBatchRequestBody, LockBatchResponseBody, UnlockBatchRequestBody
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.bodies.pop import (
    BatchAck,
    BatchAckMessageRequestBody,
    MessageQueueAssignment,
    MessageRequestMode,
    MessageRequestModeSerializeWrapper,
    QueryAssignmentRequestBody,
    QueryAssignmentResponseBody,
    SetMessageRequestModeRequestBody,
)
from rocketmq_wire.bodies.properties_text import PropertiesBody
from rocketmq_wire.bodies.register_broker import RegisterBrokerBody
from rocketmq_wire.bodies.registry import (
    REQUEST_BODY_TYPES,
    RESPONSE_BODY_TYPES,
    decode_request_body,
    decode_response_body,
)
from rocketmq_wire.bodies.route import BrokerData, QueueData, TopicRouteData
from rocketmq_wire.bodies.running_info import (
    CMResult,
    ConsumeMessageDirectlyResult,
    ConsumerRunningInfo,
    PopProcessQueueInfo,
    ProcessQueueInfo,
    TopicConsumeStatus,
)
from rocketmq_wire.bodies.static_topic import (
    LogicQueueMappingItem,
    TopicQueueMappingDetail,
    TopicQueueMappingInfo,
)
from rocketmq_wire.bodies.stats import (
    BrokerStatsData,
    BrokerStatsItem,
    ConsumeStats,
    OffsetWrapper,
    TopicOffset,
    TopicStatsTable,
)
from rocketmq_wire.bodies.subscription import build_subscription
from rocketmq_wire.bodies.subscription_group import (
    ConsumeStatsList,
    SubscriptionGroupConfig,
    SubscriptionGroupWrapper,
)
from rocketmq_wire.bodies.topic_config import (
    DataVersion,
    TopicConfig,
    TopicConfigAndMappingSerializeWrapper,
    TopicConfigAndQueueMapping,
    TopicConfigSerializeWrapper,
    TopicList,
)

__all__ = [
    "REQUEST_BODY_TYPES",
    "RESPONSE_BODY_TYPES",
    "AclInfo",
    "AclInfoList",
    "BatchAck",
    "BatchAckMessageRequestBody",
    "BrokerData",
    "BrokerStatsData",
    "BrokerStatsItem",
    "CMResult",
    "CheckClientRequestBody",
    "ClientGroup",
    "ClusterInfo",
    "Connection",
    "ConsumeFromWhere",
    "ConsumeMessageDirectlyResult",
    "ConsumeQueueData",
    "ConsumeStats",
    "ConsumeStatsList",
    "ConsumeType",
    "ConsumerConnection",
    "ConsumerData",
    "ConsumerOffsetSerializeWrapper",
    "ConsumerRunningInfo",
    "DataVersion",
    "GetBrokerClusterAclConfigResponseBody",
    "GetBrokerLiteInfoResponseBody",
    "GetConsumerListByGroupResponseBody",
    "GetLiteClientInfoResponseBody",
    "GetLiteGroupInfoResponseBody",
    "GetLiteTopicInfoResponseBody",
    "GetParentTopicInfoResponseBody",
    "GroupList",
    "HeartbeatData",
    "JavaMap",
    "JavaSet",
    "JsonBody",
    "KVTable",
    "LiteLagInfo",
    "LockBatchRequestBody",
    "LockBatchResponseBody",
    "LogicQueueMappingItem",
    "MessageModel",
    "MessageQueue",
    "MessageQueueAssignment",
    "MessageRequestMode",
    "MessageRequestModeSerializeWrapper",
    "OffsetSerializeWrapper",
    "OffsetWrapper",
    "PlainAccessConfig",
    "PolicyEntryInfo",
    "PolicyInfo",
    "PopProcessQueueInfo",
    "ProcessQueueInfo",
    "ProducerConnection",
    "ProducerData",
    "ProducerInfo",
    "ProducerTableInfo",
    "PropertiesBody",
    "QueryAssignmentRequestBody",
    "QueryAssignmentResponseBody",
    "QueryConsumeQueueResponseBody",
    "QueueData",
    "RegisterBrokerBody",
    "ResetOffsetBody",
    "SetMessageRequestModeRequestBody",
    "SubscriptionData",
    "SubscriptionGroupConfig",
    "SubscriptionGroupWrapper",
    "TopicConfig",
    "TopicConfigAndMappingSerializeWrapper",
    "TopicConfigAndQueueMapping",
    "TopicConfigSerializeWrapper",
    "TopicConsumeStatus",
    "TopicList",
    "TopicOffset",
    "TopicQueueMappingDetail",
    "TopicQueueMappingInfo",
    "TopicRouteData",
    "TopicStatsTable",
    "UnlockBatchRequestBody",
    "UserInfo",
    "UserInfoList",
    "build_subscription",
    "decode_request_body",
    "decode_response_body",
]
