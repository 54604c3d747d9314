"""SET_MESSAGE_REQUEST_MODE, GET_ALL_MESSAGE_REQUEST_MODE and QUERY_ASSIGNMENT: a group switched to POP,
and the queues the broker assigns its members (Apache's ``QueryAssignmentProcessor``).

A POP group whose ``popShareQueueNum`` is not positive (or at least the member count less one) gets every
queue as queue -1 (pop from any queue); otherwise the members share queues as Apache's ``allocate4Pop`` does.
The queues are this broker's readable queues of the topic: Apache reads the topic's route, i.e. the queues
of every broker, which for a one-broker cluster is the same set.
"""

from __future__ import annotations

import logging

from broker.clients import ConsumerManager
from broker.config import BrokerConfig
from broker.pop.request_modes import MessageRequestModeManager
from broker.subscription_groups import SubscriptionGroupManager
from broker.topic_config_manager import TopicConfigManager
from rocketmq_wire import RemotingCommand, ResponseCode
from rocketmq_wire.bodies.message_queue import MessageQueue
from rocketmq_wire.bodies.pop import (
    MessageQueueAssignment,
    MessageRequestMode,
    QueryAssignmentRequestBody,
    QueryAssignmentResponseBody,
    SetMessageRequestModeRequestBody,
)
from rocketmq_wire.errors import CodecError
from rocketmq_wire.topics import RETRY_GROUP_TOPIC_PREFIX
from rocketmq_wire.transport import Connection

log = logging.getLogger("broker.processors.pop_assignment")

#: Apache's ``defaultPopShareQueueNum``.
DEFAULT_POP_SHARE_QUEUE_NUM = -1


class SetMessageRequestModeProcessor:
    def __init__(
        self,
        *,
        topics: TopicConfigManager,
        groups: SubscriptionGroupManager,
        request_modes: MessageRequestModeManager,
    ) -> None:
        self._topics = topics
        self._groups = groups
        self._modes = request_modes

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        try:
            body = SetMessageRequestModeRequestBody.from_json(request.body)
        except CodecError as exc:
            return request.make_response(ResponseCode.SYSTEM_ERROR, f"request body is illegal: {exc}")
        topic, group = body.topic or "", body.consumer_group or ""
        if topic.startswith(RETRY_GROUP_TOPIC_PREFIX):
            return request.make_response(ResponseCode.NO_PERMISSION, "retry topic is not allowed to set mode")
        if self._topics.select(topic) is None:
            return request.make_response(ResponseCode.TOPIC_NOT_EXIST, f"topic[{topic}] not exist")
        if self._groups.find(group) is None:
            return request.make_response(
                ResponseCode.SUBSCRIPTION_GROUP_NOT_EXIST, "subscription group does not exist"
            )
        try:
            self._modes.set(topic, group, body)
        except OSError as exc:
            log.error("request mode of %s on %s not saved: %s", group, topic, exc)
            return request.make_response(ResponseCode.SYSTEM_ERROR, f"request mode not persisted: {exc}")
        log.info("group %s consumes %s by %s", group, topic, body.mode)
        return request.make_response(ResponseCode.SUCCESS)


class GetAllMessageRequestModeProcessor:
    """The whole table, as a 5.x slave fetches it from its master each sync round."""

    def __init__(self, *, request_modes: MessageRequestModeManager) -> None:
        self._modes = request_modes

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        return request.make_response(ResponseCode.SUCCESS, body=self._modes.wrapper().to_json())


def _averagely(client_id: str, queues: list[MessageQueue], clients: list[str]) -> list[MessageQueue]:
    index = clients.index(client_id)
    size = len(queues)
    mod = size % len(clients)
    if size <= len(clients):
        share = 1
    elif mod > 0 and index < mod:
        share = size // len(clients) + 1
    else:
        share = size // len(clients)
    start = index * share if mod > 0 and index < mod else index * share + mod
    return [queues[(start + i) % size] for i in range(min(share, size - start))]


def _by_circle(client_id: str, queues: list[MessageQueue], clients: list[str]) -> list[MessageQueue]:
    index = clients.index(client_id)
    return [q for i, q in enumerate(queues) if i % len(clients) == index]


#: Apache's ``name2LoadStrategy`` names the broker can apply without per-client configuration.
_STRATEGIES = {"AVG": _averagely, "AVG_BY_CIRCLE": _by_circle}


class QueryAssignmentProcessor:
    def __init__(
        self,
        *,
        config: BrokerConfig,
        topics: TopicConfigManager,
        consumers: ConsumerManager,
        request_modes: MessageRequestModeManager,
    ) -> None:
        self._config = config
        self._topics = topics
        self._consumers = consumers
        self._modes = request_modes

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
        try:
            body = QueryAssignmentRequestBody.from_json(request.body)
        except CodecError as exc:
            return request.make_response(ResponseCode.SYSTEM_ERROR, f"request body is illegal: {exc}")
        topic, group = body.topic or "", body.consumer_group or ""
        setting = self._modes.find(topic, group)
        if setting is None:
            setting = SetMessageRequestModeRequestBody(
                topic=topic, consumer_group=group, mode=MessageRequestMode.PULL
            )
        queues = self._balance(body, setting)
        assignments = (
            None
            if queues is None
            else [
                MessageQueueAssignment(message_queue=q, mode=setting.mode or MessageRequestMode.PULL)
                for q in queues
            ]
        )
        answer = QueryAssignmentResponseBody(message_queue_assignments=assignments)
        return request.make_response(ResponseCode.SUCCESS, body=answer.to_json())

    def _balance(
        self, body: QueryAssignmentRequestBody, setting: SetMessageRequestModeRequestBody
    ) -> list[MessageQueue] | None:
        topic, group = body.topic or "", body.consumer_group or ""
        config = self._topics.select(topic)
        if config is None:
            log.warning("no assignment for group %s: topic %s does not exist", group, topic)
            return None
        name = self._config.broker_name
        every = [MessageQueue(topic, name, q) for q in range(config.read_queue_nums)]
        if body.message_model == "BROADCASTING":
            return every
        info = self._consumers.group(group)
        if info is None:
            log.warning("no assignment for group %s on %s: no member is known", group, topic)
            return None
        clients = sorted(info.client_ids())
        strategy = _STRATEGIES.get(body.strategy_name or "")
        client_id = body.client_id or ""
        if strategy is None or client_id not in clients or not every:
            log.warning(
                "no assignment for %s of group %s (strategy %s)", client_id, group, body.strategy_name
            )
            return None
        if setting.mode == MessageRequestMode.POP:
            share = setting.pop_share_queue_num
            if share <= 0 or share >= len(clients) - 1:
                return [MessageQueue(topic, name, -1) for _ in every[:1]]
            if len(clients) > len(every):
                return [every[clients.index(client_id) % len(every)]]
            chosen = strategy(client_id, every, clients)
            index = clients.index(client_id)
            for step in range(1, share + 1):
                chosen += strategy(clients[(index + step) % len(clients)], every, clients)
            return chosen
        return strategy(client_id, every, clients)
