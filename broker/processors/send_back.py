"""CONSUMER_SEND_MSG_BACK: a consumer failed a message; schedule it for another try, or give up on it.

The failed message is looked up by its commit-log offset and stored again for the consumer group's retry
topic ``%RETRY%<group>`` through a delay level (3 + the times it was already retried, unless the consumer
names a level), so retries back off. Once it has been retried ``maxReconsumeTimes`` times (16 unless the
group or the request says otherwise), or the consumer asks for a negative level, it goes to the group's
dead-letter topic ``%DLQ%<group>`` instead and is not delivered again. The remarks are Apache's.
"""

from __future__ import annotations

import logging
import random

from broker.config import BrokerConfig
from broker.message_service import MessageService, stored_properties
from broker.processors.common import read_header
from broker.processors.send import DLQ_NUMS_PER_GROUP, TOPIC_SYS_FLAG_UNIT_SUB
from broker.registration import ChangeAnnouncer
from broker.schedule import ScheduleMessageService
from broker.stats import BrokerStats
from broker.store import MessageStore, PutMessageStatus
from broker.subscription_groups import SubscriptionGroupManager
from broker.topic_config_manager import TopicConfigManager
from rocketmq_wire import RemotingCommand, ResponseCode, topics
from rocketmq_wire.codes import MQVersion
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.consumer import ConsumerSendMsgBackRequestHeader
from rocketmq_wire.message import const
from rocketmq_wire.message.stored import MessageExt, decode_message
from rocketmq_wire.perm import PERM_READ, PERM_WRITE, is_writeable
from rocketmq_wire.transport import Connection

log = logging.getLogger("broker.processors.send_back")

#: The first retry waits at this delay level (10 s with the default table), each later one a level more.
FIRST_RETRY_DELAY_LEVEL = 3
_V3_4_9 = MQVersion.value_of("V3_4_9")


class ConsumerSendMsgBackProcessor:
    """Stores a message a consumer failed again, for its group's retry topic or dead-letter topic."""

    def __init__(
        self,
        *,
        config: BrokerConfig,
        topics: TopicConfigManager,
        groups: SubscriptionGroupManager,
        store: MessageStore,
        messages: MessageService,
        schedule: ScheduleMessageService,
        announcer: ChangeAnnouncer,
        stats: BrokerStats,
    ) -> None:
        self._config = config
        self._topics = topics
        self._groups = groups
        self._store = store
        self._messages = messages
        self._schedule = schedule
        self._announcer = announcer
        self._stats = stats
        self._random = random.Random()

    def _find(self, offset: int) -> MessageExt | None:
        data = self._store.lookup_message_by_physical_offset(offset)
        if data is None:
            return None
        try:
            return decode_message(data, 0, decompress_body=False)[0]
        except CodecError:
            return None

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        return await self._announcer.announcing(self._send_back(request))

    async def _send_back(self, request: RemotingCommand) -> RemotingCommand | None:
        config = self._config
        header = read_header(request, ConsumerSendMsgBackRequestHeader)
        group = str(header.group)
        group_config = self._groups.find(group)
        if group_config is None:
            return request.make_response(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST,
                f"subscription group not exist, {group} {topics.suggest_todo()}",
            )
        if not is_writeable(config.broker_permission):
            return request.make_response(
                ResponseCode.NO_PERMISSION, f"the broker[{config.broker_ip1}] sending message is forbidden"
            )
        if group_config.retry_queue_nums <= 0:
            return request.make_response(ResponseCode.SUCCESS)

        new_topic = topics.retry_topic(group)
        queue_id = self._random.randrange(group_config.retry_queue_nums)
        topic_sys_flag = TOPIC_SYS_FLAG_UNIT_SUB if header.unit_mode else 0
        topic_config = self._topics.create_if_absent(
            new_topic, group_config.retry_queue_nums, PERM_READ | PERM_WRITE, topic_sys_flag
        )
        if not is_writeable(topic_config.perm):
            return request.make_response(
                ResponseCode.NO_PERMISSION, f"the topic[{new_topic}] sending message is forbidden"
            )
        offset = int(header.offset or 0)
        original = self._find(offset)
        if original is None:
            return request.make_response(
                ResponseCode.SYSTEM_ERROR, f"look message by offset failed, {offset}"
            )

        properties = dict(original.properties)
        properties.setdefault(const.RETRY_TOPIC, original.topic)
        properties[const.WAIT] = "false"
        delay_level = int(header.delay_level or 0)
        max_times = group_config.retry_max_times
        if request.version >= _V3_4_9 and header.max_reconsume_times is not None:
            max_times = header.max_reconsume_times
        if original.reconsume_times >= max_times or delay_level < 0:
            new_topic = topics.dlq_topic(group)
            queue_id = self._random.randrange(DLQ_NUMS_PER_GROUP)
            self._topics.create_if_absent(new_topic, DLQ_NUMS_PER_GROUP, PERM_READ | PERM_WRITE)
            properties.pop(const.DELAY, None)
            self._stats.to_dlq(group, str(header.origin_topic or original.topic))
            log.info(
                "message %s of group %s failed %d times: to the dead-letter queue %s",
                original.msg_id,
                group,
                original.reconsume_times,
                new_topic,
            )
        else:
            if delay_level == 0:
                delay_level = FIRST_RETRY_DELAY_LEVEL + original.reconsume_times
            properties[const.DELAY] = str(delay_level)
        properties[const.ORIGIN_MESSAGE_ID] = properties.get(const.ORIGIN_MESSAGE_ID) or original.msg_id

        real_topic, real_queue = self._schedule.apply_delay(properties, new_topic, queue_id)
        retry = MessageExt(
            topic=real_topic,
            body=original.body,
            flag=original.flag,
            properties_string=stored_properties(properties),
            queue_id=real_queue,
            sys_flag=original.sys_flag,
            born_timestamp=original.born_timestamp,
            born_host=original.born_host,
            store_host=config.store_host,
            reconsume_times=original.reconsume_times + 1,
        )
        result = await self._messages.put(retry)
        # Apache's send-back answers SYSTEM_ERROR with the status for a slave that timed out or is missing.
        if result.status in (PutMessageStatus.PUT_OK, PutMessageStatus.FLUSH_DISK_TIMEOUT):
            return request.make_response(ResponseCode.SUCCESS)
        return request.make_response(ResponseCode.SYSTEM_ERROR, result.status.value)
