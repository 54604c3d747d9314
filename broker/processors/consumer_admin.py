"""GET_CONSUME_STATS, GET_CONSUMER_CONNECTION_LIST, QUERY_TOPIC_CONSUME_BY_WHO: what ``mqadmin
consumerProgress`` / ``consumerConnection`` / ``topicStatus`` ask a broker about consumer groups."""

from __future__ import annotations

import logging

from broker.clients import ConsumerManager
from broker.config import BrokerConfig
from broker.processors.common import read_header
from broker.store import ConsumerOffsetStore, MessageStore
from broker.topic_config_manager import TopicConfigManager
from rocketmq_wire import RemotingCommand, ResponseCode
from rocketmq_wire.bodies.consumer import Connection as ConnectionBody
from rocketmq_wire.bodies.consumer import ConsumerConnection, GroupList
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.bodies.stats import ConsumeStats, OffsetWrapper
from rocketmq_wire.headers.consumer import (
    GetConsumerConnectionListRequestHeader,
    GetConsumeStatsRequestHeader,
)
from rocketmq_wire.headers.topic import QueryTopicConsumeByWhoRequestHeader
from rocketmq_wire.transport import Connection

log = logging.getLogger("broker.processors.consumer_admin")


def queue_progress(
    store: MessageStore, offsets: ConsumerOffsetStore, group: str, topic: str, queue_id: int
) -> OffsetWrapper:
    """How far ``group`` has consumed one queue: the queue's end, the group's committed offset and when the
    last message it consumed was stored (0 when unknown), each at least 0 as ``consumerProgress`` prints
    them. Both consume-stats answers (one group, every group) are made of these."""
    broker_offset = max(0, store.get_max_offset(topic, queue_id))
    consumer_offset = max(0, offsets.query_offset(group, topic, queue_id))
    last = 0
    if consumer_offset > 0:
        last = max(0, store.get_store_time(topic, queue_id, consumer_offset - 1))
    return OffsetWrapper(broker_offset=broker_offset, consumer_offset=consumer_offset, last_timestamp=last)


class GetConsumeStatsProcessor:
    def __init__(
        self,
        *,
        config: BrokerConfig,
        topics: TopicConfigManager,
        offsets: ConsumerOffsetStore,
        consumers: ConsumerManager,
        store: MessageStore,
    ) -> None:
        self._config = config
        self._topics = topics
        self._offsets = offsets
        self._consumers = consumers
        self._store = store

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, GetConsumeStatsRequestHeader)
        group = str(header.consumer_group)
        if header.topic and header.topic.strip():
            wanted = [header.topic]
        else:
            wanted = sorted(self._offsets.topics_of_group(group))
        group_info = self._consumers.group(group)
        table: dict[MessageQueue, OffsetWrapper] = {}
        for topic in wanted:
            config = self._topics.select(topic)
            if config is None:
                log.warning("consume stats of group %s: topic %s does not exist", group, topic)
                continue
            if (
                group_info is not None
                and group_info.subscriptions
                and group_info.find_subscription(topic) is None
            ):
                log.warning("consume stats: group %s is online but does not subscribe to %s", group, topic)
                continue
            for queue_id in range(config.read_queue_nums):
                queue = MessageQueue(topic=topic, broker_name=self._config.broker_name, queue_id=queue_id)
                table[queue] = queue_progress(self._store, self._offsets, group, topic, queue_id)
        body = ConsumeStats(offset_table=table, consume_tps=0.0).to_json()
        return request.make_response(ResponseCode.SUCCESS, body=body)


class GetConsumerConnectionListProcessor:
    def __init__(self, *, consumers: ConsumerManager) -> None:
        self._consumers = consumers

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, GetConsumerConnectionListRequestHeader)
        group = str(header.consumer_group)
        group_info = self._consumers.group(group)
        if group_info is None:
            return request.make_response(
                ResponseCode.CONSUMER_NOT_ONLINE, f"the consumer group[{group}] not online"
            )
        body = ConsumerConnection(
            connection_set=[
                ConnectionBody(
                    client_id=info.client_id,
                    client_addr=info.client_addr,
                    language=info.language,
                    version=info.version,
                )
                for info in group_info.channels.values()
            ],
            subscription_table=dict(group_info.subscriptions),
            consume_type=group_info.consume_type,
            message_model=group_info.message_model,
            consume_from_where=group_info.consume_from_where,
        )
        return request.make_response(ResponseCode.SUCCESS, body=body.to_json())


class QueryTopicConsumeByWhoProcessor:
    def __init__(self, *, consumers: ConsumerManager, offsets: ConsumerOffsetStore) -> None:
        self._consumers = consumers
        self._offsets = offsets

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, QueryTopicConsumeByWhoRequestHeader)
        topic = str(header.topic)
        groups = self._consumers.groups_of_topic(topic) | self._offsets.groups_of_topic(topic)
        return request.make_response(
            ResponseCode.SUCCESS, body=GroupList(group_list=sorted(groups)).to_json()
        )
