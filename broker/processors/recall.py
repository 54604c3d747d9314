"""RECALL_MESSAGE (5.3.2+): taking back a timer message before it is delivered (Apache's
``RecallMessageProcessor``).

A recall does not look for the message: it stores a marker, itself a timer message for the same slot,
carrying ``TIMER_DEL_UNIQKEY``; when the slot falls due the timer drops whatever the marker names
(:mod:`broker.timer`). So a recall of a message that never existed, or was already delivered, succeeds as
Apache's does. The checks before that, their codes and remarks, are Apache's, in its order.
"""

from __future__ import annotations

from broker.config import BrokerConfig
from broker.message_service import MessageService, stored_properties
from broker.processors.common import read_header
from broker.timer import TimerMessageService, TimerRefusal, delete_key, java_parse_long
from broker.topic_config_manager import TopicConfigManager
from rocketmq_wire import RemotingCommand, ResponseCode
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.send import RecallMessageRequestHeader, RecallMessageResponseHeader
from rocketmq_wire.javahash import ExtFields
from rocketmq_wire.message import const
from rocketmq_wire.message.recall import RecallHandle
from rocketmq_wire.message.stored import MessageExt
from rocketmq_wire.perm import is_writeable
from rocketmq_wire.transport import Connection

#: The tag of a recall's marker message (Apache's ``RECALL_MESSAGE_TAG``).
RECALL_MESSAGE_TAG = "_RECALL_TAG_"
_UNAVAILABLE = "recall failed, broker service not available"
_FAILED = "recall failed, execute error"


class RecallMessageProcessor:
    def __init__(
        self,
        *,
        config: BrokerConfig,
        topics: TopicConfigManager,
        messages: MessageService,
        timer: TimerMessageService,
    ) -> None:
        self._config = config
        self._topics = topics
        self._messages = messages
        self._timer = timer

    def _answer(
        self, request: RemotingCommand, code: int, remark: str | None, msg_id: str | None = None
    ) -> RemotingCommand:
        header = RecallMessageResponseHeader(msg_id=msg_id) if msg_id is not None else None
        answer = request.make_response(code, remark, header)
        answer.ext_fields = ExtFields({const.MSG_REGION: self._config.region_id})
        return answer

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        header = read_header(request, RecallMessageRequestHeader)
        config = self._config
        if not config.recall_message_enable:
            return self._answer(request, ResponseCode.NO_PERMISSION, "recall failed, operation is forbidden")
        if config.is_slave:
            return self._answer(request, ResponseCode.SLAVE_NOT_AVAILABLE, _UNAVAILABLE)
        if not is_writeable(config.broker_permission) and not config.allow_recall_when_broker_not_writeable:
            return self._answer(request, ResponseCode.SERVICE_NOT_AVAILABLE, _UNAVAILABLE)
        topic = str(header.topic)
        if self._topics.select_shared(topic) is None:
            return self._answer(
                request, ResponseCode.TOPIC_NOT_EXIST, f"recall failed, the topic[{topic}] not exist"
            )
        try:
            handle = RecallHandle.decode(str(header.recall_handle))
        except CodecError:
            return self._answer(request, ResponseCode.ILLEGAL_OPERATION, "recall handle is invalid")
        if handle.topic != topic:
            return self._answer(request, ResponseCode.ILLEGAL_OPERATION, "recall failed, topic not match")
        if handle.broker_name != config.broker_name:
            return self._answer(request, ResponseCode.ILLEGAL_OPERATION, _UNAVAILABLE)
        try:
            timestamp = java_parse_long(handle.timestamp)
        except ValueError:
            timestamp = -1  # NumberUtils.toLong's fallback
        now = self._timer.now_ms()
        left = timestamp - now
        if left <= 0 or left >= config.timer_max_delay_sec * 1000:
            return self._answer(request, ResponseCode.ILLEGAL_OPERATION, "recall failed, timestamp invalid")
        properties = {
            const.TAGS: RECALL_MESSAGE_TAG,
            const.TIMER_DEL_UNIQKEY: delete_key(handle.topic, handle.message_id),
            const.UNIQ_KEY: handle.message_id,
            const.TIMER_DELIVER_MS: str(timestamp),
            const.BORN_TIMESTAMP: str(now),
            const.TRACE_CONTEXT: "",
            const.PGROUP: str(header.producer_group or ""),
        }
        placed = self._timer.transform(properties, handle.topic, 0)
        if isinstance(placed, TimerRefusal):
            return self._answer(request, ResponseCode.SYSTEM_ERROR, _FAILED)
        marker = MessageExt(
            topic=placed[0],
            body=b"0",
            flag=0,
            properties_string=stored_properties(properties),
            queue_id=placed[1],
            sys_flag=0,
            born_timestamp=now,
            born_host=conn.remote_address,
            store_host=config.store_host,
            reconsume_times=0,
        )
        result = await self._messages.put(marker)
        if not result.status.stored:
            return self._answer(request, ResponseCode.SYSTEM_ERROR, _FAILED)
        return self._answer(request, ResponseCode.SUCCESS, None, handle.message_id)
