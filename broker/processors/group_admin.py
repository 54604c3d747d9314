"""Subscription-group administration on the broker, what mqadmin's group commands send.

UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (``updateSubGroup``), DELETE_SUBSCRIPTIONGROUP (``deleteSubGroup``),
CLONE_GROUP_OFFSET (``cloneGroupOffset``) and GET_BROKER_CONSUME_STATS (``brokerConsumeStats``), answered
as Apache 4.9's ``AdminBrokerProcessor`` answers them: a slave refuses the writes, an unreadable group body
is ignored (Java decodes it to ``null`` and still says SUCCESS).
"""

from __future__ import annotations

import logging
import time

from broker.clients import ConsumerManager
from broker.config import BrokerConfig
from broker.processors.common import read_header
from broker.processors.consumer_admin import queue_progress
from broker.processors.topic_admin import refused_on_slave
from broker.stats import BrokerStats
from broker.store import ConsumerOffsetStore, MessageStore
from broker.subscription_groups import SubscriptionGroupConfig as BrokerGroupConfig
from broker.subscription_groups import SubscriptionGroupManager
from broker.topic_config_manager import TopicConfigManager
from rocketmq_wire import RemotingCommand, ResponseCode, fastjson
from rocketmq_wire.bodies import ConsumeStats, ConsumeStatsList, MessageQueue
from rocketmq_wire.bodies import SubscriptionGroupConfig as GroupConfigBody
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.admin import (
    CloneGroupOffsetRequestHeader,
    DeleteSubscriptionGroupRequestHeader,
    GetConsumeStatsInBrokerHeader,
    GetSubscriptionGroupConfigRequestHeader,
)
from rocketmq_wire.transport import Connection

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
    def __init__(self, *, config: BrokerConfig, groups: SubscriptionGroupManager, stats: BrokerStats) -> None:
        self._config = config
        self._groups = groups
        self._stats = stats

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        if (refused := refused_on_slave(self._config, request)) is not None:
            return refused
        started = time.perf_counter()
        try:
            body = GroupConfigBody.from_json(request.body) if request.body else None
        except CodecError as exc:
            log.warning("unreadable subscription group from %s: %s", conn.remote_address, exc)
            body = None
        if body is not None:
            self._groups.put(_broker_config(body))
            log.info("subscription group %s created or updated by %s", body.group_name, conn.remote_address)
        # Apache answers success whatever the body held, and times it so (group creation time).
        self._stats.group_create.observe(("success",), int((time.perf_counter() - started) * 1000))
        return request.make_response(ResponseCode.SUCCESS)


class GetSubscriptionGroupConfigProcessor:
    """GET_SUBSCRIPTIONGROUP_CONFIG: one group's settings. The group is created when unknown and
    ``autoCreateSubscriptionGroup`` is on, as Apache's lookup does; Apache's Proxy asks it before serving a
    consumer of the group (without an answer it holds no settings for the client and refuses its receives)."""

    def __init__(self, *, groups: SubscriptionGroupManager) -> None:
        self._groups = groups

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, GetSubscriptionGroupConfigRequestHeader)
        config = self._groups.find(header.group or "")
        if config is None:
            log.warning("no subscription group %s here, asked by %s", header.group, conn.remote_address)
            return request.make_response(ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "No group in this broker")
        return request.make_response(ResponseCode.SUCCESS, body=fastjson.dump_bytes(config.to_bean()))


class DeleteSubscriptionGroupProcessor:
    def __init__(
        self, *, config: BrokerConfig, groups: SubscriptionGroupManager, offsets: ConsumerOffsetStore
    ) -> None:
        self._config = config
        self._groups = groups
        self._offsets = offsets

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        if (refused := refused_on_slave(self._config, request)) is not None:
            return refused
        header = read_header(request, DeleteSubscriptionGroupRequestHeader)
        group = str(header.group_name)
        self._groups.delete(group)
        if header.remove_offset:
            self._offsets.remove_group(group)
        log.info("subscription group %s deleted by %s", group, conn.remote_address)
        return request.make_response(ResponseCode.SUCCESS)


class CloneGroupOffsetProcessor:
    def __init__(
        self, *, topics: TopicConfigManager, offsets: ConsumerOffsetStore, consumers: ConsumerManager
    ) -> None:
        self._topics = topics
        self._offsets = offsets
        self._consumers = consumers

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, CloneGroupOffsetRequestHeader)
        src, dest = str(header.src_group), str(header.dest_group)
        if header.topic and header.topic.strip():
            topics = [header.topic]
        else:
            topics = sorted(self._offsets.topics_of_group(src))
        for topic in topics:
            if self._topics.select(topic) is None:
                log.warning("clone group offset: topic %s does not exist", topic)
                continue
            if not header.offline:
                online = self._consumers.group(src)
                if online is not None and online.subscriptions and online.find_subscription(topic) is None:
                    log.warning("clone group offset: group %s does not subscribe to %s", src, topic)
                    continue
            offsets = self._offsets.offsets(src, topic)
            if offsets:
                # Java replaces the destination's entry for the topic with a copy of the source's
                self._offsets.merge({f"{topic}@{dest}": offsets})
                log.info("cloned offsets of %s on %s to %s", src, topic, dest)
        return request.make_response(ResponseCode.SUCCESS)


class GetBrokerConsumeStatsProcessor:
    def __init__(
        self,
        *,
        config: BrokerConfig,
        topics: TopicConfigManager,
        groups: SubscriptionGroupManager,
        offsets: ConsumerOffsetStore,
        consumers: ConsumerManager,
        store: MessageStore,
    ) -> None:
        self._config = config
        self._topics = topics
        self._groups = groups
        self._offsets = offsets
        self._consumers = consumers
        self._store = store

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, GetConsumeStatsInBrokerHeader)
        entries: list[dict[str, list[ConsumeStats]]] = []
        total_diff = 0
        for group in self._groups.groups():
            per_topic: list[ConsumeStats] = []
            online = self._consumers.group(group)
            for topic in sorted(self._offsets.topics_of_group(group)):
                config = self._topics.select(topic)
                if config is None:
                    continue
                if header.is_order and not config.order:
                    continue
                if online is not None and online.subscriptions and online.find_subscription(topic) is None:
                    continue
                stats = ConsumeStats(consume_tps=0.0)
                for queue_id in range(config.write_queue_nums):
                    queue = MessageQueue(topic=topic, broker_name=self._config.broker_name, queue_id=queue_id)
                    stats.offset_table[queue] = queue_progress(
                        self._store, self._offsets, group, topic, queue_id
                    )
                total_diff += stats.compute_total_diff()
                per_topic.append(stats)
            entries.append({group: per_topic})
        body = ConsumeStatsList(
            consume_stats_list=entries, broker_addr=self._config.broker_addr, total_diff=total_diff
        )
        return request.make_response(ResponseCode.SUCCESS, body=body.to_json())
