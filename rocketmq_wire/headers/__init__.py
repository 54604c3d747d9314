"""Typed custom headers, one module per area, and the lookups the codec and the servers need.

``FAST_PATH_HEADERS`` lists the headers the ROCKETMQ binary serialization writes field by field ahead of
the ext map; ``header_for_request`` maps a request code to the header class Java decodes it with, and
``header_for_response`` a request code to the header class of its successful response.
"""

from __future__ import annotations

import types
from collections.abc import Mapping

from rocketmq_wire.codes import RequestCode
from rocketmq_wire.headers.acl import (
    CreateAccessConfigRequestHeader,
    DeleteAccessConfigRequestHeader,
    GetBrokerAclConfigResponseHeader,
    UpdateGlobalWhiteAddrsConfigRequestHeader,
)
from rocketmq_wire.headers.admin import (
    CloneGroupOffsetRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    GetAllProducerInfoRequestHeader,
    GetBrokerConfigResponseHeader,
    GetConsumeStatsInBrokerHeader,
    GetSubscriptionGroupConfigRequestHeader,
    ViewBrokerStatsDataRequestHeader,
)
from rocketmq_wire.headers.auth import (
    CreateAclRequestHeader,
    CreateUserRequestHeader,
    DeleteAclRequestHeader,
    DeleteUserRequestHeader,
    GetAclRequestHeader,
    GetUserRequestHeader,
    ListAclsRequestHeader,
    ListUsersRequestHeader,
    UpdateAclRequestHeader,
    UpdateUserRequestHeader,
)
from rocketmq_wire.headers.base import CommandHeader
from rocketmq_wire.headers.consumer import (
    ConsumeMessageDirectlyResultRequestHeader,
    ConsumerSendMsgBackRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumerListByGroupRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetConsumeStatsRequestHeader,
    GetProducerConnectionListRequestHeader,
    HeartbeatRequestHeader,
    LockBatchMqRequestHeader,
    NotifyConsumerIdsChangedRequestHeader,
    UnlockBatchMqRequestHeader,
    UnregisterClientRequestHeader,
)
from rocketmq_wire.headers.lite import (
    GetLiteClientInfoRequestHeader,
    GetLiteGroupInfoRequestHeader,
    GetLiteTopicInfoRequestHeader,
    GetParentTopicInfoRequestHeader,
    TriggerLiteDispatchRequestHeader,
)
from rocketmq_wire.headers.namesrv import (
    AddWritePermOfBrokerRequestHeader,
    AddWritePermOfBrokerResponseHeader,
    BrokerHeartbeatRequestHeader,
    DeleteKVConfigRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    PutKVConfigRequestHeader,
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    RegisterTopicRequestHeader,
    UnRegisterBrokerRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)
