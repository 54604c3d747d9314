"""INVOKE_BROKER_TO_RESET_OFFSET: an operator moves a consumer group back (or forward) to a point in time.

This is what ``mqadmin resetOffsetByTime`` and ``Admin.reset_offset_by_time`` ask each broker of the topic. As
Apache's broker does, the broker works out every write queue's offset here -- the first message stored at or
after the time (``-1``: the queue's end); without ``isForce`` an offset only moves back -- and tells every
online member of the group (RESET_CONSUMER_CLIENT_OFFSET, oneway). The members drop what they hold, take the
offsets and commit them; the broker writes none itself, so that a member still running cannot overwrite the
reset with what it had read.

With no member online the answer is CONSUMER_NOT_ONLINE, on which the tools write the offsets themselves; a
group that has no committed offset on a queue is SYSTEM_ERROR, as in Apache.

This is 4.9's way, the version this broker reports. 5.x brokers reset on their side by default
(``useServerSideResetOffset``): they keep the new offsets and hand them out with each queue's next pull, which
a member waiting in a long poll only sees when its poll ends.
"""

from __future__ import annotations

import logging

from broker.clients import ClientChannel, ConsumerManager
from broker.config import BrokerConfig
from broker.processors.common import read_header
from broker.store import ConsumerOffsetStore, MessageStore
from broker.topic_config_manager import TopicConfigManager
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.bodies.consumer import ResetOffsetBody
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.codes import MQVersion
from rocketmq_wire.headers.offset import ResetOffsetRequestHeader
from rocketmq_wire.transport import Connection, RemotingError

log = logging.getLogger("broker.processors.reset_offset")

#: Clients older than this do not understand RESET_CONSUMER_CLIENT_OFFSET.
_V3_0_7_SNAPSHOT = MQVersion.value_of("V3_0_7_SNAPSHOT")
#: A reset time of -1 means "the end of each queue".
TO_LATEST = -1


class ResetOffsetProcessor:
    def __init__(
        self,
        *,
        config: BrokerConfig,
        topics: TopicConfigManager,
        offsets: ConsumerOffsetStore,
        consumers: ConsumerManager,
        store: MessageStore,
        channel: ClientChannel,
    ) -> None:
        self._config = config
        self._topics = topics
        self._offsets = offsets
        self._consumers = consumers
        self._store = store
        self._channel = channel

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, ResetOffsetRequestHeader)
        topic, group = str(header.topic), str(header.group)
        timestamp, force = int(header.timestamp or 0), bool(header.is_force)
        log.info(
            "[reset-offset] reset offset started by %s. topic=%s, group=%s, timestamp=%d, isForce=%s",
            conn.remote_address,
            topic,
            group,
            timestamp,
            force,
        )
        offsets = self._reset_offsets(topic, group, timestamp, force)
        if isinstance(offsets, str):
            log.error(offsets)
            return request.make_response(ResponseCode.SYSTEM_ERROR, offsets)
        body = ResetOffsetBody(offset_table=offsets).to_json()

        members = self._consumers.group(group)
        if members is None or not members.channels:
            remark = (
                f"Consumer not online, so can not reset offset, Group: {group} Topic: {topic} "
                f"Timestamp: {timestamp}"
            )
            log.error(remark)
            return request.make_response(ResponseCode.CONSUMER_NOT_ONLINE, remark)
        too_old = next((m for m in members.channels.values() if m.version < _V3_0_7_SNAPSHOT), None)
        if too_old is not None:
            log.warning(
                "[reset-offset] the client does not support this feature. channel=%s, version=%s",
                too_old.client_addr,
                MQVersion.name_of(too_old.version),
            )
            return request.make_response(
                ResponseCode.SYSTEM_ERROR,
                f"the client does not support this feature. version={MQVersion.name_of(too_old.version)}",
            )
        # The members' request carries no isForce (Java leaves the primitive at false).
        notice = ResetOffsetRequestHeader(topic=topic, group=group, timestamp=timestamp, is_force=False)
        for member in list(members.channels.values()):
            command = RemotingCommand.request(RequestCode.RESET_CONSUMER_CLIENT_OFFSET, notice, body)
            try:
                await self._channel.invoke_oneway(member.conn, command)
            except (RemotingError, OSError) as exc:  # one member gone must not keep the others from the reset
                log.error(
                    "[reset-offset] reset offset exception. topic=%s, group=%s, error=%s", topic, group, exc
                )
            else:
                log.info(
                    "[reset-offset] reset offset success. topic=%s, group=%s, clientId=%s",
                    topic,
                    group,
                    member.client_id,
                )
        return request.make_response(ResponseCode.SUCCESS, body=body)

    def _reset_offsets(
        self, topic: str, group: str, timestamp: int, force: bool
    ) -> dict[MessageQueue, int] | str:
        """Each write queue's new offset, or the refusal's remark."""
        topic_config = self._topics.select(topic)
        if topic_config is None:
            return f"[reset-offset] reset offset failed, no topic in this broker. topic={topic}"
        store = self._store
        offsets: dict[MessageQueue, int] = {}
        for queue_id in range(topic_config.write_queue_nums):
            consumed = self._offsets.query_offset(group, topic, queue_id)
            if consumed == -1:
                return f"THe consumer group <{group}> not exist"
            if timestamp == TO_LATEST:
                target = store.get_max_offset(topic, queue_id)
            else:
                target = store.get_offset_by_timestamp(topic, queue_id, timestamp)
            if target < 0:
                log.warning(
                    "reset offset is invalid. topic=%s, queueId=%d, timeStampOffset=%d",
                    topic,
                    queue_id,
                    target,
                )
                target = 0
            queue = MessageQueue(topic=topic, broker_name=self._config.broker_name, queue_id=queue_id)
            offsets[queue] = target if force or target < consumed else consumed
        return offsets
