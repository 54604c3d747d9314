"""Consumer management processors built from broker parts: heartbeats and unregistering, consumer offsets,
a group's member list, and the requests the broker relays to consumers (through a recording client channel,
not a server)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from broker.parts import BrokerParts
from broker.processors.client_manage import HeartbeatProcessor, UnregisterClientProcessor
from broker.processors.common import BadRequest
from broker.processors.consumer_manage import (
    GetConsumerListByGroupProcessor,
    QueryConsumerOffsetProcessor,
    UpdateConsumerOffsetProcessor,
)
from broker.processors.consumer_relay import CALL_CLIENT_TIMEOUT_MS, ConsumerRelayProcessor
from broker.processors.reset_offset import TO_LATEST, ResetOffsetProcessor
from broker.testing import open_parts
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.bodies.consumer import GetConsumerListByGroupResponseBody, ResetOffsetBody
from rocketmq_wire.bodies.heartbeat import ConsumerData, HeartbeatData, ProducerData
from rocketmq_wire.bodies.subscription import build_subscription
from rocketmq_wire.bodies.topic_config import TopicConfig
from rocketmq_wire.codes import MQVersion
from rocketmq_wire.headers.consumer import (
    GetConsumerListByGroupRequestHeader,
    GetConsumerRunningInfoRequestHeader,
    UnregisterClientRequestHeader,
)
from rocketmq_wire.headers.offset import (
    QueryConsumerOffsetRequestHeader,
    QueryConsumerOffsetResponseHeader,
    ResetOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader,
)
from rocketmq_wire.topics import retry_topic
from rocketmq_wire.transport import RemotingTimeoutError
from tests.unit.broker_processor_helpers import FakeConnection, RecordingChannel, call, wire_request

TOPIC = "ConsumedTopic"
GROUP = "ConsumerParts"
CLIENT = "10.0.0.7@parts"


@pytest.fixture
def channel() -> RecordingChannel:
    return RecordingChannel()


@pytest.fixture
async def parts(tmp_path: Path, channel: RecordingChannel) -> AsyncIterator[BrokerParts]:
    async with open_parts(tmp_path / "store", channel=channel) as opened:
        opened.metadata.topics.update(TopicConfig(topic_name=TOPIC, read_queue_nums=2, write_queue_nums=2))
        yield opened


def heartbeat(parts: BrokerParts) -> HeartbeatProcessor:
    return HeartbeatProcessor(
        config=parts.config,
        clock=parts.clock,
        topics=parts.metadata.topics,
        groups=parts.metadata.groups,
        consumers=parts.clients.consumers,
        producers=parts.clients.producers,
        announcer=parts.services.announcer,
    )


async def join(parts: BrokerParts, conn: FakeConnection, *, producer_group: str | None = None) -> None:
    """A heartbeat from ``conn`` naming the consumer group (and a producer group, when given)."""
    subscription = build_subscription(TOPIC, "*", "TAG")
    body = HeartbeatData(
        client_id=CLIENT,
        producer_data_set=[ProducerData(group_name=producer_group)] if producer_group else [],
        consumer_data_set=[
            ConsumerData(
                group_name=GROUP,
                consume_type="CONSUME_PASSIVELY",
                message_model="CLUSTERING",
                consume_from_where="CONSUME_FROM_FIRST_OFFSET",
                subscription_data_set=[subscription],
            )
        ],
    ).to_json()
    request = wire_request(RequestCode.HEART_BEAT, body=body, version=MQVersion.value_of("V4_9_4"))
    answer = await call(heartbeat(parts), request, conn)
    assert answer.code == ResponseCode.SUCCESS


# -- heartbeat and unregister ------------------------------------------------------------------------------


async def test_a_heartbeat_registers_its_groups_and_makes_the_retry_topic(parts: BrokerParts) -> None:
    conn = FakeConnection()
    await join(parts, conn, producer_group="ProducerParts")
    group = parts.clients.consumers.group(GROUP)
    assert group is not None and group.client_ids() == [CLIENT]
    assert group.find_subscription(TOPIC) is not None
    assert [info.client_id for info in parts.clients.producers.members("ProducerParts")] == [CLIENT]
    assert retry_topic(GROUP) in parts.metadata.topics


async def test_a_malformed_heartbeat_is_a_bad_request(parts: BrokerParts) -> None:
    with pytest.raises(BadRequest):
        await heartbeat(parts)(wire_request(RequestCode.HEART_BEAT, body=b"{not json"), FakeConnection())


async def test_unregistering_takes_the_client_out_of_its_groups(parts: BrokerParts) -> None:
    conn = FakeConnection()
    await join(parts, conn, producer_group="ProducerParts")
    unregister = UnregisterClientProcessor(
        config=parts.config,
        groups=parts.metadata.groups,
        consumers=parts.clients.consumers,
        producers=parts.clients.producers,
    )
    header = UnregisterClientRequestHeader(
        client_id=CLIENT, producer_group="ProducerParts", consumer_group=GROUP
    )
    answer = await call(unregister, wire_request(RequestCode.UNREGISTER_CLIENT, header), conn)
    assert answer.code == ResponseCode.SUCCESS
    group = parts.clients.consumers.group(GROUP)
    assert group is None or not group.channels
    assert not parts.clients.producers.members("ProducerParts")


# -- consumer offsets and members --------------------------------------------------------------------------


async def test_an_updated_offset_is_what_a_query_answers(parts: BrokerParts) -> None:
    offsets, store = parts.metadata.offsets, parts.storage.store
    update = UpdateConsumerOffsetProcessor(offsets=offsets)
    header = UpdateConsumerOffsetRequestHeader(
        consumer_group=GROUP, topic=TOPIC, queue_id=1, commit_offset=42
    )
    assert (await call(update, wire_request(RequestCode.UPDATE_CONSUMER_OFFSET, header))).code == 0
    query = QueryConsumerOffsetProcessor(offsets=offsets, store=store)
    asked = QueryConsumerOffsetRequestHeader(consumer_group=GROUP, topic=TOPIC, queue_id=1)
    answer = await call(query, wire_request(RequestCode.QUERY_CONSUMER_OFFSET, asked))
    assert answer.code == ResponseCode.SUCCESS
    assert answer.read_header(QueryConsumerOffsetResponseHeader).offset == 42


async def test_a_group_without_an_offset_starts_a_queue_still_whole_at_zero(parts: BrokerParts) -> None:
    query = QueryConsumerOffsetProcessor(offsets=parts.metadata.offsets, store=parts.storage.store)
    asked = QueryConsumerOffsetRequestHeader(consumer_group=GROUP, topic=TOPIC, queue_id=0)
    answer = await call(query, wire_request(RequestCode.QUERY_CONSUMER_OFFSET, asked))
    assert answer.code == ResponseCode.SUCCESS
    assert answer.read_header(QueryConsumerOffsetResponseHeader).offset == 0
    asked.set_zero_if_not_found = False
    refused = await call(query, wire_request(RequestCode.QUERY_CONSUMER_OFFSET, asked))
    assert refused.code == ResponseCode.QUERY_NOT_FOUND


async def test_the_consumer_list_names_the_members_of_a_group(parts: BrokerParts) -> None:
    listing = GetConsumerListByGroupProcessor(consumers=parts.clients.consumers)
    header = GetConsumerListByGroupRequestHeader(consumer_group=GROUP)
    missing = await call(listing, wire_request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, header))
    assert (missing.code, missing.remark) == (
        ResponseCode.SYSTEM_ERROR,
        f"no consumer for this group, {GROUP}",
    )
    await join(parts, FakeConnection())
    answer = await call(listing, wire_request(RequestCode.GET_CONSUMER_LIST_BY_GROUP, header))
    assert GetConsumerListByGroupResponseBody.from_json(answer.body).consumer_id_list == [CLIENT]


# -- what the broker sends consumers -----------------------------------------------------------------------


def relay(parts: BrokerParts) -> ConsumerRelayProcessor:
    return ConsumerRelayProcessor(
        config=parts.config,
        consumers=parts.clients.consumers,
        store=parts.storage.store,
        channel=parts.clients.channel,
    )


def running_info_request() -> RemotingCommand:
    header = GetConsumerRunningInfoRequestHeader(consumer_group=GROUP, client_id=CLIENT)
    return wire_request(RequestCode.GET_CONSUMER_RUNNING_INFO, header)


async def test_running_info_is_asked_of_the_consumer_over_its_own_connection(
    parts: BrokerParts, channel: RecordingChannel
) -> None:
    conn = FakeConnection()
    await join(parts, conn)
    channel.answer = RemotingCommand(code=ResponseCode.SUCCESS, body=b"running", flag=1)
    answer = await call(relay(parts), running_info_request())
    assert (answer.code, answer.body) == (ResponseCode.SUCCESS, b"running")
    [(reached, forwarded, timeout)] = channel.invoked
    assert reached is conn and timeout == CALL_CLIENT_TIMEOUT_MS
    assert forwarded.code == RequestCode.GET_CONSUMER_RUNNING_INFO


async def test_a_consumer_that_does_not_answer_in_time_is_a_timeout(
    parts: BrokerParts, channel: RecordingChannel
) -> None:
    await join(parts, FakeConnection())
    channel.error = RemotingTimeoutError("no answer")
    answer = await call(relay(parts), running_info_request())
    assert answer.code == ResponseCode.CONSUME_MSG_TIMEOUT


async def test_running_info_of_a_consumer_not_online_is_refused(
    parts: BrokerParts, channel: RecordingChannel
) -> None:
    answer = await call(relay(parts), running_info_request())
    assert (answer.code, answer.remark) == (
        ResponseCode.SYSTEM_ERROR,
        f"The Consumer <{GROUP}> <{CLIENT}> not online",
    )
    assert not channel.invoked


async def test_a_reset_tells_every_member_the_new_offsets(
    parts: BrokerParts, channel: RecordingChannel
) -> None:
    conn = FakeConnection()
    await join(parts, conn)
    for queue_id in range(2):
        parts.metadata.offsets.commit_offset(GROUP, TOPIC, queue_id, 0)
    reset = ResetOffsetProcessor(
        config=parts.config,
        topics=parts.metadata.topics,
        offsets=parts.metadata.offsets,
        consumers=parts.clients.consumers,
        store=parts.storage.store,
        channel=parts.clients.channel,
    )
    header = ResetOffsetRequestHeader(topic=TOPIC, group=GROUP, timestamp=TO_LATEST, is_force=True)
    answer = await call(reset, wire_request(RequestCode.INVOKE_BROKER_TO_RESET_OFFSET, header))
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    [(reached, notice)] = channel.oneways
    assert reached is conn and notice.code == RequestCode.RESET_CONSUMER_CLIENT_OFFSET
    offsets = ResetOffsetBody.from_json(notice.body).offset_table
    assert sorted((queue.queue_id, offset) for queue, offset in offsets.items()) == [(0, 0), (1, 0)]