from rocketmq_wire.headers.offset import (
    GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    ResetOffsetRequestHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketmq_wire.headers.pop import (
    AckMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    NotificationRequestHeader,
    NotificationResponseHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
)
from rocketmq_wire.headers.pull import PullMessageRequestHeader, PullMessageResponseHeader
from rocketmq_wire.headers.query import (
    QueryConsumeQueueRequestHeader,
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    ViewMessageRequestHeader,
)
from rocketmq_wire.headers.rpc import RpcRequestHeader, TopicRequestHeader
from rocketmq_wire.headers.send import (
    RecallMessageRequestHeader,
    RecallMessageResponseHeader,
    ReplyMessageRequestHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
)
from rocketmq_wire.headers.topic import (
    CreateTopicRequestHeader,
    DeleteTopicRequestHeader,
    GetAllTopicConfigRequestHeader,
    GetTopicConfigRequestHeader,
    GetTopicStatsInfoRequestHeader,
    QueryTopicConsumeByWhoRequestHeader,
)
from rocketmq_wire.headers.transaction import (
    CheckTransactionStateRequestHeader,
    EndTransactionRequestHeader,
    TransactionType,
)

#: Headers with a binary fast path, in no particular order (each knows its own field order).
FAST_PATH_HEADERS: tuple[type[CommandHeader], ...] = (
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
)

#: Every concrete header class, requests and responses.
ALL_HEADERS: tuple[type[CommandHeader], ...] = (
    AckMessageRequestHeader,
    RecallMessageRequestHeader,
    RecallMessageResponseHeader,
    ReplyMessageRequestHeader,
    ChangeInvisibleTimeRequestHeader,
    ChangeInvisibleTimeResponseHeader,
    PopMessageRequestHeader,
    PopMessageResponseHeader,
    NotificationRequestHeader,
    NotificationResponseHeader,
    GetParentTopicInfoRequestHeader,
    GetLiteTopicInfoRequestHeader,
    GetLiteGroupInfoRequestHeader,
    GetLiteClientInfoRequestHeader,
    TriggerLiteDispatchRequestHeader,
    CreateAccessConfigRequestHeader,
    DeleteAccessConfigRequestHeader,
    GetBrokerAclConfigResponseHeader,
    UpdateGlobalWhiteAddrsConfigRequestHeader,
    CreateUserRequestHeader,
    UpdateUserRequestHeader,
    DeleteUserRequestHeader,
    GetUserRequestHeader,
    ListUsersRequestHeader,
    CreateAclRequestHeader,
    UpdateAclRequestHeader,
    DeleteAclRequestHeader,
    GetAclRequestHeader,
    ListAclsRequestHeader,
    AddWritePermOfBrokerRequestHeader,
    AddWritePermOfBrokerResponseHeader,
    BrokerHeartbeatRequestHeader,
    RegisterTopicRequestHeader,
    CheckTransactionStateRequestHeader,
    CloneGroupOffsetRequestHeader,
    ConsumeMessageDirectlyResultRequestHeader,
    ConsumerSendMsgBackRequestHeader,
    CreateTopicRequestHeader,
    DeleteKVConfigRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    DeleteTopicRequestHeader,
    EndTransactionRequestHeader,
    GetAllProducerInfoRequestHeader,
    GetAllTopicConfigRequestHeader,
    GetBrokerConfigResponseHeader,
    GetConsumeStatsInBrokerHeader,
    GetConsumeStatsRequestHeader,
    GetSubscriptionGroupConfigRequestHeader,
    GetConsumerConnectionListRequestHeader,
    GetConsumerListByGroupRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    GetEarliestMsgStoretimeRequestHeader,
    GetEarliestMsgStoretimeResponseHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    GetMaxOffsetRequestHeader,
    GetMaxOffsetResponseHeader,
    GetMinOffsetRequestHeader,
    GetMinOffsetResponseHeader,
    GetProducerConnectionListRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicConfigRequestHeader,
    GetTopicStatsInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    HeartbeatRequestHeader,
    LockBatchMqRequestHeader,
    NotifyConsumerIdsChangedRequestHeader,
    PullMessageRequestHeader,
    PullMessageResponseHeader,
    PutKVConfigRequestHeader,
    QueryConsumeQueueRequestHeader,
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    QueryMessageRequestHeader,
    QueryMessageResponseHeader,
    QueryTopicConsumeByWhoRequestHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    ResetOffsetRequestHeader,
    SearchOffsetRequestHeader,
    SearchOffsetResponseHeader,
    SendMessageRequestHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
    UnRegisterBrokerRequestHeader,
    UnlockBatchMqRequestHeader,
    UnregisterClientRequestHeader,
    UpdateConsumerOffsetRequestHeader,
    ViewBrokerStatsDataRequestHeader,
    ViewMessageRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)


def _request_registry(classes: tuple[type[CommandHeader], ...]) -> Mapping[int, type[CommandHeader]]:
    """Code -> header class, refusing two classes for one code (that would make decoding ambiguous)."""
    registry: dict[int, type[CommandHeader]] = {}
    for cls in classes:
        for code in cls.REQUEST_CODES:
            other = registry.setdefault(int(code), cls)
            if other is not cls:
                raise RuntimeError(f"request code {code} claimed by {other.__name__} and {cls.__name__}")
    return types.MappingProxyType(registry)


#: Read-only map from request code to the header class of that request.
REQUEST_HEADERS: Mapping[int, type[CommandHeader]] = _request_registry(ALL_HEADERS)


def header_for_request(code: int) -> type[CommandHeader] | None:
    """The header class Java decodes a request of this code with; ``None`` when it has no typed header."""
    return REQUEST_HEADERS.get(int(code))


def _response_registry() -> Mapping[int, type[CommandHeader]]:
    """Request code -> header class of a successful response to it (responses say nothing of their kind)."""
    pairs: tuple[tuple[tuple[int, ...], type[CommandHeader]], ...] = (
        (
            (
                RequestCode.SEND_MESSAGE,
                RequestCode.SEND_MESSAGE_V2,
                RequestCode.SEND_BATCH_MESSAGE,
                RequestCode.SEND_REPLY_MESSAGE,
                RequestCode.SEND_REPLY_MESSAGE_V2,
            ),
            SendMessageResponseHeader,
        ),
        ((RequestCode.PULL_MESSAGE, RequestCode.LITE_PULL_MESSAGE), PullMessageResponseHeader),
        ((RequestCode.QUERY_MESSAGE,), QueryMessageResponseHeader),
        ((RequestCode.QUERY_CONSUMER_OFFSET,), QueryConsumerOffsetResponseHeader),
        ((RequestCode.GET_BROKER_CONFIG,), GetBrokerConfigResponseHeader),
        ((RequestCode.SEARCH_OFFSET_BY_TIMESTAMP,), SearchOffsetResponseHeader),
        ((RequestCode.GET_MAX_OFFSET,), GetMaxOffsetResponseHeader),
        ((RequestCode.GET_MIN_OFFSET,), GetMinOffsetResponseHeader),
        ((RequestCode.GET_EARLIEST_MSG_STORETIME,), GetEarliestMsgStoretimeResponseHeader),
        ((RequestCode.GET_KV_CONFIG,), GetKVConfigResponseHeader),
        ((RequestCode.REGISTER_BROKER,), RegisterBrokerResponseHeader),
        ((RequestCode.WIPE_WRITE_PERM_OF_BROKER,), WipeWritePermOfBrokerResponseHeader),
        ((RequestCode.ADD_WRITE_PERM_OF_BROKER,), AddWritePermOfBrokerResponseHeader),
        ((RequestCode.QUERY_DATA_VERSION,), QueryDataVersionResponseHeader),
        ((RequestCode.GET_BROKER_CLUSTER_ACL_INFO,), GetBrokerAclConfigResponseHeader),
        ((RequestCode.POP_MESSAGE,), PopMessageResponseHeader),
        ((RequestCode.CHANGE_MESSAGE_INVISIBLETIME,), ChangeInvisibleTimeResponseHeader),
        ((RequestCode.NOTIFICATION,), NotificationResponseHeader),
        ((RequestCode.RECALL_MESSAGE,), RecallMessageResponseHeader),
    )
    return types.MappingProxyType({int(code): cls for codes, cls in pairs for code in codes})


#: Read-only map from a request code to the header class of the response to it.
RESPONSE_HEADERS: Mapping[int, type[CommandHeader]] = _response_registry()


def header_for_response(request_code: int) -> type[CommandHeader] | None:
    """The header class of a response to a request of this code; ``None`` when such responses have none.

    Error responses (QUERY_NOT_FOUND, SYSTEM_ERROR, ...) usually carry no header even when a successful one
    does; the pull's PULL_NOT_FOUND / PULL_RETRY_IMMEDIATELY / PULL_OFFSET_MOVED are the exception, and so
    are a pop's PULL_NOT_FOUND / POLLING_FULL / POLLING_TIMEOUT when the broker answered them itself.
    """
    return RESPONSE_HEADERS.get(int(request_code))


__all__ = [
    "ALL_HEADERS",
    "FAST_PATH_HEADERS",
    "REQUEST_HEADERS",
    "RESPONSE_HEADERS",
    "AckMessageRequestHeader",
    "AddWritePermOfBrokerRequestHeader",
    "AddWritePermOfBrokerResponseHeader",
    "BrokerHeartbeatRequestHeader",
    "ChangeInvisibleTimeRequestHeader",
    "ChangeInvisibleTimeResponseHeader",
    "CheckTransactionStateRequestHeader",
    "CloneGroupOffsetRequestHeader",
    "CommandHeader",
    "ConsumeMessageDirectlyResultRequestHeader",
    "ConsumerSendMsgBackRequestHeader",
    "CreateAccessConfigRequestHeader",
    "CreateAclRequestHeader",
    "CreateTopicRequestHeader",
    "CreateUserRequestHeader",
    "DeleteAccessConfigRequestHeader",
    "DeleteAclRequestHeader",
    "DeleteKVConfigRequestHeader",
    "DeleteSubscriptionGroupRequestHeader",
    "DeleteTopicFromNamesrvRequestHeader",
    "DeleteTopicRequestHeader",
    "DeleteUserRequestHeader",
    "EndTransactionRequestHeader",
    "GetAclRequestHeader",
    "GetAllProducerInfoRequestHeader",
    "GetAllTopicConfigRequestHeader",
    "GetBrokerAclConfigResponseHeader",
    "GetBrokerConfigResponseHeader",
    "GetConsumeStatsInBrokerHeader",
    "GetConsumeStatsRequestHeader",
    "GetConsumerConnectionListRequestHeader",
    "GetConsumerListByGroupRequestHeader",
    "GetConsumerRunningInfoRequestHeader",
    "GetEarliestMsgStoretimeRequestHeader",
    "GetEarliestMsgStoretimeResponseHeader",
    "GetKVConfigRequestHeader",
    "GetKVConfigResponseHeader",
    "GetKVListByNamespaceRequestHeader",
    "GetLiteClientInfoRequestHeader",
    "GetLiteGroupInfoRequestHeader",
    "GetLiteTopicInfoRequestHeader",
    "GetMaxOffsetRequestHeader",
    "GetMaxOffsetResponseHeader",
    "GetMinOffsetRequestHeader",
    "GetMinOffsetResponseHeader",
    "GetParentTopicInfoRequestHeader",
    "GetProducerConnectionListRequestHeader",
    "GetRouteInfoRequestHeader",
    "GetSubscriptionGroupConfigRequestHeader",
    "GetTopicConfigRequestHeader",
    "GetTopicStatsInfoRequestHeader",
    "GetTopicsByClusterRequestHeader",
    "GetUserRequestHeader",
    "HeartbeatRequestHeader",
    "ListAclsRequestHeader",
    "ListUsersRequestHeader",
    "LockBatchMqRequestHeader",
    "NotificationRequestHeader",
    "NotificationResponseHeader",
    "NotifyConsumerIdsChangedRequestHeader",
    "PopMessageRequestHeader",
    "PopMessageResponseHeader",
    "PullMessageRequestHeader",
    "PullMessageResponseHeader",
    "PutKVConfigRequestHeader",
    "QueryConsumeQueueRequestHeader",
    "QueryConsumerOffsetRequestHeader",
    "QueryConsumerOffsetResponseHeader",
    "QueryDataVersionRequestHeader",
    "QueryDataVersionResponseHeader",
    "QueryMessageRequestHeader",
    "QueryMessageResponseHeader",
    "QueryTopicConsumeByWhoRequestHeader",
    "RecallMessageRequestHeader",
    "RecallMessageResponseHeader",
    "RegisterBrokerRequestHeader",
    "RegisterBrokerResponseHeader",
    "RegisterTopicRequestHeader",
    "ReplyMessageRequestHeader",
    "ResetOffsetRequestHeader",
    "RpcRequestHeader",
    "SearchOffsetRequestHeader",
    "SearchOffsetResponseHeader",
    "SendMessageRequestHeader",
    "SendMessageRequestHeaderV2",
    "SendMessageResponseHeader",
    "TopicRequestHeader",
    "TransactionType",
    "TriggerLiteDispatchRequestHeader",
    "UnRegisterBrokerRequestHeader",
    "UnlockBatchMqRequestHeader",
    "UnregisterClientRequestHeader",
    "UpdateAclRequestHeader",
    "UpdateConsumerOffsetRequestHeader",
    "UpdateGlobalWhiteAddrsConfigRequestHeader",
    "UpdateUserRequestHeader",
    "ViewBrokerStatsDataRequestHeader",
    "ViewMessageRequestHeader",
    "WipeWritePermOfBrokerRequestHeader",
    "WipeWritePermOfBrokerResponseHeader",
    "header_for_request",
    "header_for_response",
]
