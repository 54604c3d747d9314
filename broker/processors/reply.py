"""SEND_REPLY_MESSAGE(_V2): a responder's reply, pushed to the requester's own connection and stored.

Request-reply in RocketMQ: the requester's producer heartbeats to every broker, so whichever broker a reply
reaches finds the requester among its producers by the reply's REPLY_TO_CLIENT (the requester's client id)
and pushes it there with PUSH_REPLY_MESSAGE_TO_CLIENT, as Apache's ``ReplyMessageProcessor`` does. The
answer says whether the push worked: SUCCESS (message id "0", offset 0: nothing the responder needs), or
SYSTEM_ERROR naming why. With ``storeReplyMessageEnable`` (Apache's default) the reply is also stored in its
topic (the cluster's reply topic), and the answer then carries where, whatever the push's fate.
"""

from __future__ import annotations

import logging
import random

from broker.clients import ClientChannel, ProducerManager
from broker.clock import Clock
from broker.config import BrokerConfig
from broker.message_service import MessageService
from broker.processors.send import SendHeader, check_send_target, parse_send_header, send_answer
from broker.store import PutMessageStatus
from broker.topic_config_manager import TopicConfigManager
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.headers.send import ReplyMessageRequestHeader, SendMessageResponseHeader
from rocketmq_wire.message import MessageExt, const
from rocketmq_wire.message.properties import decode_properties, encode_properties
from rocketmq_wire.transport import Connection

log = logging.getLogger("broker.reply")

#: How long the broker waits for the requester to take a pushed reply (Apache's ``callClient``).
PUSH_TIMEOUT_MS = 10_000
_STORED = {
    PutMessageStatus.PUT_OK,
    PutMessageStatus.FLUSH_DISK_TIMEOUT,
    PutMessageStatus.FLUSH_SLAVE_TIMEOUT,
    PutMessageStatus.SLAVE_NOT_AVAILABLE,
}


class ReplyMessageProcessor:
    def __init__(
        self,
        *,
        config: BrokerConfig,
        clock: Clock,
        topics: TopicConfigManager,
        messages: MessageService,
        producers: ProducerManager,
        channel: ClientChannel,
    ) -> None:
        self._config = config
        self._clock = clock
        self._topics = topics
        self._messages = messages
        self._producers = producers
        self._channel = channel
        self._random = random.Random()

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        config = self._config
        header = parse_send_header(request)
        target = check_send_target(config, self._topics, request, header, conn)
        if isinstance(target, RemotingCommand):
            return target
        queue_id = int(header.queue_id or 0)
        if queue_id < 0:
            queue_id = self._random.randrange(max(1, target.write_queue_nums))
        properties = decode_properties(header.properties or "")
        pushed, remark = await self._push(header, request.body, properties, conn)
        answer_header = (
            SendMessageResponseHeader(msg_id="0", queue_id=queue_id, queue_offset=0)
            if pushed
            else SendMessageResponseHeader()
        )
        if config.store_reply_message_enable:
            message = MessageExt(
                topic=str(header.topic),
                body=request.body,
                flag=int(header.flag or 0),
                properties_string=header.properties or "",
                queue_id=queue_id,
                sys_flag=int(header.sys_flag or 0),
                born_timestamp=int(header.born_timestamp or 0),
                born_host=conn.remote_address,
                store_host=config.store_host,
                reconsume_times=int(header.reconsume_times or 0),
            )
            result = await self._messages.put(message)
            if result.status in _STORED:
                answer_header = SendMessageResponseHeader(
                    msg_id=result.msg_id, queue_id=queue_id, queue_offset=result.queue_offset
                )
            else:
                log.warning("reply to %s not stored: %s", header.topic, result.status.name)
        code = ResponseCode.SUCCESS if pushed else ResponseCode.SYSTEM_ERROR
        return send_answer(config, request, code, remark, answer_header)

    async def _push(
        self, header: SendHeader, body: bytes, properties: dict[str, str], conn: Connection
    ) -> tuple[bool, str | None]:
        """Hand the reply to its requester; whether that worked, and Apache's remark when not."""
        sender = properties.get(const.REPLY_TO_CLIENT)
        if sender is None:
            log.warning("%s is missing: a reply cannot be pushed", const.REPLY_TO_CLIENT)
            return False, f"reply message properties[{const.REPLY_TO_CLIENT}] is null"
        requester = self._producers.connection_of(sender)
        if requester is None:
            log.warning("push reply message fail, channel of <%s> not found.", sender)
            return False, f"push reply message fail, channel of <{sender}> not found."
        properties[const.PUSH_REPLY_TIME] = str(self._clock.now_ms())
        push = RemotingCommand.request(
            RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT,
            ReplyMessageRequestHeader(
                producer_group=header.producer_group,
                topic=header.topic,
                default_topic=header.default_topic,
                default_topic_queue_nums=header.default_topic_queue_nums,
                queue_id=header.queue_id,
                sys_flag=header.sys_flag,
                born_timestamp=header.born_timestamp,
                flag=header.flag,
                properties=encode_properties(properties),
                reconsume_times=header.reconsume_times,
                unit_mode=header.unit_mode,
                born_host=conn.remote_address,
                store_host=self._config.store_host,
                store_timestamp=self._clock.now_ms(),
            ),
            body,
        )
        try:
            answer = await self._channel.invoke(requester, push, PUSH_TIMEOUT_MS)
        except Exception as exc:  # the requester went away or did not answer in time
            log.warning("push reply message to %s failed: %s", sender, exc)
            return False, f"push reply message to {sender}fail."
        if answer.code != ResponseCode.SUCCESS:
            log.warning("push reply message to %s failed: %s %s", sender, answer.code, answer.remark)
            return False, f"push reply message to {sender}fail."
        return True, None
