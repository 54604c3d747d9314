"""SET_MESSAGE_REQUEST_MODE, GET_ALL_MESSAGE_REQUEST_MODE and QUERY_ASSIGNMENT built from broker parts; the
requests are the project's admin and consumer requests, the answers read with the project's bodies."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from broker.clients import ClientChannelInfo
from broker.parts import BrokerParts
from broker.processors.pop_assignment import (
    GetAllMessageRequestModeProcessor,
    QueryAssignmentProcessor,
    SetMessageRequestModeProcessor,
)
from broker.testing import open_parts
from consumer.pop_requests import parse_assignment_response, query_assignment_request
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.bodies.pop import (
    MessageRequestMode,
    MessageRequestModeSerializeWrapper,
    SetMessageRequestModeRequestBody,
)
from rocketmq_wire.bodies.topic_config import TopicConfig
from tests.unit.broker_processor_helpers import FakeConnection, call

TOPIC = "ModeTopic"
GROUP = "ModeGroup"


@pytest.fixture
async def parts(tmp_path: Path) -> AsyncIterator[BrokerParts]:
    async with open_parts(tmp_path / "store") as opened:
        opened.metadata.topics.update(TopicConfig(topic_name=TOPIC, read_queue_nums=4, write_queue_nums=4))
        yield opened


def set_mode(topic: str, mode: MessageRequestMode = MessageRequestMode.POP) -> RemotingCommand:
    body = SetMessageRequestModeRequestBody(
        topic=topic, consumer_group=GROUP, mode=mode, pop_share_queue_num=0
    )
    return RemotingCommand.request(RequestCode.SET_MESSAGE_REQUEST_MODE, body=body.to_json())


def join(parts: BrokerParts, client_id: str) -> None:
    info = ClientChannelInfo(
        conn=FakeConnection(client_id),
        client_id=client_id,
        language="JAVA",
        version=0,
        last_update_timestamp=0,
    )
    parts.clients.consumers.register(GROUP, info, "CONSUME_PASSIVELY", "CLUSTERING", None, [], False)


async def test_a_mode_is_kept_across_a_restart_and_listed(tmp_path: Path) -> None:
    async with open_parts(tmp_path / "store") as parts:
        parts.metadata.topics.update(TopicConfig(topic_name=TOPIC, read_queue_nums=4, write_queue_nums=4))
        setter = SetMessageRequestModeProcessor(
            topics=parts.metadata.topics,
            groups=parts.metadata.groups,
            request_modes=parts.services.request_modes,
        )
        assert (await call(setter, set_mode(TOPIC))).code == ResponseCode.SUCCESS
        refused = await call(setter, set_mode("%RETRY%" + GROUP))
        assert (refused.code, refused.remark) == (
            ResponseCode.NO_PERMISSION,
            "retry topic is not allowed to set mode",
        )
        missing = await call(setter, set_mode("NoSuchTopic"))
        assert (missing.code, missing.remark) == (
            ResponseCode.TOPIC_NOT_EXIST,
            "topic[NoSuchTopic] not exist",
        )
    async with open_parts(tmp_path / "store") as parts:
        getter = GetAllMessageRequestModeProcessor(request_modes=parts.services.request_modes)
        answer = await call(getter, RemotingCommand.request(RequestCode.GET_ALL_MESSAGE_REQUEST_MODE))
        table = MessageRequestModeSerializeWrapper.from_json(answer.body).message_request_mode_map
        assert table[TOPIC][GROUP].mode == MessageRequestMode.POP


async def test_a_pop_group_is_assigned_every_queue_as_queue_minus_one(parts: BrokerParts) -> None:
    join(parts, "client-a")
    join(parts, "client-b")
    query = QueryAssignmentProcessor(
        config=parts.config,
        topics=parts.metadata.topics,
        consumers=parts.clients.consumers,
        request_modes=parts.services.request_modes,
    )

    async def assigned(client_id: str) -> list[tuple[int, MessageRequestMode]]:
        request = query_assignment_request(
            TOPIC, group=GROUP, client_id=client_id, strategy_name="AVG", message_model="CLUSTERING"
        )
        found = parse_assignment_response(await call(query, request), "broker")
        return sorted((a.message_queue.queue_id, a.mode) for a in found if a.message_queue is not None)

    pull = MessageRequestMode.PULL
    assert await assigned("client-a") == [(0, pull), (1, pull)]
    assert await assigned("client-b") == [(2, pull), (3, pull)]
    setter = SetMessageRequestModeProcessor(
        topics=parts.metadata.topics, groups=parts.metadata.groups, request_modes=parts.services.request_modes
    )
    await call(setter, set_mode(TOPIC))
    assert await assigned("client-a") == [(-1, MessageRequestMode.POP)]
