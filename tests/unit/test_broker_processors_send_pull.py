"""SEND_MESSAGE(_V2), SEND_BATCH_MESSAGE and PULL_MESSAGE processors, built from broker parts: no broker runs,
no socket opens; each test gives a processor the parts its constructor names and reads the parts back."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from broker.parts import BrokerParts
from broker.testing import message_properties, open_parts
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.bodies.topic_config import TopicConfig
from rocketmq_wire.headers.pull import PullMessageRequestHeader, PullMessageResponseHeader
from rocketmq_wire.headers.send import SendMessageRequestHeaderV2, SendMessageResponseHeader
from rocketmq_wire.message import const, decode_messages, sysflag
from rocketmq_wire.message.batch import BatchEntry, encode_batch
from rocketmq_wire.topics import dlq_topic, retry_topic
from tests.unit.broker_processor_helpers import (
    FakeConnection,
    call,
    pull_processor,
    send_processor,
    wire_request,
)

TOPIC = "PartsTopic"
GROUP = "PartsGroup"


@pytest.fixture
async def parts(tmp_path: Path) -> AsyncIterator[BrokerParts]:
    async with open_parts(tmp_path / "store") as opened:
        opened.metadata.topics.update(TopicConfig(topic_name=TOPIC, read_queue_nums=2, write_queue_nums=2))
        yield opened


def send_request(
    topic: str,
    body: bytes,
    *,
    queue_id: int = 0,
    reconsume_times: int = 0,
    batch: bool = False,
    keys: tuple[str, ...] = (),
) -> RemotingCommand:
    header = SendMessageRequestHeaderV2(
        producer_group="PartsProducer",
        topic=topic,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=queue_id,
        sys_flag=0,
        born_timestamp=1,
        flag=0,
        properties=message_properties("TagA", keys),
        reconsume_times=reconsume_times,
        unit_mode=False,
        batch=batch,
    )
    code = RequestCode.SEND_BATCH_MESSAGE if batch else RequestCode.SEND_MESSAGE_V2
    return wire_request(code, header, body)


def pull_request(
    offset: int,
    *,
    topic: str = TOPIC,
    subscription: str | None = "*",
    suspend: bool = False,
    commit_offset: int | None = None,
) -> RemotingCommand:
    header = PullMessageRequestHeader(
        consumer_group=GROUP,
        topic=topic,
        queue_id=0,
        queue_offset=offset,
        max_msg_nums=32,
        sys_flag=sysflag.build_pull_sys_flag(
            commit_offset=commit_offset is not None, suspend=suspend, subscription=subscription is not None
        ),
        commit_offset=commit_offset or 0,
        suspend_timeout_millis=15_000 if suspend else 0,
        subscription=subscription,
        sub_version=0,
        expression_type="TAG",
    )
    return wire_request(RequestCode.PULL_MESSAGE, header)


# -- send ------------------------------------------------------------------------------------------------


async def test_a_send_is_stored_and_answered_with_where_it_went(parts: BrokerParts) -> None:
    answer = await call(send_processor(parts), send_request(TOPIC, b"hello", queue_id=1))
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    header = answer.read_header(SendMessageResponseHeader)
    assert (header.queue_id, header.queue_offset) == (1, 0)
    assert header.msg_id and header.transaction_id
    assert answer.fields()[const.MSG_REGION] == parts.config.region_id
    assert parts.storage.store.get_max_offset(TOPIC, 1) == 1
    assert parts.stats.put_times_total == 1


async def test_a_send_to_an_unknown_topic_is_refused_without_auto_creation(tmp_path: Path) -> None:
    async with open_parts(tmp_path / "store", auto_create_topic_enable=False) as parts:
        answer = await call(send_processor(parts), send_request("Nowhere", b"x"))
        assert answer.code == ResponseCode.TOPIC_NOT_EXIST
        assert answer.remark is not None and answer.remark.startswith("topic[Nowhere] not exist")
        assert "Nowhere" not in parts.metadata.topics


async def test_a_send_to_a_queue_the_topic_lacks_is_a_system_error(parts: BrokerParts) -> None:
    answer = await call(send_processor(parts), send_request(TOPIC, b"x", queue_id=5))
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert answer.remark is not None and "queueId[5] is illegal" in answer.remark


async def test_a_retry_past_its_limit_goes_to_the_dead_letter_topic(parts: BrokerParts) -> None:
    retry = retry_topic(GROUP)
    parts.metadata.topics.update(TopicConfig(topic_name=retry, read_queue_nums=1, write_queue_nums=1))
    answer = await call(send_processor(parts), send_request(retry, b"tired", reconsume_times=17))
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    dlq = dlq_topic(GROUP)
    assert dlq in parts.metadata.topics
    assert parts.storage.store.get_max_offset(dlq, 0) == 1
    assert parts.storage.store.get_max_offset(retry, 0) == 0


async def test_a_compacted_topic_refuses_a_message_without_keys_as_apache_does(parts: BrokerParts) -> None:
    compacted = "PartsCompacted"
    parts.metadata.topics.update(
        TopicConfig(
            topic_name=compacted,
            read_queue_nums=1,
            write_queue_nums=1,
            attributes={"cleanup.policy": "COMPACTION"},
        )
    )
    processor = send_processor(parts)
    for keys in ((), (" ",)):
        refused = await call(processor, send_request(compacted, b"no key", keys=keys))
        assert (refused.code, refused.remark) == (
            ResponseCode.MESSAGE_ILLEGAL,
            "Required message key is missing",
        )
    assert parts.storage.store.get_max_offset(compacted, 0) == 0
    kept = await call(processor, send_request(compacted, b"keyed", keys=("k1",)))
    assert kept.code == ResponseCode.SUCCESS, kept.remark
    # a topic that deletes by time takes messages without keys, as before
    plain = await call(processor, send_request(TOPIC, b"no key"))
    assert plain.code == ResponseCode.SUCCESS, plain.remark
    assert parts.storage.store.get_max_offset(compacted, 0) == 1


async def test_a_batch_is_stored_message_by_message(parts: BrokerParts) -> None:
    body = encode_batch(BatchEntry(text, "") for text in (b"one", b"two", b"three"))
    answer = await call(send_processor(parts), send_request(TOPIC, body, batch=True))
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    assert parts.storage.store.get_max_offset(TOPIC, 0) == 3


# -- pull ------------------------------------------------------------------------------------------------


async def test_a_pull_returns_what_was_sent(parts: BrokerParts) -> None:
    for text in (b"a", b"b"):
        await call(send_processor(parts), send_request(TOPIC, text))
    answer = await call(pull_processor(parts), pull_request(0))
    assert (answer.code, answer.remark) == (ResponseCode.SUCCESS, "FOUND")
    assert [message.body for message in decode_messages(answer.body)] == [b"a", b"b"]
    header = answer.read_header(PullMessageResponseHeader)
    assert (header.next_begin_offset, header.max_offset) == (2, 2)


async def test_a_pull_with_a_commit_offset_commits_it(parts: BrokerParts) -> None:
    await call(send_processor(parts), send_request(TOPIC, b"a"))
    await call(pull_processor(parts), pull_request(0, commit_offset=1))
    assert parts.metadata.offsets.query_offset(GROUP, TOPIC, 0) == 1


async def test_a_pull_at_the_end_is_held_for_long_polling(parts: BrokerParts) -> None:
    pull = pull_processor(parts)
    held = pull.process(pull_request(0, suspend=True), FakeConnection(), allow_suspend=True)
    assert held is None
    assert parts.services.pull_holder.held_count == 1
    # Handed back by the hold service, the same pull is answered rather than held again.
    again = pull.process(pull_request(0, suspend=True), FakeConnection(), allow_suspend=False)
    assert again is not None and again.code == ResponseCode.PULL_NOT_FOUND


async def test_a_pull_from_an_unknown_topic_is_refused(parts: BrokerParts) -> None:
    answer = await call(pull_processor(parts), pull_request(0, topic="Nowhere"))
    assert answer.code == ResponseCode.TOPIC_NOT_EXIST


async def test_a_pull_without_subscription_needs_the_groups_heartbeat(parts: BrokerParts) -> None:
    answer = await call(pull_processor(parts), pull_request(0, subscription=None))
    assert answer.code == ResponseCode.SUBSCRIPTION_NOT_EXIST
