"""Subscription-group administration on the broker, what mqadmin's group commands send.

UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (``updateSubGroup``), DELETE_SUBSCRIPTIONGROUP (``deleteSubGroup``),
CLONE_GROUP_OFFSET (``cloneGroupOffset``) and GET_BROKER_CONSUME_STATS (``brokerConsumeStats``), answered
as Apache 4.9's ``AdminBrokerProcessor`` answers them: a slave refuses the writes, an unreadable group body
is ignored (Java decodes it to ``null`` and still says SUCCESS).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from broker.processors.common import read_header
from broker.processors.topic_admin import refused_on_slave
from broker.subscription_groups import SubscriptionGroupConfig as BrokerGroupConfig
from rocketmq_wire import RemotingCommand, ResponseCode
from rocketmq_wire.bodies import ConsumeStats, ConsumeStatsList, MessageQueue, OffsetWrapper
from rocketmq_wire.bodies import SubscriptionGroupConfig as GroupConfigBody
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.admin import (
    CloneGroupOffsetRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    GetConsumeStatsInBrokerHeader,
)
from rocketmq_wire.transport import Connection

if TYPE_CHECKING:
    from broker.broker import Broker

log = logging.getLogger("broker.processors.group_admin")


def _broker_config(body: GroupConfigBody) -> BrokerGroupConfig:
    return BrokerGroupConfig(
        group_name=body.group_name,
        consume_enable=body.consume_enable,
        consume_from_min_enable=body.consume_from_min_enable,
        consume_broadcast_enable=body.consume_broadcast_enable,
        retry_queue_nums=body.retry_queue_nums,
        retry_max_times=body.retry_max_times,
        broker_id=body.broker_id,
        which_broker_when_consume_slowly=body.which_broker_when_consume_slowly,
        notify_consumer_ids_changed_enable=body.notify_consumer_ids_changed_enable,
    )


class UpdateAndCreateSubscriptionGroupProcessor:
    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        if (refused := refused_on_slave(self._broker, request)) is not None:
            return refused
        try:
            body = GroupConfigBody.from_json(request.body) if request.body else None
        except CodecError as exc:
            log.warning("unreadable subscription group from %s: %s", conn.remote_address, exc)
            body = None
        if body is not None:
            self._broker.subscription_groups.put(_broker_config(body))
            log.info("subscription group %s created or updated by %s", body.group_name, conn.remote_address)
        return request.make_response(ResponseCode.SUCCESS)


class DeleteSubscriptionGroupProcessor:
    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        if (refused := refused_on_slave(self._broker, request)) is not None:
            return refused
        header = read_header(request, DeleteSubscriptionGroupRequestHeader)
        group = str(header.group_name)
        forget_group(self._broker, group)
        if header.remove_offset:
            self._broker.consumer_offsets.remove_group(group)
        log.info("subscription group %s deleted by %s", group, conn.remote_address)
        return request.make_response(ResponseCode.SUCCESS)


def forget_group(broker: Broker, group: str) -> None:
    """Drop a group's settings (Java's ``deleteSubscriptionGroupConfig``).

    The manager has no delete of its own yet; until it does, its table is edited here and its data
    version bumped, so that slaves copy the change.
    """
    manager = broker.subscription_groups
    delete = getattr(manager, "delete", None)
    if callable(delete):
        delete(group)
        return
    groups = manager._groups
    if groups.pop(group, None) is not None:
        manager.data_version.bump(manager._clock())


class CloneGroupOffsetProcessor:
    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        broker = self._broker
        header = read_header(request, CloneGroupOffsetRequestHeader)
        src, dest = str(header.src_group), str(header.dest_group)
        if header.topic and header.topic.strip():
            topics = [header.topic]
        else:
            topics = sorted(broker.consumer_offsets.topics_of_group(src))
        for topic in topics:
            if broker.topic_config_manager.select(topic) is None:
                log.warning("clone group offset: topic %s does not exist", topic)
                continue
            if not header.offline:
                online = broker.consumer_manager.group(src)
                if online is not None and online.subscriptions and online.find_subscription(topic) is None:
                    log.warning("clone group offset: group %s does not subscribe to %s", src, topic)
                    continue
            offsets = broker.consumer_offsets.offsets(src, topic)
            if offsets:
                # Java replaces the destination's entry for the topic with a copy of the source's
                broker.consumer_offsets.merge({f"{topic}@{dest}": offsets})
                log.info("cloned offsets of %s on %s to %s", src, topic, dest)
        return request.make_response(ResponseCode.SUCCESS)


class GetBrokerConsumeStatsProcessor:
    def __init__(self, broker: Broker) -> None:
        self._broker = broker

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        broker = self._broker
        header = read_header(request, GetConsumeStatsInBrokerHeader)
        entries: list[dict[str, list[ConsumeStats]]] = []
        total_diff = 0
        for group in broker.subscription_groups.groups():
            per_topic: list[ConsumeStats] = []
            online = broker.consumer_manager.group(group)
            for topic in sorted(broker.consumer_offsets.topics_of_group(group)):
                config = broker.topic_config_manager.select(topic)
                if config is None:
                    continue
                if header.is_order and not config.order:
                    continue
                if online is not None and online.subscriptions and online.find_subscription(topic) is None:
                    continue
                stats = ConsumeStats(consume_tps=0.0)
                for queue_id in range(config.write_queue_nums):
                    broker_offset = max(0, broker.store.get_max_offset(topic, queue_id))
                    consumer_offset = max(0, broker.consumer_offsets.query_offset(group, topic, queue_id))
                    last = 0
                    if consumer_offset > 0:
                        last = max(0, broker.store.get_store_time(topic, queue_id, consumer_offset - 1))
                    queue = MessageQueue(
                        topic=topic, broker_name=broker.config.broker_name, queue_id=queue_id
                    )
                    stats.offset_table[queue] = OffsetWrapper(
                        broker_offset=broker_offset, consumer_offset=consumer_offset, last_timestamp=last
                    )
                total_diff += stats.compute_total_diff()
                per_topic.append(stats)
            entries.append({group: per_topic})
        body = ConsumeStatsList(consume_stats_list=entries, broker_addr=broker.address, total_diff=total_diff)
        return request.make_response(ResponseCode.SUCCESS, body=body.to_json())
