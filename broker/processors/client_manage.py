"""HEART_BEAT, UNREGISTER_CLIENT and CHECK_CLIENT_CONFIG: clients joining and leaving groups, and asking
whether the broker can serve a subscription.

A heartbeat lists every group the client runs; the broker records the connection under each, with the
consumer groups' subscriptions, and makes sure each consumer group has its retry topic (so a failed
message always has somewhere to go). Both answers are a bare SUCCESS, as a 4.9 broker sends them.

CHECK_CLIENT_CONFIG is how a consumer with a SQL92 subscription finds out at start, not by pulling nothing,
that a broker will not filter for it: Apache's ``checkClientConfig`` answers SYSTEM_ERROR when
``enablePropertyFilter`` is off and SUBSCRIPTION_PARSE_FAILED (with the compiler's exception text) when the
expression does not compile; a tag subscription is always fine.
"""

from __future__ import annotations

import logging

from broker.clients import ClientChannelInfo, ConsumerManager, ProducerManager
from broker.clock import Clock
from broker.config import BrokerConfig
from broker.filtering import compile_expression
from broker.processors.common import BadRequest, read_header
from broker.processors.send import TOPIC_SYS_FLAG_UNIT_SUB
from broker.registration import ChangeAnnouncer
from broker.sql92 import CompileError, ExpressionCompiler
from broker.subscription_groups import SubscriptionGroupManager
from broker.topic_config_manager import TopicConfigManager
from rocketmq_wire import RemotingCommand, ResponseCode, topics
from rocketmq_wire.bodies.consumer import CheckClientRequestBody
from rocketmq_wire.bodies.heartbeat import HeartbeatData
from rocketmq_wire.bodies.subscription import is_tag_type
from rocketmq_wire.errors import CodecError
from rocketmq_wire.headers.consumer import UnregisterClientRequestHeader
from rocketmq_wire.perm import PERM_READ, PERM_WRITE
from rocketmq_wire.transport import Connection

log = logging.getLogger("broker.processors.client_manage")


def channel_info(
    clock: Clock, request: RemotingCommand, conn: Connection, client_id: str
) -> ClientChannelInfo:
    return ClientChannelInfo(
        conn=conn,
        client_id=client_id,
        language=request.language.name,
        version=request.version,
        last_update_timestamp=clock.now_ms(),
    )


class HeartbeatProcessor:
    def __init__(
        self,
        *,
        config: BrokerConfig,
        clock: Clock,
        topics: TopicConfigManager,
        groups: SubscriptionGroupManager,
        consumers: ConsumerManager,
        producers: ProducerManager,
        announcer: ChangeAnnouncer,
    ) -> None:
        self._config = config
        self._clock = clock
        self._topics = topics
        self._groups = groups
        self._consumers = consumers
        self._producers = producers
        self._announcer = announcer

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        try:
            heartbeat = HeartbeatData.from_json(request.body)
        except CodecError as exc:
            raise BadRequest(f"the heartbeat body is malformed: {exc}") from None
        info = channel_info(self._clock, request, conn, heartbeat.client_id or "")
        seen = self._announcer.changes
        for consumer in heartbeat.consumer_data_set:
            group = consumer.group_name or ""
            group_config = self._groups.find(group)
            notify = True
            if group_config is not None:
                notify = group_config.notify_consumer_ids_changed_enable
                self._topics.create_if_absent(
                    topics.retry_topic(group),
                    group_config.retry_queue_nums,
                    PERM_READ | PERM_WRITE,
                    TOPIC_SYS_FLAG_UNIT_SUB if consumer.unit_mode else 0,
                )
            changed = self._consumers.register(
                group,
                info,
                consumer.consume_type,
                consumer.message_model,
                consumer.consume_from_where,
                consumer.subscription_data_set,
                notify and self._config.notify_consumer_ids_changed_enable,
            )
            if changed:
                log.info(
                    "registered consumer group %s: %s, client %s",
                    group,
                    consumer.message_model,
                    info.client_id,
                )
        for producer in heartbeat.producer_data_set:
            self._producers.register(producer.group_name or "", info)
        await self._announcer.announced_since(seen)  # a new retry topic is routable once this is answered
        return request.make_response(ResponseCode.SUCCESS)


class UnregisterClientProcessor:
    def __init__(
        self,
        *,
        config: BrokerConfig,
        groups: SubscriptionGroupManager,
        consumers: ConsumerManager,
        producers: ProducerManager,
    ) -> None:
        self._config = config
        self._groups = groups
        self._consumers = consumers
        self._producers = producers

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        header = read_header(request, UnregisterClientRequestHeader)
        if header.producer_group is not None:
            self._producers.unregister(header.producer_group, conn)
        if header.consumer_group is not None:
            group_config = self._groups.find(header.consumer_group)
            notify = group_config.notify_consumer_ids_changed_enable if group_config is not None else True
            self._consumers.unregister(
                header.consumer_group, conn, notify and self._config.notify_consumer_ids_changed_enable
            )
        return request.make_response(ResponseCode.SUCCESS)


class CheckClientConfigProcessor:
    """Answers whether this broker can filter by a consumer's subscription, from the settings of the moment
    (``enablePropertyFilter`` changes live) and the compiler's cache."""

    def __init__(self, *, config: BrokerConfig, filters: ExpressionCompiler) -> None:
        self._config = config
        self._filters = filters

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        return self.answer_now(request, conn)

    def answer_now(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        try:
            body = CheckClientRequestBody.from_json(request.body) if request.body else None
        except CodecError as exc:
            raise BadRequest(f"the check-client-config body is malformed: {exc}") from None
        subscription = None if body is None else body.subscription_data
        if subscription is None or is_tag_type(subscription.expression_type):
            return request.make_response(ResponseCode.SUCCESS, None)
        expression_type = subscription.expression_type or ""
        if not self._config.enable_property_filter:
            return request.make_response(
                ResponseCode.SYSTEM_ERROR,
                f"The broker does not support consumer to filter message by {expression_type}",
            )
        try:
            compile_expression(self._filters, expression_type, subscription.sub_string)
        except CompileError as error:
            assert body is not None
            log.warning(
                "client %s of group %s filters by an expression that does not compile: %r (%s)",
                body.client_id,
                body.group,
                subscription.sub_string,
                error.remark,
            )
            return request.make_response(ResponseCode.SUBSCRIPTION_PARSE_FAILED, error.remark)
        return request.make_response(ResponseCode.SUCCESS, None)
