"""Delay levels, consumer send-back into the retry topic, and the dead-letter queue, on a manual clock."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from broker import Broker, ManualClock
from broker.testing import BrokerClient, message_properties, running_broker
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.headers.consumer import ConsumerSendMsgBackRequestHeader
from rocketmq_wire.message import decode_messages
from rocketmq_wire.message.ids import decode_offset_msg_id
from rocketmq_wire.message.stored import MessageExt

LIMIT_S = 5


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
async def broker(tmp_path: Path, clock: ManualClock) -> AsyncIterator[Broker]:
    async with running_broker(tmp_path / "store", clock=clock) as running:
        yield running


@pytest.fixture
async def client(broker: Broker) -> AsyncIterator[BrokerClient]:
    async with BrokerClient(broker.address) as connected:
        yield connected


async def _arrival(client: BrokerClient, topic: str, offset: int) -> asyncio.Task[RemotingCommand]:
    """A long-polling pull at ``offset`` (held by the broker until something arrives there)."""
    return asyncio.create_task(client.pull("watcher", topic, 0, offset, suspend_ms=600_000))


async def _answer(pending: asyncio.Task[RemotingCommand]) -> MessageExt:
    async with asyncio.timeout(LIMIT_S):
        answer = await pending
    assert answer.code == ResponseCode.SUCCESS, answer
    [message] = decode_messages(answer.body)
    return message


async def _send_back(
    client: BrokerClient, message_id: str, *, max_times: int = 16, level: int = 0
) -> RemotingCommand:
    header = ConsumerSendMsgBackRequestHeader(
        offset=decode_offset_msg_id(message_id).offset,
        group="Workers",
        delay_level=level,
        origin_msg_id=message_id,
        origin_topic="Jobs",
        unit_mode=False,
        max_reconsume_times=max_times,
    )
    return await client.request(RequestCode.CONSUMER_SEND_MSG_BACK, header)


async def test_delayed_message_is_delivered_when_its_level_has_passed(
    broker: Broker, client: BrokerClient, clock: ManualClock
) -> None:
    await client.create_topic("Later", 1)
    sent = await client.send("Later", b"in five seconds", properties=message_properties("T", delay_level=2))
    assert sent.code == ResponseCode.SUCCESS
    assert broker.store.get_max_offset("Later", 0) == 0
    assert broker.store.get_max_offset("SCHEDULE_TOPIC_XXXX", 1) == 1  # level 2 waits in queue 1

    pending = await _arrival(client, "Later", 0)
    clock.advance(4999)
    await asyncio.sleep(0)
    assert broker.store.get_max_offset("Later", 0) == 0 and not pending.done()
    clock.advance(1)
    delivered = await _answer(pending)
    assert delivered.body == b"in five seconds" and delivered.topic == "Later"
    assert delivered.properties["REAL_TOPIC"] == "Later" and delivered.properties["REAL_QID"] == "0"
    assert delivered.unique_id == sent.fields()["transactionId"]
    assert broker.schedule.offsets() == {2: 1}


async def test_delay_level_beyond_the_table_is_clamped_to_the_last(
    broker: Broker, client: BrokerClient
) -> None:
    await client.create_topic("Later", 1)
    await client.send("Later", b"x", properties=message_properties(delay_level=99))
    assert broker.store.get_max_offset("SCHEDULE_TOPIC_XXXX", 17) == 1


async def test_send_back_retries_with_growing_delay_then_dead_letters(
    broker: Broker, client: BrokerClient, clock: ManualClock
) -> None:
    await client.create_topic("Jobs", 1)
    original = await client.send("Jobs", b"job", tags="TagA", keys=["job-1"])
    original_id = original.fields()["msgId"]

    # first failure: level 3 (10 s) into %RETRY%Workers
    assert (await _send_back(client, original_id, max_times=2)).code == ResponseCode.SUCCESS
    assert broker.topic_exists("%RETRY%Workers")
    pending = await _arrival(client, "%RETRY%Workers", 0)
    clock.advance(9_999)
    await asyncio.sleep(0)
    assert not pending.done()
    clock.advance(1)
    retry = await _answer(pending)
    assert retry.body == b"job" and retry.reconsume_times == 1
    assert retry.properties["RETRY_TOPIC"] == "Jobs"
    assert retry.properties["ORIGIN_MESSAGE_ID"] == original_id
    assert retry.keys == ["job-1"] and retry.tags == "TagA"

    # second failure: level 4 (30 s)
    assert (await _send_back(client, retry.msg_id, max_times=2)).code == ResponseCode.SUCCESS
    pending = await _arrival(client, "%RETRY%Workers", 1)
    clock.advance(30_000)
    again = await _answer(pending)
    assert again.reconsume_times == 2 and again.properties["ORIGIN_MESSAGE_ID"] == original_id

    # third failure: the retry limit is reached, straight to the dead-letter topic
    assert (await _send_back(client, again.msg_id, max_times=2)).code == ResponseCode.SUCCESS
    dead_letters = decode_messages((await client.pull("any", "%DLQ%Workers", 0, 0)).body)
    assert [m.body for m in dead_letters] == [b"job"]
    assert dead_letters[0].reconsume_times == 3
    assert broker.store.get_max_offset("%RETRY%Workers", 0) == 2


async def test_negative_level_dead_letters_at_once_and_bad_offset_is_refused(client: BrokerClient) -> None:
    await client.create_topic("Jobs", 1)
    sent = await client.send("Jobs", b"poison")
    assert (await _send_back(client, sent.fields()["msgId"], level=-1)).code == ResponseCode.SUCCESS
    assert [m.body for m in decode_messages((await client.pull("any", "%DLQ%Workers", 0, 0)).body)] == [
        b"poison"
    ]
    bogus = ConsumerSendMsgBackRequestHeader(offset=123_456, group="Workers", delay_level=0)
    refused = await client.request(RequestCode.CONSUMER_SEND_MSG_BACK, bogus)
    assert (
        refused.code == ResponseCode.SYSTEM_ERROR
        and refused.remark == "look message by offset failed, 123456"
    )


async def test_direct_send_to_retry_topic_past_the_limit_goes_to_the_dead_letter_topic(
    broker: Broker, client: BrokerClient
) -> None:
    within = await client.send("%RETRY%Workers", b"retry me", reconsume_times=3, max_reconsume_times=16)
    assert within.code == ResponseCode.SUCCESS
    assert broker.store.get_max_offset("%RETRY%Workers", 0) == 1
    beyond = await client.send("%RETRY%Workers", b"give up", reconsume_times=17, max_reconsume_times=16)
    assert beyond.code == ResponseCode.SUCCESS
    [dead] = decode_messages((await client.pull("any", "%DLQ%Workers", 0, 0)).body)
    assert dead.body == b"give up" and dead.topic == "%DLQ%Workers"


async def test_delay_progress_survives_a_restart(tmp_path: Path) -> None:
    clock = ManualClock()
    async with (
        running_broker(tmp_path / "store", clock=clock) as broker,
        BrokerClient(broker.address) as client,
    ):
        await client.create_topic("Later", 1)
        await client.send("Later", b"one", properties=message_properties(delay_level=1))
        pending = await _arrival(client, "Later", 0)
        clock.advance(1000)
        await _answer(pending)
    async with (
        running_broker(tmp_path / "store", clock=clock) as broker,
        BrokerClient(broker.address) as client,
    ):
        assert broker.schedule.offsets() == {1: 1}
        await client.send("Later", b"two", properties=message_properties(delay_level=1))
        pending = await _arrival(client, "Later", 1)
        clock.advance(1000)
        # had the first message been delivered again, it would be the one at offset 1
        assert (await _answer(pending)).body == b"two"
        assert broker.store.get_max_offset("Later", 0) == 2
