"""The requests a consumer sends, built exactly as Java's ``MQClientAPIImpl`` builds them; no I/O.

Kept apart from the code that sends them so each can be compared byte for byte with the captured Java frames
(``tests/unit/test_consumer_golden.py``): header fields, which optional ones a 4.9.x or a 5.x client sets,
the ``bname`` routing field, the heartbeat body with the inner producer group.
"""

from __future__ import annotations

import dataclasses

from client.heartbeat import heartbeat_body, heartbeat_request
from client.heartbeat import unregister_request as unregister_request  # UNREGISTER_CLIENT, one group
from rocketmq_wire.bodies.consumer import CheckClientRequestBody
from rocketmq_wire.bodies.heartbeat import ConsumerData, SubscriptionData
from rocketmq_wire.bodies.lock import LockBatchRequestBody, UnlockBatchRequestBody
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.codes import MQVersion, RequestCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.headers.consumer import (
    ConsumerSendMsgBackRequestHeader,
    GetConsumerListByGroupRequestHeader,
)
from rocketmq_wire.headers.offset import (
    GetMaxOffsetRequestHeader,
    GetMinOffsetRequestHeader,
    QueryConsumerOffsetRequestHeader,
    SearchOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketmq_wire.headers.pull import PullMessageRequestHeader
from rocketmq_wire.message import MessageExt

_V5_0_0 = MQVersion.NAMES.index("V5_0_0")


def is_v5(version: int) -> bool:
    """Whether ``version`` announces a 5.x client (which adds fields 4.x clients never send)."""
    return version >= _V5_0_0


def _topic(queue: MessageQueue) -> str:
    if queue.topic is None or queue.broker_name is None:
        raise ValueError(f"{queue} names no topic or no broker")
    return queue.topic


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class PullSpec:
    """What one pull asks for, apart from where (the queue) and from which offset."""

    group: str
    max_nums: int
    sys_flag: int
    commit_offset: int
    suspend_timeout_ms: int
    subscription: str | None
    sub_version: int
    expression_type: str | None
    #: ``maxMsgBytes``: set by 5.x clients only (``None`` leaves it out).
    max_msg_bytes: int | None = None
    #: LITE_PULL_MESSAGE (a lite pull consumer) rather than PULL_MESSAGE.
    lite: bool = False


def pull_request(spec: PullSpec, queue: MessageQueue, offset: int) -> RemotingCommand:
    """PULL_MESSAGE (or LITE_PULL_MESSAGE) for ``queue`` from ``offset``."""
    header = PullMessageRequestHeader(
        consumer_group=spec.group,
        topic=_topic(queue),
        queue_id=queue.queue_id,
        queue_offset=offset,
        max_msg_nums=spec.max_nums,
        sys_flag=spec.sys_flag,
        commit_offset=spec.commit_offset,
        suspend_timeout_millis=spec.suspend_timeout_ms,
        subscription=spec.subscription,
        sub_version=spec.sub_version,
        expression_type=spec.expression_type,
        max_msg_bytes=spec.max_msg_bytes,
        bname=queue.broker_name,
    )
    code = RequestCode.LITE_PULL_MESSAGE if spec.lite else RequestCode.PULL_MESSAGE
    return RemotingCommand.request(code, header)


def query_offset_request(
    group: str, queue: MessageQueue, *, zero_if_not_found: bool | None = None
) -> RemotingCommand:
    """QUERY_CONSUMER_OFFSET; ``zero_if_not_found=False`` is the 5.x way to learn a group never committed."""
    header = QueryConsumerOffsetRequestHeader(
        consumer_group=group,
        topic=_topic(queue),
        queue_id=queue.queue_id,
        set_zero_if_not_found=zero_if_not_found,
        bname=queue.broker_name,
    )
    return RemotingCommand.request(RequestCode.QUERY_CONSUMER_OFFSET, header)


def update_offset_request(group: str, queue: MessageQueue, offset: int) -> RemotingCommand:
    """UPDATE_CONSUMER_OFFSET (Java sends it oneway when persisting on its timer)."""
    header = UpdateConsumerOffsetRequestHeader(
        consumer_group=group,
        topic=_topic(queue),
        queue_id=queue.queue_id,
        commit_offset=offset,
        bname=queue.broker_name,
    )
    return RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, header)


def min_offset_request(queue: MessageQueue) -> RemotingCommand:
    header = GetMinOffsetRequestHeader(topic=_topic(queue), queue_id=queue.queue_id, bname=queue.broker_name)
    return RemotingCommand.request(RequestCode.GET_MIN_OFFSET, header)


