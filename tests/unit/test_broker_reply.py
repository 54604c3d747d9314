"""SEND_REPLY_MESSAGE_V2 built from parts: pushed to the requester's connection, stored in the reply topic,
and Apache's answers when the requester cannot be found or does not take the push."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from broker.clients import ClientChannelInfo
from broker.parts import BrokerParts
from broker.processors.reply import ReplyMessageProcessor
from broker.testing import open_parts
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.headers.send import ReplyMessageRequestHeader, SendMessageRequestHeaderV2
from rocketmq_wire.message import const
from rocketmq_wire.message.properties import decode_properties, encode_properties
from rocketmq_wire.topics import reply_topic
from tests.unit.broker_processor_helpers import FakeConnection, RecordingChannel, call, wire_request

REQUESTER = "10.0.0.9@requester"


@pytest.fixture
def channel() -> RecordingChannel:
    return RecordingChannel()


@pytest.fixture
async def parts(tmp_path: Path, channel: RecordingChannel) -> AsyncIterator[BrokerParts]:
    async with open_parts(tmp_path / "store", channel=channel) as opened:
        yield opened


def _processor(parts: BrokerParts) -> ReplyMessageProcessor:
    return ReplyMessageProcessor(
        config=parts.config,
        clock=parts.clock,
        topics=parts.metadata.topics,
        messages=parts.storage.messages,
        producers=parts.clients.producers,
        channel=parts.clients.channel,
    )


def _reply(parts: BrokerParts, to: str | None) -> RemotingCommand:
    properties = {const.CORRELATION_ID: "c-1"}
    if to is not None:
        properties[const.REPLY_TO_CLIENT] = to
    header = SendMessageRequestHeaderV2(
        producer_group="Responder",
        topic=reply_topic(parts.config.broker_cluster_name),
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=0,
        sys_flag=0,
        born_timestamp=1,
        flag=0,
        properties=encode_properties(properties),
        reconsume_times=0,
        unit_mode=False,
    )
    return wire_request(RequestCode.SEND_REPLY_MESSAGE_V2, header, b"the answer")


def _connect_requester(parts: BrokerParts) -> FakeConnection:
    conn = FakeConnection("10.0.0.9:41000")
    info = ClientChannelInfo(
        conn=conn, client_id=REQUESTER, language="JAVA", version=0, last_update_timestamp=0
    )  # type: ignore[arg-type]
    parts.clients.producers.register("Requester", info)
    return conn


async def test_a_reply_is_pushed_to_its_requester_and_stored(
    parts: BrokerParts, channel: RecordingChannel
) -> None:
    conn = _connect_requester(parts)
    answer = await call(_processor(parts), _reply(parts, REQUESTER))
    assert answer.code == ResponseCode.SUCCESS
    [(pushed_to, push, _)] = channel.invoked
    assert (
        pushed_to is conn
        and push.code == RequestCode.PUSH_REPLY_MESSAGE_TO_CLIENT
        and push.body == b"the answer"
    )
    header = RemotingCommand.decode(push.encode()).read_header(ReplyMessageRequestHeader)
    properties = decode_properties(header.properties or "")
    assert properties[const.CORRELATION_ID] == "c-1" and const.PUSH_REPLY_TIME in properties
    assert (header.producer_group, header.born_host) == ("Responder", "10.0.0.7:50001")
    store = parts.storage.store
    assert store.get_max_offset(reply_topic(parts.config.broker_cluster_name), 0) == 1


@pytest.mark.parametrize(
    ("to", "remark"),
    [
        (None, f"reply message properties[{const.REPLY_TO_CLIENT}] is null"),
        ("10.0.0.1@gone", "push reply message fail, channel of <10.0.0.1@gone> not found."),
    ],
)
async def test_a_reply_without_its_requester_is_refused_as_apache(
    parts: BrokerParts, channel: RecordingChannel, to: str | None, remark: str
) -> None:
    answer = await call(_processor(parts), _reply(parts, to))
    assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR, remark)
    assert channel.invoked == []


async def test_a_push_the_requester_refuses_is_a_system_error(
    parts: BrokerParts, channel: RecordingChannel
) -> None:
    _connect_requester(parts)
    channel.answer = RemotingCommand(code=ResponseCode.SYSTEM_ERROR, remark="no")
    answer = await call(_processor(parts), _reply(parts, REQUESTER))
    assert (answer.code, answer.remark) == (
        ResponseCode.SYSTEM_ERROR,
        f"push reply message to {REQUESTER}fail.",
    )
