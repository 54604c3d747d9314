"""Topic administration on one broker: create/update, delete, list configs, per-queue offsets.

These answer ``mqadmin updateTopic`` / ``deleteTopic`` / ``topicStatus`` and the admin API behind them
(Apache's ``AdminBrokerProcessor``). Creating a topic answers SUCCESS while keeping the remark Java's
default response carries ("not set any response code"), byte for byte what a 4.9/5.x broker sends.
"""

from __future__ import annotations

import logging
import time

from broker import topic_attributes
from broker.config import BrokerConfig
from broker.processors.common import read_header
from broker.registration import ChangeAnnouncer
from broker.stats import BrokerStats
from broker.store import MessageStore
from broker.topic_config_manager import TopicConfigManager
from rocketmq_wire import RemotingCommand, ResponseCode, topics
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.bodies.stats import TopicOffset, TopicStatsTable
from rocketmq_wire.bodies.topic_config import TopicConfig, TopicConfigAndQueueMapping
from rocketmq_wire.headers.topic import (
    CreateTopicRequestHeader,
    DeleteTopicRequestHeader,
    GetTopicConfigRequestHeader,
    GetTopicStatsInfoRequestHeader,
)
from rocketmq_wire.transport import Connection

log = logging.getLogger("broker.processors.topic_admin")

#: The remark of a Java response whose code was set but whose default remark was never cleared.
UNSET_REMARK = "not set any response code"
#: What Apache's slave answers to topic changes: its topics are its master's (``validateSlave``).
SLAVE_REFUSAL = (
    "Can't modify topic or subscription group from slave broker, please execute it from master broker."
)


def refused_on_slave(config: BrokerConfig, request: RemotingCommand) -> RemotingCommand | None:
    """SYSTEM_ERROR for a change a slave must take from its master, or None on a master."""
    if config.is_slave:
        return request.make_response(ResponseCode.SYSTEM_ERROR, SLAVE_REFUSAL)
    return None


#: The most queues a topic may have on this broker. Apache sets no bound, but every reader of a route (its
#: Java clients' rebalancing, this broker's topic statistics) walks each queue: a topic of 2^31 queues, one
#: hostile request away, would stall them all. The project refuses more than this.
MAX_QUEUE_NUMS = 1 << 16


class UpdateAndCreateTopicProcessor:
    def __init__(
        self,
        *,
        config: BrokerConfig,
        topics: TopicConfigManager,
        announcer: ChangeAnnouncer,
        stats: BrokerStats,
    ) -> None:
        self._config = config
        self._topics = topics
        self._announcer = announcer
        self._stats = stats

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        on_slave = refused_on_slave(self._config, request)
        if on_slave is not None:
            return on_slave
        header = read_header(request, CreateTopicRequestHeader)
        topic = str(header.topic)
        # Timed from here to the answer, as Apache times its creation (rocketmq_topic_create_execution_time).
        started = time.perf_counter()
        answer = await self._create(request, conn, header, topic)
        elapsed_ms = int((time.perf_counter() - started) * 1000)
        status = "success" if answer.code == ResponseCode.SUCCESS else "failure"
        flag = "true" if topics.is_system_topic(topic) else "false"
        self._stats.topic_create.observe((status, flag), elapsed_ms)
        return answer

    async def _create(
        self, request: RemotingCommand, conn: Connection, header: CreateTopicRequestHeader, topic: str
    ) -> RemotingCommand:
        refusal = topics.validate_topic(topic)
        if refusal is not None:
            return request.make_response(*refusal)
        if topics.is_system_topic(topic):
            return request.make_response(
                ResponseCode.SYSTEM_ERROR, f"The topic[{topic}] is conflict with system topic."
            )
        queue_nums = (int(header.read_queue_nums or 0), int(header.write_queue_nums or 0))
        if not all(0 <= count <= MAX_QUEUE_NUMS for count in queue_nums):
            return request.make_response(
                ResponseCode.SYSTEM_ERROR,
                f"readQueueNums and writeQueueNums must lie in [0, {MAX_QUEUE_NUMS}], "
                f"not {queue_nums[0]} and {queue_nums[1]}",
            )
        try:
            requested = topic_attributes.parse_request(header.attributes)
            if not self._config.enable_mixed_message_type and topic_attributes.mixed_requested(requested):
                return request.make_response(ResponseCode.INVALID_PARAMETER, topic_attributes.MIXED_REFUSAL)
            current = self._topics.select(topic)
            attributes = topic_attributes.alter(
                current is None, (current.attributes or {}) if current is not None else {}, requested
            )
        except topic_attributes.AttributeRefused as exc:
            log.warning("topic %s refused to %s: %s", topic, conn.remote_address, exc.remark)
            return request.make_response(ResponseCode.SYSTEM_ERROR, exc.remark)
        config = TopicConfig(
            topic_name=topic,
            read_queue_nums=queue_nums[0],
            write_queue_nums=queue_nums[1],
            perm=int(header.perm or 0),
            topic_filter_type=str(header.topic_filter_type),
            topic_sys_flag=int(header.topic_sys_flag or 0),
            order=bool(header.order),
            attributes=attributes or None,
        )
        log.info("topic %s created or updated by %s", topic, conn.remote_address)
        announcer = self._announcer
        seen = announcer.changes
        self._topics.update(config)
        await announcer.announced_since(seen)  # as Apache, answer once the NameServers have the new route
        return request.make_response(ResponseCode.SUCCESS, UNSET_REMARK)