def max_offset_request(queue: MessageQueue, version: int) -> RemotingCommand:
    """GET_MAX_OFFSET; 5.x clients add ``committed=true`` (count only messages dispatched to the queue)."""
    header = GetMaxOffsetRequestHeader(
        topic=_topic(queue),
        queue_id=queue.queue_id,
        committed=True if is_v5(version) else None,
        bname=queue.broker_name,
    )
    return RemotingCommand.request(RequestCode.GET_MAX_OFFSET, header)


def search_offset_request(queue: MessageQueue, timestamp_ms: int) -> RemotingCommand:
    header = SearchOffsetRequestHeader(
        topic=_topic(queue), queue_id=queue.queue_id, timestamp=timestamp_ms, bname=queue.broker_name
    )
    return RemotingCommand.request(RequestCode.SEARCH_OFFSET_BY_TIMESTAMP, header)


def consumer_list_request(group: str) -> RemotingCommand:
    """GET_CONSUMER_LIST_BY_GROUP: the client ids of the group's members, to rebalance with."""
    return RemotingCommand.request(
        RequestCode.GET_CONSUMER_LIST_BY_GROUP, GetConsumerListByGroupRequestHeader(consumer_group=group)
    )


def lock_batch_request(
    group: str, client_id: str, queues: list[MessageQueue], version: int
) -> RemotingCommand:
    """LOCK_BATCH_MQ: ask one broker for the right to consume ``queues`` in order (Java sends no header,
    only the body)."""
    body = LockBatchRequestBody(
        consumer_group=group,
        client_id=client_id,
        only_this_broker=False if is_v5(version) else None,
        mq_set=list(queues),
    )
    return RemotingCommand.request(RequestCode.LOCK_BATCH_MQ, None, body.to_json())


def unlock_batch_request(
    group: str, client_id: str, queues: list[MessageQueue], version: int
) -> RemotingCommand:
    body = UnlockBatchRequestBody(
        consumer_group=group,
        client_id=client_id,
        only_this_broker=False if is_v5(version) else None,
        mq_set=list(queues),
    )
    return RemotingCommand.request(RequestCode.UNLOCK_BATCH_MQ, None, body.to_json())


def check_client_request(group: str, client_id: str, subscription: SubscriptionData) -> RemotingCommand:
    """CHECK_CLIENT_CONFIG: may ``group`` use ``subscription`` on this broker? Java sends it, body only, for
    each non-tag subscription before its consumer starts (the group and topic as on the wire, namespace
    included, and no ``namespace`` field)."""
    body = CheckClientRequestBody(client_id=client_id, group=group, subscription_data=subscription)
    return RemotingCommand.request(RequestCode.CHECK_CLIENT_CONFIG, None, body.to_json())


def send_back_request(
    message: MessageExt,
    *,
    group: str,
    delay_level: int,
    max_reconsume_times: int,
    broker_name: str | None,
) -> RemotingCommand:
    """CONSUMER_SEND_MSG_BACK: hand a failed message back to the broker, which puts it in the group's retry
    topic (delay level 0: the broker picks 3 + times already retried) or, past ``max_reconsume_times`` or
    with a negative level, in the dead-letter topic. ``message.topic`` must already be the original topic."""
    header = ConsumerSendMsgBackRequestHeader(
        offset=message.commit_log_offset,
        group=group,
        delay_level=delay_level,
        origin_msg_id=message.client_msg_id,
        origin_topic=message.topic,
        unit_mode=False,
        max_reconsume_times=max_reconsume_times,
        bname=broker_name,
    )
    return RemotingCommand.request(RequestCode.CONSUMER_SEND_MSG_BACK, header)


def consumer_heartbeat_body(client_id: str, consumer: ConsumerData | None, version: int) -> bytes:
    """The heartbeat of a client instance running one consumer group and no producer (Java's instance also
    lists its inner producer group); the instance builds it with ``client.heartbeat.heartbeat_body``."""
    return heartbeat_body(client_id, [], [] if consumer is None else [consumer], version)


def consumer_heartbeat_request(
    client_id: str, consumer: ConsumerData | None, version: int
) -> RemotingCommand:
    return heartbeat_request(consumer_heartbeat_body(client_id, consumer, version), version)


def client_response(
    request: RemotingCommand, version: int, code: int, remark: str | None = None, body: bytes = b""
) -> RemotingCommand:
    """The client's answer to a request a broker relayed to it: same opaque and serialization, stamped with
    the version this client announces (Java's ``createResponseCommand`` stamps its own)."""
    response = request.make_response(code, remark, body=body)
    response.version = version
    return response
