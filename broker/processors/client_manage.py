"""HEART_BEAT and UNREGISTER_CLIENT: clients joining and leaving producer and consumer groups.

A heartbeat lists every group the client runs; the broker records the connection under each, with the
consumer groups' subscriptions, and makes sure each consumer group has its retry topic (so a failed
message always has somewhere to go). Both answers are a bare SUCCESS, as a 4.9 broker sends them.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from broker.clients import ClientChannelInfo
from broker.processors.common import BadRequest, read_header
from broker.processors.send import TOPIC_SYS_FLAG_UNIT_SUB
from rocketmq_wire import RemotingCommand, ResponseCode, topics
from rocketmq_wire.bodies.heartbeat import HeartbeatData
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.consumer import UnregisterClientRequestHeader
from rocketmq_wire.perm import PERM_READ, PERM_WRITE
from rocketmq_wire.transport import Connection

if TYPE_CHECKING:
    from broker.broker import Broker

log = logging.getLogger("broker.processors.client_manage")


def channel_info(
    broker: Broker, request: RemotingCommand, conn: Connection, client_id: str
) -> ClientChannelInfo:
    return ClientChannelInfo(
        conn=conn,
        client_id=client_id,
        language=request.language.name,
        version=request.version,
        last_update_timestamp=broker.clock.now_ms(),
    )


class HeartbeatProcessor:
    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        broker = self._broker
        try:
            heartbeat = HeartbeatData.from_json(request.body)
        except CodecError as exc:
            raise BadRequest(f"the heartbeat body is malformed: {exc}") from None
        info = channel_info(broker, request, conn, heartbeat.client_id or "")
        seen = broker.announcer.changes
        for consumer in heartbeat.consumer_data_set:
            group = consumer.group_name or ""
            group_config = broker.subscription_groups.find(group)
            notify = True
            if group_config is not None:
                notify = group_config.notify_consumer_ids_changed_enable
                broker.topic_config_manager.create_if_absent(
                    topics.retry_topic(group),
                    group_config.retry_queue_nums,
                    PERM_READ | PERM_WRITE,
                    TOPIC_SYS_FLAG_UNIT_SUB if consumer.unit_mode else 0,
                )
            changed = broker.consumer_manager.register(
                group,
                info,
                consumer.consume_type,
                consumer.message_model,
                consumer.consume_from_where,
                consumer.subscription_data_set,
                notify and broker.config.notify_consumer_ids_changed_enable,
            )
            if changed:
                log.info(
                    "registered consumer group %s: %s, client %s",
                    group,
                    consumer.message_model,
                    info.client_id,
                )
        for producer in heartbeat.producer_data_set:
            broker.producer_manager.register(producer.group_name or "", info)
        await broker.announcer.announced_since(seen)  # a new retry topic is routable once this is answered
        return request.make_response(ResponseCode.SUCCESS)


class UnregisterClientProcessor:
    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        broker = self._broker
        header = read_header(request, UnregisterClientRequestHeader)
        if header.producer_group is not None:
            broker.producer_manager.unregister(header.producer_group, conn)
        if header.consumer_group is not None:
            group_config = broker.subscription_groups.find(header.consumer_group)
            notify = group_config.notify_consumer_ids_changed_enable if group_config is not None else True
            broker.consumer_manager.unregister(
                header.consumer_group, conn, notify and broker.config.notify_consumer_ids_changed_enable
            )
        return request.make_response(ResponseCode.SUCCESS)