class DeleteTopicProcessor:
    def __init__(self, *, config: BrokerConfig, topics: TopicConfigManager, store: MessageStore) -> None:
        self._config = config
        self._topics = topics
        self._store = store

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        on_slave = refused_on_slave(self._config, request)
        if on_slave is not None:
            return on_slave
        header = read_header(request, DeleteTopicRequestHeader)
        topic = str(header.topic)
        refusal = topics.validate_topic(topic)
        if refusal is not None:
            return request.make_response(*refusal)
        if topics.is_system_topic(topic):
            return request.make_response(
                ResponseCode.SYSTEM_ERROR, f"The topic[{topic}] is conflict with system topic."
            )
        log.info("deleting topic %s as asked by %s", topic, conn.remote_address)
        self._topics.delete(topic)
        self._store.delete_topic(topic)
        return request.make_response(ResponseCode.SUCCESS)


class GetAllTopicConfigProcessor:
    def __init__(self, *, topics: TopicConfigManager) -> None:
        self._topics = topics

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        wrapper = self._topics.wrapper()
        if not wrapper.topic_config_table:
            return request.make_response(
                ResponseCode.SYSTEM_ERROR, f"No topic in this broker, client: {conn.remote_address}"
            )
        return request.make_response(ResponseCode.SUCCESS, body=wrapper.to_json())


class GetTopicConfigProcessor:
    """GET_TOPIC_CONFIG (5.x): one topic's config, as 5.x admin tools ask before updating it."""

    def __init__(self, *, topics: TopicConfigManager) -> None:
        self._topics = topics

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, GetTopicConfigRequestHeader)
        topic = str(header.topic)
        config = self._topics.select(topic)
        if config is None:
            return request.make_response(
                ResponseCode.TOPIC_NOT_EXIST, f"No topic in this broker. topic: {topic}"
            )
        body = TopicConfigAndQueueMapping(
            topic_name=config.topic_name,
            read_queue_nums=config.read_queue_nums,
            write_queue_nums=config.write_queue_nums,
            perm=config.perm,
            topic_filter_type=config.topic_filter_type,
            topic_sys_flag=config.topic_sys_flag,
            order=config.order,
            attributes=dict(config.attributes or {}),
        )
        return request.make_response(ResponseCode.SUCCESS, body=body.to_json())


class GetTopicStatsInfoProcessor:
    def __init__(self, *, config: BrokerConfig, topics: TopicConfigManager, store: MessageStore) -> None:
        self._config = config
        self._topics = topics
        self._store = store

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, GetTopicStatsInfoRequestHeader)
        topic = str(header.topic)
        config = self._topics.select(topic)
        if config is None:
            return request.make_response(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        store = self._store
        table: dict[MessageQueue, TopicOffset] = {}
        for queue_id in range(config.write_queue_nums):
            queue = MessageQueue(topic=topic, broker_name=self._config.broker_name, queue_id=queue_id)
            min_offset = max(0, store.get_min_offset(topic, queue_id))
            max_offset = max(0, store.get_max_offset(topic, queue_id))
            last = store.get_store_time(topic, queue_id, max_offset - 1) if max_offset > 0 else 0
            table[queue] = TopicOffset(
                min_offset=min_offset, max_offset=max_offset, last_update_timestamp=max(0, last)
            )
        return request.make_response(ResponseCode.SUCCESS, body=TopicStatsTable(offset_table=table).to_json())
