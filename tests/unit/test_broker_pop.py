"""POP on the project's broker, built from parts: the requests are the project's client's own
(``consumer.pop_requests``) and the answers are read the way that client reads them, so what passes here is
what a POP consumer gets from the broker."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from broker.clock import ManualClock
from broker.parts import BrokerParts
from broker.pop.checkpoints import CheckpointTable
from broker.processors.pop import (
    AckMessageProcessor,
    ChangeInvisibleTimeProcessor,
    NotificationProcessor,
    PopMessageProcessor,
)
from broker.testing import message_properties, open_parts
from consumer.pop_requests import (
    PopResult,
    PopSpec,
    PopStatus,
    ack_request,
    batch_ack_request,
    change_invisible_request,
    parse_change_response,
    parse_pop_response,
    pop_request,
    receipt_handle,
)
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.bodies.topic_config import TopicConfig
from rocketmq_wire.headers.pop import NotificationRequestHeader, NotificationResponseHeader
from rocketmq_wire.message import const
from rocketmq_wire.message.stored import MessageExt
from rocketmq_wire.pop_extra import pop_retry_topic
from tests.unit.broker_processor_helpers import call, wire_request

TOPIC = "PopTopic"
GROUP = "PopGroup"
INVISIBLE_MS = 30_000


@pytest.fixture
async def parts(tmp_path: Path) -> AsyncIterator[BrokerParts]:
    async with open_parts(tmp_path / "store") as opened:
        opened.metadata.topics.update(TopicConfig(topic_name=TOPIC, read_queue_nums=2, write_queue_nums=2))
        yield opened


async def put(parts: BrokerParts, body: bytes, *, queue_id: int = 0, tags: str = "TagA") -> None:
    message = MessageExt(
        topic=TOPIC,
        body=body,
        queue_id=queue_id,
        properties_string=message_properties(tags),
        born_timestamp=1,
        born_host=parts.config.store_host,
        store_host=parts.config.store_host,
    )
    result = await parts.storage.messages.put(message)
    assert result.status.stored


def processors(
    parts: BrokerParts,
) -> tuple[PopMessageProcessor, AckMessageProcessor, ChangeInvisibleTimeProcessor]:
    pop = parts.services.pop
    topics, store = parts.metadata.topics, parts.storage.store
    return (
        PopMessageProcessor(
            config=parts.config,
            clock=parts.clock,
            topics=topics,
            groups=parts.metadata.groups,
            pop=pop,
            filters=parts.services.filters,
            stats=parts.stats,
        ),
        AckMessageProcessor(topics=topics, store=store, pop=pop),
        ChangeInvisibleTimeProcessor(clock=parts.clock, topics=topics, store=store, pop=pop),
    )


def spec(**changes: object) -> PopSpec:
    fields: dict[str, object] = {
        "group": GROUP,
        "topic": TOPIC,
        "broker_name": "",
        "max_nums": 32,
        "invisible_time_ms": INVISIBLE_MS,
        "poll_time_ms": 0,
        "init_mode": 0,
    }
    fields.update(changes)
    return PopSpec(**fields)  # type: ignore[arg-type]


async def pop(
    parts: BrokerParts, the_spec: PopSpec | None = None
) -> tuple[RemotingCommand, PopResult | None]:
    the_spec = the_spec or spec(broker_name=parts.config.broker_name)
    answer = await call(processors(parts)[0], pop_request(the_spec, parts.clock.now_ms()))
    if answer.code not in (ResponseCode.SUCCESS, ResponseCode.POLLING_TIMEOUT, ResponseCode.POLLING_FULL):
        return answer, None
    result = parse_pop_response(
        answer, broker_name=parts.config.broker_name, topic=TOPIC, order=the_spec.order, addr="broker"
    )
    return answer, result


def bodies(result: PopResult | None) -> list[bytes]:
    assert result is not None
    return sorted(m.body for m in result.messages)


async def test_a_pop_hands_out_every_queue_once_and_hides_it(parts: BrokerParts) -> None:
    for i in range(3):
        await put(parts, f"m{i}".encode(), queue_id=i % 2)
    answer, result = await pop(parts)
    assert answer.code == ResponseCode.SUCCESS and answer.remark == "FOUND"
    assert bodies(result) == [b"m0", b"m1", b"m2"]
    assert result is not None and all(m.topic == TOPIC and m.reconsume_times == 0 for m in result.messages)
    answer, again = await pop(parts)
    assert answer.code == ResponseCode.POLLING_TIMEOUT and answer.remark == "NO_MESSAGE_IN_QUEUE"
    assert again is not None and again.status is PopStatus.NO_NEW_MSG


async def test_batch_size_and_tag_filter_are_kept(parts: BrokerParts) -> None:
    for i in range(4):
        await put(parts, f"m{i}".encode(), tags="TagA" if i % 2 == 0 else "TagB")
    name = parts.config.broker_name
    _, result = await pop(parts, spec(broker_name=name, expression_type="TAG", expression="TagB", max_nums=1))
    assert bodies(result) == [b"m1"]
    _, result = await pop(parts, spec(broker_name=name, expression_type="TAG", expression="TagB"))
    assert bodies(result) == [b"m3"]


async def test_bad_pops_are_refused_as_apache_refuses_them(parts: BrokerParts) -> None:
    name = parts.config.broker_name
    answer, _ = await pop(parts, spec(broker_name=name, max_nums=33))
    assert answer.code == ResponseCode.INVALID_PARAMETER
    assert answer.remark == f"the broker[{parts.config.broker_ip1}] pop message's num is greater than 32"
    answer, _ = await pop(parts, spec(broker_name=name, topic="NoSuchTopic"))
    assert answer.code == ResponseCode.TOPIC_NOT_EXIST
    answer, _ = await pop(parts, spec(broker_name=name, queue_id=2))
    assert answer.code == ResponseCode.INVALID_PARAMETER and "queueId[2] is illegal" in (answer.remark or "")


async def test_init_mode_max_starts_a_new_queue_at_its_first_message_while_it_is_in_memory(
    parts: BrokerParts,
) -> None:
    await put(parts, b"old")
    _, result = await pop(parts, spec(broker_name=parts.config.broker_name, init_mode=1))
    assert bodies(result) == [b"old"]


async def test_init_mode_max_otherwise_starts_at_the_last_message(tmp_path: Path) -> None:
    async with open_parts(tmp_path / "store", access_message_in_memory_max_ratio=0) as parts:
        parts.metadata.topics.update(TopicConfig(topic_name=TOPIC, read_queue_nums=1, write_queue_nums=1))
        for body in (b"old", b"last"):
            await put(parts, body)
        _, result = await pop(parts, spec(broker_name=parts.config.broker_name, init_mode=1))
        assert bodies(result) == [b"last"]
        await put(parts, b"new")
        _, result = await pop(parts, spec(broker_name=parts.config.broker_name, init_mode=1))
        assert bodies(result) == [b"new"]


async def test_unacked_messages_come_back_from_the_retry_topic_one_delivery_later(parts: BrokerParts) -> None:
    clock = parts.clock
    assert isinstance(clock, ManualClock)
    for i in range(3):
        await put(parts, f"m{i}".encode())
    _, result = await pop(parts)
    assert result is not None
    by_body = {m.body: m for m in result.messages}
    ack = processors(parts)[1]
    answer = await call(ack, ack_request(receipt_handle(by_body[b"m0"]), group=GROUP, topic=TOPIC))
    assert answer.code == ResponseCode.SUCCESS
    batch = [receipt_handle(by_body[b"m1"])]
    answer = await call(ack, batch_ack_request(batch, group=GROUP, topic=TOPIC))
    assert answer.code == ResponseCode.SUCCESS
    assert await parts.services.pop.revive_once() == 0, "nothing is due before the invisible time"
    clock.advance(INVISIBLE_MS + 1)
    assert await parts.services.pop.revive_once() == 1
    assert parts.metadata.topics.select(pop_retry_topic(TOPIC, GROUP)) is not None
    _, result = await pop(parts)
    assert result is not None and [(m.body, m.topic, m.reconsume_times) for m in result.messages] == [
        (b"m2", TOPIC, 1)
    ]
    # As Apache 5.5's revive: the redelivered message names its group and keeps its first pop time.
    assert result.messages[0].properties[const.ORIGIN_GROUP] == GROUP
    assert const.FIRST_POP_TIME in result.messages[0].properties
    handle = receipt_handle(result.messages[0])
    assert handle.retry == "1"
    answer = await call(ack, ack_request(handle, group=GROUP, topic=TOPIC))
    assert answer.code == ResponseCode.SUCCESS
    clock.advance(INVISIBLE_MS + 1)
    assert await parts.services.pop.revive_once() == 0, "an acknowledged redelivery stays done"
    assert parts.metadata.offsets.query_offset(GROUP, TOPIC, 0) == 3


async def test_a_changed_invisible_time_moves_the_reappearance(parts: BrokerParts) -> None:
    clock = parts.clock
    assert isinstance(clock, ManualClock)
    await put(parts, b"later")
    _, result = await pop(parts)
    assert result is not None
    request, header = change_invisible_request(
        receipt_handle(result.messages[0]), group=GROUP, topic=TOPIC, invisible_time_ms=3 * INVISIBLE_MS
    )
    answer = await call(processors(parts)[2], request)
    new_handle = parse_change_response(answer, header, broker_name=parts.config.broker_name, addr="b")
    clock.advance(INVISIBLE_MS + 1)
    assert await parts.services.pop.revive_once() == 0
    answer = await call(processors(parts)[1], ack_request(new_handle, group=GROUP, topic=TOPIC))
    assert answer.code == ResponseCode.SUCCESS
    clock.advance(3 * INVISIBLE_MS)
    assert await parts.services.pop.revive_once() == 0


async def test_an_ack_outside_the_queue_is_no_message(parts: BrokerParts) -> None:
    await put(parts, b"one")
    _, result = await pop(parts)
    assert result is not None
    handle = receipt_handle(result.messages[0])
    request = ack_request(dataclasses.replace(handle, queue_offset=5), group=GROUP, topic=TOPIC)
    answer = await call(processors(parts)[1], request)
    assert answer.code == ResponseCode.NO_MESSAGE
    assert answer.remark == f"offset is illegal, key:{TOPIC}@0, commit:5, store:0~1"


async def test_checkpoints_survive_a_restart(tmp_path: Path) -> None:
    clock = ManualClock()
    async with open_parts(tmp_path / "store", clock=clock) as parts:
        parts.metadata.topics.update(TopicConfig(topic_name=TOPIC, read_queue_nums=1, write_queue_nums=1))
        await put(parts, b"acked")
        await put(parts, b"unacked")
        _, result = await pop(parts)
        assert result is not None
        acked = next(m for m in result.messages if m.body == b"acked")
        answer = await call(
            processors(parts)[1], ack_request(receipt_handle(acked), group=GROUP, topic=TOPIC)
        )
        assert answer.code == ResponseCode.SUCCESS
    async with open_parts(tmp_path / "store", clock=clock) as parts:
        _, result = await pop(parts)
        assert result is not None and result.messages == [], "still hidden after the restart"
        clock.advance(INVISIBLE_MS + 1)
        assert await parts.services.pop.revive_once() == 1
        _, result = await pop(parts)
        assert bodies(result) == [b"unacked"]


async def test_a_long_poll_waits_for_a_message_and_times_out_without_one(parts: BrokerParts) -> None:
    name = parts.config.broker_name
    waiting = asyncio.create_task(pop(parts, spec(broker_name=name, poll_time_ms=5_000)))
    await asyncio.sleep(0.05)
    assert not waiting.done(), "held while nothing is there"
    await put(parts, b"arrived")
    # well before the 5 s poll would end on its own: answered by the arrival, not by the timeout
    answer, result = await asyncio.wait_for(waiting, 4.5)
    assert answer.code == ResponseCode.SUCCESS and bodies(result) == [b"arrived"]
    started = time.monotonic()
    answer, result = await pop(parts, spec(broker_name=name, poll_time_ms=200))
    assert answer.code == ResponseCode.POLLING_TIMEOUT and time.monotonic() - started >= 0.19
    assert result is not None and result.status is PopStatus.NO_NEW_MSG


async def test_an_orderly_pop_holds_a_queue_until_its_batch_is_done(parts: BrokerParts) -> None:
    clock = parts.clock
    assert isinstance(clock, ManualClock)
    for i in range(2):
        await put(parts, f"m{i}".encode())
    name = parts.config.broker_name
    orderly = spec(broker_name=name, order=True, max_nums=1, queue_id=0)
    _, result = await pop(parts, orderly)
    assert bodies(result) == [b"m0"]
    _, result = await pop(parts, orderly)
    assert result is not None and result.messages == [], "one batch in flight per queue"
    clock.advance(INVISIBLE_MS + 1)
    await parts.services.pop.revive_once()
    _, result = await pop(parts, orderly)
    assert bodies(result) == [b"m0"], "an orderly message comes back in its own queue, first"
    assert result is not None and result.messages[0].reconsume_times == 1
    handle = receipt_handle(result.messages[0])
    assert handle.is_order
    await call(processors(parts)[1], ack_request(handle, group=GROUP, topic=TOPIC))
    _, result = await pop(parts, orderly)
    assert bodies(result) == [b"m1"]


def notification(parts: BrokerParts, poll_time_ms: int) -> RemotingCommand:
    header = NotificationRequestHeader(
        consumer_group=GROUP, topic=TOPIC, queue_id=-1, poll_time=poll_time_ms, born_time=parts.clock.now_ms()
    )
    return wire_request(RequestCode.NOTIFICATION, header)


async def test_a_notification_says_whether_there_is_something_to_pop(parts: BrokerParts) -> None:
    notify = NotificationProcessor(
        config=parts.config,
        topics=parts.metadata.topics,
        groups=parts.metadata.groups,
        pop=parts.services.pop,
    )
    await pop(parts)  # the group starts popping, so later messages are its to pop
    answer = await call(notify, notification(parts, 0))
    assert answer.code == ResponseCode.SUCCESS
    assert answer.read_header(NotificationResponseHeader).has_msg is False
    waiting = asyncio.create_task(call(notify, notification(parts, 5_000)))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    await put(parts, b"news")
    answer = await asyncio.wait_for(waiting, 2)
    assert answer.read_header(NotificationResponseHeader).has_msg is True


async def test_nothing_is_acknowledged_that_was_not_written(
    parts: BrokerParts, monkeypatch: pytest.MonkeyPatch
) -> None:
    await put(parts, b"kept")

    def full_disk(self: CheckpointTable, data: bytes) -> None:
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patched:
        patched.setattr(CheckpointTable, "write", full_disk)
        answer, _ = await pop(parts)
        assert answer.code == ResponseCode.SYSTEM_ERROR and "not persisted" in (answer.remark or "")
    clock = parts.clock
    assert isinstance(clock, ManualClock)
    clock.advance(INVISIBLE_MS + 1)
    assert await parts.services.pop.revive_once() == 1, "the unanswered pop's message is not lost"
    _, result = await pop(parts)
    assert bodies(result) == [b"kept"]


async def test_a_sql92_pop_gets_only_what_its_expression_selects(parts: BrokerParts) -> None:
    for i in range(4):
        await put(parts, f"m{i}".encode(), tags="TagA" if i < 2 else "TagB")
    name = parts.config.broker_name
    _, result = await pop(parts, spec(broker_name=name, expression_type="SQL92", expression="TAGS = 'TagB'"))
    assert bodies(result) == [b"m2", b"m3"]
    answer, _ = await pop(parts, spec(broker_name=name, expression_type="SQL92", expression="a >"))
    assert (answer.code, answer.remark) == (
        ResponseCode.SUBSCRIPTION_PARSE_FAILED,
        "parse the consumer's subscription failed",
    )


async def test_without_the_timer_wheel_a_pop_is_refused(tmp_path: Path) -> None:
    async with open_parts(tmp_path / "store", timer_wheel_enable=False) as parts:
        answer, _ = await pop(parts)
        assert answer.code == ResponseCode.SYSTEM_ERROR
        ip = parts.config.broker_ip1
        assert answer.remark == f"the broker[{ip}] pop message is forbidden because timerWheelEnable is false"


async def test_a_batch_ack_of_a_whole_pop_commits_once_and_counts_each_message_once(
    parts: BrokerParts,
) -> None:
    clock = parts.clock
    assert isinstance(clock, ManualClock)
    for i in range(5):
        await put(parts, f"m{i}".encode())
    _, result = await pop(parts)
    assert result is not None and len(result.messages) == 5
    handles = [receipt_handle(m) for m in result.messages]
    ack = processors(parts)[1]
    answer = await call(ack, ack_request(handles[0], group=GROUP, topic=TOPIC))
    assert answer.code == ResponseCode.SUCCESS
    counted = parts.services.pop.revive_in[(GROUP, TOPIC, "ACK", "PUT_OK")]
    # The batch names one message already acknowledged and three of the four others (one twice).
    batch = [handles[0], handles[1], handles[2], handles[2], handles[3]]
    answer = await call(ack, batch_ack_request(batch, group=GROUP, topic=TOPIC))
    assert answer.code == ResponseCode.SUCCESS
    assert parts.services.pop.revive_in[(GROUP, TOPIC, "ACK", "PUT_OK")] == counted + 3
    assert parts.metadata.offsets.query_offset(GROUP, TOPIC, 0) == 4, "up to the one still in flight"
    clock.advance(INVISIBLE_MS + 1)
    assert await parts.services.pop.revive_once() == 1, "only m4 was not acknowledged"
    _, again = await pop(parts)
    assert bodies(again) == [b"m4"]
