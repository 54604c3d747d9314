"""Headers of client management and consumer coordination.

Heartbeats, queue locks and the like carry their payload in the body; their headers hold only the
inherited routing fields, but Java still sends (and a 5.x proxy reads) those, so they are typed here too.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from rocketmq_wire.codes import RequestCode
from rocketmq_wire.headers.base import jbool, jint, jlong, jstr
from rocketmq_wire.headers.rpc import RpcRequestHeader, TopicRequestHeader


@dataclasses.dataclass(slots=True, kw_only=True)
class HeartbeatRequestHeader(RpcRequestHeader):
    """HEART_BEAT; the producer and consumer groups are in the heartbeat body."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.HEART_BEAT,)


@dataclasses.dataclass(slots=True, kw_only=True)
class UnregisterClientRequestHeader(RpcRequestHeader):
    """UNREGISTER_CLIENT: one request per group the client leaves (``clientID`` keeps Java's casing)."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.UNREGISTER_CLIENT,)

    client_id: str | None = jstr("clientID", required=True)
    producer_group: str | None = jstr("producerGroup")
    consumer_group: str | None = jstr("consumerGroup")


@dataclasses.dataclass(slots=True, kw_only=True)
class GetConsumerListByGroupRequestHeader(RpcRequestHeader):
    """GET_CONSUMER_LIST_BY_GROUP; the ids come back in the body, the response has no header fields."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.GET_CONSUMER_LIST_BY_GROUP,)

    consumer_group: str | None = jstr("consumerGroup", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class NotifyConsumerIdsChangedRequestHeader(RpcRequestHeader):
    """NOTIFY_CONSUMER_IDS_CHANGED, a oneway broker-to-client nudge to rebalance now."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.NOTIFY_CONSUMER_IDS_CHANGED,)

    consumer_group: str | None = jstr("consumerGroup", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class ConsumerSendMsgBackRequestHeader(RpcRequestHeader):
    """CONSUMER_SEND_MSG_BACK: a failed message goes to the retry topic (or the DLQ past the retry limit).

    ``offset`` is the message's commit-log offset, ``delayLevel`` 0 lets the broker pick from the
    reconsume count.
    """

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.CONSUMER_SEND_MSG_BACK,)

    offset: int | None = jlong("offset", required=True)
    group: str | None = jstr("group", required=True)
    delay_level: int | None = jint("delayLevel", required=True)
    origin_msg_id: str | None = jstr("originMsgId")
    origin_topic: str | None = jstr("originTopic")
    unit_mode: bool | None = jbool("unitMode")
    max_reconsume_times: int | None = jint("maxReconsumeTimes")


@dataclasses.dataclass(slots=True, kw_only=True)
class LockBatchMqRequestHeader(RpcRequestHeader):
    """LOCK_BATCH_MQ (orderly consumption); the queues to lock are the body."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.LOCK_BATCH_MQ,)


@dataclasses.dataclass(slots=True, kw_only=True)
class UnlockBatchMqRequestHeader(RpcRequestHeader):
    """UNLOCK_BATCH_MQ; the queues to unlock are the body."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.UNLOCK_BATCH_MQ,)


@dataclasses.dataclass(slots=True, kw_only=True)
class GetConsumerConnectionListRequestHeader(RpcRequestHeader):
    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.GET_CONSUMER_CONNECTION_LIST,)

    consumer_group: str | None = jstr("consumerGroup", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class GetProducerConnectionListRequestHeader(RpcRequestHeader):
    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.GET_PRODUCER_CONNECTION_LIST,)

    producer_group: str | None = jstr("producerGroup", required=True)


@dataclasses.dataclass(slots=True, kw_only=True)
class GetConsumeStatsRequestHeader(TopicRequestHeader):
    """GET_CONSUME_STATS; without ``topic`` the broker reports every topic the group subscribes to."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.GET_CONSUME_STATS,)

    consumer_group: str | None = jstr("consumerGroup", required=True)
    topic: str | None = jstr("topic")


@dataclasses.dataclass(slots=True, kw_only=True)
class GetConsumerRunningInfoRequestHeader(RpcRequestHeader):
    """GET_CONSUMER_RUNNING_INFO, relayed by the broker to the client named by ``clientId``."""

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.GET_CONSUMER_RUNNING_INFO,)

    consumer_group: str | None = jstr("consumerGroup", required=True)
    client_id: str | None = jstr("clientId", required=True)
    jstack_enable: bool | None = jbool("jstackEnable")


@dataclasses.dataclass(slots=True, kw_only=True)
class ConsumeMessageDirectlyResultRequestHeader(TopicRequestHeader):
    """CONSUME_MESSAGE_DIRECTLY: ask a client to consume one message now (the message is the body).

    Its own ``brokerName`` is distinct from the inherited ``bname``.
    """

    REQUEST_CODES: ClassVar[tuple[int, ...]] = (RequestCode.CONSUME_MESSAGE_DIRECTLY,)

    consumer_group: str | None = jstr("consumerGroup", required=True)
    client_id: str | None = jstr("clientId")
    msg_id: str | None = jstr("msgId")
    broker_name: str | None = jstr("brokerName")
    topic: str | None = jstr("topic")
    topic_sys_flag: int | None = jint("topicSysFlag")
    group_sys_flag: int | None = jint("groupSysFlag")
