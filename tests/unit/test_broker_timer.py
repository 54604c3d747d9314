"""Timer messages in the broker: the send-side checks, delivery time and order, recall, and recovery."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from broker.clock import ManualClock
from broker.parts import BrokerParts
from broker.processors.recall import RecallMessageProcessor
from broker.processors.timer_admin import GetTimerCheckPointProcessor, GetTimerMetricsProcessor
from broker.store import PutMessageResult, PutMessageStatus
from broker.store.timer_log import TimerLog
from broker.testing import message_properties, open_parts
from broker.timer import TIMER_TOPIC, floor_to_precision, flow_control_remark, java_parse_long, snap_precision
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.bodies.timer import TimerCheckpointBody, TimerMetricsBody
from rocketmq_wire.bodies.topic_config import TopicConfig
from rocketmq_wire.headers.send import (
    RecallMessageRequestHeader,
    RecallMessageResponseHeader,
    SendMessageRequestHeaderV2,
    SendMessageResponseHeader,
)
from rocketmq_wire.message import const, decode_messages
from rocketmq_wire.message.recall import RecallHandle
from rocketmq_wire.message.stored import MessageExt
from rocketmq_wire.topics import SCHEDULE_TOPIC
from tests.unit.broker_processor_helpers import call, send_processor, wire_request

TOPIC = "TimerTopic"
START_MS = 1_700_000_000_123  # not on a second: the floor shows


def recall_processor(parts: BrokerParts) -> RecallMessageProcessor:
    return RecallMessageProcessor(
        config=parts.config,
        topics=parts.metadata.topics,
        messages=parts.storage.messages,
        timer=parts.storage.timer,
    )


def send_request(timer: dict[str, str], body: bytes = b"payload", delay_level: int = 0) -> RemotingCommand:
    header = SendMessageRequestHeaderV2(
        producer_group="TimerProducer",
        topic=TOPIC,
        default_topic="TBW102",
        default_topic_queue_nums=4,
        queue_id=1,
        sys_flag=0,
        born_timestamp=1,
        flag=0,
        properties=message_properties("TagA", extra=timer, delay_level=delay_level),
        reconsume_times=0,
        unit_mode=False,
        batch=False,
    )
    return wire_request(RequestCode.SEND_MESSAGE_V2, header, body)


def recall_request(handle: str, topic: str = TOPIC) -> RemotingCommand:
    header = RecallMessageRequestHeader(producer_group="TimerProducer", recall_handle=handle, topic=topic)
    return wire_request(RequestCode.RECALL_MESSAGE, header)


@pytest.fixture
async def parts(tmp_path: Path) -> AsyncIterator[BrokerParts]:
    async with open_parts(
        tmp_path / "store", clock=ManualClock(START_MS), recall_message_enable=True
    ) as opened:
        add_topic(opened)
        yield opened


def add_topic(parts: BrokerParts) -> None:
    parts.metadata.topics.update(TopicConfig(topic_name=TOPIC, read_queue_nums=2, write_queue_nums=2))


def clock_of(parts: BrokerParts) -> ManualClock:
    assert isinstance(parts.clock, ManualClock)
    return parts.clock


def delivered(parts: BrokerParts) -> list[MessageExt]:
    result = parts.storage.store.get_messages(TOPIC, 1, 0, 64)
    return decode_messages(b"".join(result.messages))


async def send(
    parts: BrokerParts, timer: dict[str, str], body: bytes = b"payload"
) -> SendMessageResponseHeader:
    answer = await call(send_processor(parts), send_request(timer, body))
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    header = answer.read_header(SendMessageResponseHeader)
    assert isinstance(header, SendMessageResponseHeader)
    return header


# -- pure rules ------------------------------------------------------------------------------------------


def test_floor_is_apaches() -> None:
    assert floor_to_precision(5_500, 1000) == 5_000
    assert floor_to_precision(5_000, 1000) == 4_000  # exactly on a slot: one earlier
    assert floor_to_precision(5_001, 100) == 5_000


def test_java_parse_long_is_strict() -> None:
    assert java_parse_long("-12") == -12
    for bad in ("", "1.5", " 1", "0x10", "9223372036854775808", "١"):
        with pytest.raises(ValueError):
            java_parse_long(bad)


# -- sending -------------------------------------------------------------------------------------------------


async def test_timer_message_waits_in_the_timer_topic(parts: BrokerParts) -> None:
    header = await send(parts, {const.TIMER_DELAY_SEC: "5"})
    assert header.queue_id == 1
    assert delivered(parts) == []
    held = decode_messages(b"".join(parts.storage.store.get_messages(TIMER_TOPIC, 0, 0, 8).messages))
    assert len(held) == 1
    props = held[0].properties
    assert props[const.REAL_TOPIC] == TOPIC and props[const.REAL_QID] == "1"
    assert props[const.TIMER_OUT_MS] == str((START_MS + 5000) // 1000 * 1000)
    assert header.recall_handle is not None
    handle = RecallHandle.decode(header.recall_handle)
    assert handle == RecallHandle(
        TOPIC, parts.config.broker_name, str(int(props[const.TIMER_OUT_MS]) + 1), props[const.UNIQ_KEY]
    )


async def test_delivery_at_time_in_time_order(parts: BrokerParts) -> None:
    clock = clock_of(parts)
    late = await send(parts, {const.TIMER_DELAY_MS: "3000"}, b"late")
    early = await send(parts, {const.TIMER_DELIVER_MS: str(START_MS + 1500)}, b"early")
    due_early = (START_MS + 1500) // 1000 * 1000
    due_late = (START_MS + 3000) // 1000 * 1000
    clock.advance(due_early - START_MS - 1)
    assert await parts.storage.timer.deliver_due() == 1
    assert delivered(parts) == []
    clock.advance(1)
    await parts.storage.timer.deliver_due()
    assert [m.body for m in delivered(parts)] == [b"early"]
    clock.advance(due_late - due_early)
    assert await parts.storage.timer.deliver_due() is None
    out = delivered(parts)
    assert [m.body for m in out] == [b"early", b"late"]
    late_copy = out[1]
    assert late_copy.properties[const.UNIQ_KEY] == late.transaction_id
    assert out[0].properties[const.UNIQ_KEY] == early.transaction_id
    # Apache's copy keeps where it was bound (its properties string is written before they are cleared)
    assert (late_copy.properties[const.REAL_TOPIC], late_copy.properties[const.REAL_QID]) == (
        late_copy.topic,
        str(late_copy.queue_id),
    )
    assert late_copy.properties[const.TIMER_OUT_MS] == str(due_late)
    assert late_copy.properties[const.TIMER_DELAY_MS] == "3000"
    assert late_copy.properties[const.TIMER_DEQUEUE_MS] == str(due_late)
    assert late_copy.properties[const.TIMER_ENQUEUE_MS] == str(START_MS)
    assert late_copy.store_timestamp == due_late
    assert parts.storage.timer.pending == 0


async def test_past_time_is_delivered_at_once(parts: BrokerParts) -> None:
    await send(parts, {const.TIMER_DELIVER_MS: str(START_MS - 10)})
    assert len(delivered(parts)) == 1
    assert parts.storage.store.get_max_offset(TIMER_TOPIC, 0) == 0


async def test_refusals(parts: BrokerParts) -> None:
    sender = send_processor(parts)
    max_ms = parts.config.timer_max_delay_sec * 1000
    remark = (
        f"timer message illegal, the delay time should not be bigger than the max delay {max_ms}ms; "
        "or if set del msg, the delay time should be bigger than the current time"
    )
    for bad in (
        {const.TIMER_DELAY_SEC: str(parts.config.timer_max_delay_sec + 1)},
        {const.TIMER_DELAY_MS: "soon"},
        {const.TIMER_DELIVER_MS: str(START_MS + max_ms + 1)},
    ):
        answer = await call(sender, send_request(bad))
        assert (answer.code, answer.remark) == (ResponseCode.MESSAGE_ILLEGAL, remark)
    parts.config.timer_wheel_enable = False
    answer = await call(sender, send_request({const.TIMER_DELAY_SEC: "5"}))
    assert answer.code == ResponseCode.SYSTEM_ERROR
    assert answer.remark == "accurate timer message is not enabled, timerWheelEnable is false"
    assert delivered(parts) == []


async def test_delay_level_wins_over_timer(parts: BrokerParts) -> None:
    answer = await call(send_processor(parts), send_request({const.TIMER_DELAY_SEC: "5"}, delay_level=1))
    assert answer.code == ResponseCode.SUCCESS
    held = decode_messages(b"".join(parts.storage.store.get_messages(SCHEDULE_TOPIC, 0, 0, 8).messages))
    assert len(held) == 1 and const.TIMER_DELAY_SEC not in held[0].properties
    assert parts.storage.store.get_max_offset(TIMER_TOPIC, 0) == 0


def all_delivered(parts: BrokerParts) -> list[MessageExt]:
    store = parts.storage.store
    found: list[MessageExt] = []
    while (result := store.get_messages(TOPIC, 1, len(found), 32)).messages:
        found += decode_messages(b"".join(result.messages))
    return found


async def test_a_large_slot_goes_out_in_few_appends_and_recalls_still_hold(
    parts: BrokerParts, monkeypatch: pytest.MonkeyPatch
) -> None:
    """300 timers in one slot, read in runs and stored in batches of up to 128: each copy once, a recall
    whose marker is read in the last batch still drops a message of the first, and a timer of a later slot
    sent in between (a gap in the slot's offsets) waits for its own time."""
    sent = [await send(parts, {const.TIMER_DELAY_SEC: "2"}, f"m{n}".encode()) for n in range(150)]
    await send(parts, {const.TIMER_DELAY_SEC: "9"}, b"later")
    sent += [await send(parts, {const.TIMER_DELAY_SEC: "2"}, f"m{n}".encode()) for n in range(150, 300)]
    handle = sent[4].recall_handle
    assert handle is not None
    answer = await call(recall_processor(parts), recall_request(handle))
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    messages = parts.storage.messages
    appends: list[int] = []
    put_all = messages.put_all

    async def counted(batch: Any) -> Any:
        appends.append(len(batch))
        return await put_all(batch)

    monkeypatch.setattr(messages, "put_all", counted)
    clock_of(parts).advance(3000)
    delivery = asyncio.create_task(parts.storage.timer.deliver_due())
    seen: list[int] = []  # appends made whenever another task got a turn during the delivery
    while not delivery.done():
        seen.append(len(appends))
        await asyncio.sleep(0)
    await delivery
    assert {1, 2} <= set(seen), "the loop got a turn between the batches of copies"
    bodies = [m.body for m in all_delivered(parts)]
    assert sorted(bodies) == sorted(f"m{n}".encode() for n in range(300) if n != 4)
    assert sorted(appends) == [43, 128, 128]  # 299 copies; not one append per message
    assert parts.storage.timer.recalled_count == 1
    assert parts.storage.timer.pending == 1  # "later"
    clock_of(parts).advance(7000)
    await parts.storage.timer.deliver_due()
    assert [m.body for m in all_delivered(parts)][-1] == b"later"


async def test_copies_refused_together_are_stored_one_by_one(
    parts: BrokerParts, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An append is all or nothing: when the batch is refused, each copy is tried alone, so a refusal that
    concerns one copy costs that copy only (here none: every copy alone is fine)."""
    for n in range(5):
        await send(parts, {const.TIMER_DELAY_SEC: "2"}, f"m{n}".encode())

    messages = parts.storage.messages
    put_all = messages.put_all

    async def refused(batch: Any) -> PutMessageResult:  # put() of one message goes through put_all too
        return PutMessageResult(PutMessageStatus.MESSAGE_ILLEGAL) if len(batch) > 1 else await put_all(batch)

    monkeypatch.setattr(messages, "put_all", refused)
    clock_of(parts).advance(3000)
    await parts.storage.timer.deliver_due()
    assert sorted(m.body for m in all_delivered(parts)) == [f"m{n}".encode() for n in range(5)]
    assert parts.storage.timer.pending == 0


async def test_without_fsync_the_progress_log_is_written_on_the_loop(
    parts: BrokerParts, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ASYNC_FLUSH: no progress append goes through a worker thread (two hops per batch cost more than the
    page-cache write); SYNC_FLUSH keeps them off the loop (``test_crash_inside_a_delivery...`` runs it)."""
    assert not parts.storage.timer.progress.sync

    async def no_thread(*args: Any) -> Any:
        raise AssertionError("a progress append went to a thread")

    await send(parts, {const.TIMER_DELAY_SEC: "2"}, b"m")
    monkeypatch.setattr("broker.timer.asyncio.to_thread", no_thread)
    clock_of(parts).advance(3000)
    await parts.storage.timer.deliver_due()
    assert [m.body for m in all_delivered(parts)] == [b"m"]
    assert parts.storage.timer.pending == 0


# -- recall -----------------------------------------------------------------------------------------


async def test_recalled_message_is_never_delivered(parts: BrokerParts) -> None:
    kept = await send(parts, {const.TIMER_DELAY_SEC: "2"}, b"kept")
    gone = await send(parts, {const.TIMER_DELAY_SEC: "2"}, b"gone")
    assert gone.recall_handle is not None
    answer = await call(recall_processor(parts), recall_request(gone.recall_handle))
    assert answer.code == ResponseCode.SUCCESS, answer.remark
    recalled = answer.read_header(RecallMessageResponseHeader)
    assert isinstance(recalled, RecallMessageResponseHeader) and recalled.msg_id == gone.transaction_id
    clock_of(parts).advance(3000)
    await parts.storage.timer.deliver_due()
    out = delivered(parts)
    assert [m.body for m in out] == [b"kept"]
    assert out[0].properties[const.UNIQ_KEY] == kept.transaction_id
    assert parts.storage.timer.recalled_count == 1


async def test_recall_refusals(parts: BrokerParts) -> None:
    recall = recall_processor(parts)
    sent = await send(parts, {const.TIMER_DELAY_SEC: "2"})
    assert sent.recall_handle is not None
    handle = RecallHandle.decode(sent.recall_handle)
    cases = [
        (recall_request("not base64!"), ResponseCode.ILLEGAL_OPERATION, "recall handle is invalid"),
        (recall_request(sent.recall_handle, "OtherTopic"), ResponseCode.TOPIC_NOT_EXIST, None),
        (
            recall_request(RecallHandle("X", handle.broker_name, handle.timestamp, "id").encode()),
            ResponseCode.ILLEGAL_OPERATION,
            "recall failed, topic not match",
        ),
        (
            recall_request(RecallHandle(TOPIC, "other-broker", handle.timestamp, "id").encode()),
            ResponseCode.ILLEGAL_OPERATION,
            "recall failed, broker service not available",
        ),
        (
            recall_request(RecallHandle(TOPIC, handle.broker_name, str(START_MS - 1), "id").encode()),
            ResponseCode.ILLEGAL_OPERATION,
            "recall failed, timestamp invalid",
        ),
        (
            recall_request(RecallHandle(TOPIC, handle.broker_name, "abc", "id").encode()),
            ResponseCode.ILLEGAL_OPERATION,
            "recall failed, timestamp invalid",
        ),
    ]
    parts.metadata.topics.update(TopicConfig(topic_name="X", read_queue_nums=1, write_queue_nums=1))
    for request, code, remark in cases:
        answer = await call(recall, request)
        assert answer.code == code
        if remark is not None:
            assert answer.remark == remark
    parts.config.recall_message_enable = False
    answer = await call(recall, recall_request(sent.recall_handle))
    assert (answer.code, answer.remark) == (
        ResponseCode.NO_PERMISSION,
        "recall failed, operation is forbidden",
    )
    clock_of(parts).advance(3000)
    await parts.storage.timer.deliver_due()
    assert len(delivered(parts)) == 1  # no refused recall took it back


# -- restart and crash --------------------------------------------------------------------------------------


async def test_pending_timers_survive_a_restart(tmp_path: Path) -> None:
    store = tmp_path / "store"
    async with open_parts(store, clock=ManualClock(START_MS)) as first:
        add_topic(first)
        for n in range(3):
            await send(first, {const.TIMER_DELAY_SEC: str(n + 1)}, f"m{n}".encode())
        clock_of(first).advance(1500)
        await first.storage.timer.deliver_due()
        assert [m.body for m in delivered(first)] == [b"m0"]
    async with open_parts(store, clock=ManualClock(START_MS + 1500)) as second:
        assert second.storage.timer.pending == 2
        clock_of(second).advance(5000)
        await second.storage.timer.deliver_due()
        assert [m.body for m in delivered(second)] == [b"m0", b"m1", b"m2"]
    async with open_parts(store, clock=ManualClock(START_MS + 9000)) as third:
        assert third.storage.timer.pending == 0
        await third.storage.timer.deliver_due()
        assert len(delivered(third)) == 3


class Crash(Exception):
    pass


@pytest.mark.parametrize("crash_after_store", [True, False])
async def test_crash_inside_a_delivery_neither_loses_nor_repeats(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, crash_after_store: bool
) -> None:
    """A crash after the intent is durable: before the copy is stored, or after it is but before 'done'."""
    store = tmp_path / "store"
    async with open_parts(store, clock=ManualClock(START_MS), flush_disk_type="SYNC_FLUSH") as first:
        add_topic(first)
        for n in range(2):
            await send(first, {const.TIMER_DELAY_SEC: "1"}, f"m{n}".encode())
        timer = first.storage.timer
        if crash_after_store:

            def crash_on_done(self: TimerLog, offsets: list[int]) -> None:
                raise Crash

            monkeypatch.setattr(TimerLog, "mark_done", crash_on_done)
        else:

            async def crash_on_put(messages: Any) -> Any:
                raise Crash

            # Due copies are stored together (put_all), or one by one (put) when that is refused.
            monkeypatch.setattr(first.storage.messages, "put", crash_on_put)
            monkeypatch.setattr(first.storage.messages, "put_all", crash_on_put)
        clock_of(first).advance(2000)
        with pytest.raises(Crash):
            await timer.deliver_due()
        monkeypatch.undo()
        assert len(delivered(first)) == (2 if crash_after_store else 0)
    async with open_parts(store, clock=ManualClock(START_MS + 2000)) as second:
        await second.storage.timer.deliver_due()
        out = delivered(second)
        assert sorted(m.body for m in out) == [b"m0", b"m1"]
        assert second.storage.timer.pending == 0


# -- admin views --------------------------------------------------------------------------------------------


async def test_timer_metrics_and_checkpoint(parts: BrokerParts) -> None:
    timer = parts.storage.timer
    metrics = GetTimerMetricsProcessor(timer=timer)
    checkpoint = GetTimerCheckPointProcessor(timer=timer)
    await send(parts, {const.TIMER_DELAY_SEC: "2"})
    gone = await send(parts, {const.TIMER_DELAY_SEC: "2"})
    assert gone.recall_handle is not None
    timer.index_new()
    answer = await call(metrics, wire_request(RequestCode.GET_TIMER_METRICS))
    body = TimerMetricsBody.from_json(answer.body)
    assert body.timing_count[TOPIC].count == 2
    assert (
        answer.body.startswith(b'{"dataVersion":{')
        and b'"timingCount":{"TimerTopic":{"count":2,' in answer.body
    )
    await call(recall_processor(parts), recall_request(gone.recall_handle))
    clock_of(parts).advance(3000)
    await timer.deliver_due()
    answer = await call(metrics, wire_request(RequestCode.GET_TIMER_METRICS))
    assert TimerMetricsBody.from_json(answer.body).timing_count[TOPIC].count == 0
    timer.checkpoint()
    answer = await call(checkpoint, wire_request(RequestCode.GET_TIMER_CHECK_POINT))
    assert answer.code == ResponseCode.SUCCESS and len(answer.body) == 56
    point = TimerCheckpointBody.decode(answer.body)
    assert point.last_timer_queue_offset == point.master_timer_queue_offset == 3  # two sends and a recall
    assert point.last_read_time_ms == START_MS + 3000
    assert point.counter == 1


def test_precision_snaps_as_apaches_setter() -> None:
    assert [snap_precision(v) for v in (1, 150, 200, 499, 999, 1000, 5000)] == [
        100,
        100,
        200,
        200,
        500,
        1000,
        1000,
    ]


async def test_a_congested_slot_is_refused(parts: BrokerParts) -> None:
    parts.config.timer_congest_num_each_slot = 1
    first = await send(parts, {const.TIMER_DELAY_SEC: "5"})
    assert first.recall_handle
    parts.storage.timer.index_new()
    await send(parts, {const.TIMER_DELAY_SEC: "5"})  # one in the slot: not more than the limit
    parts.storage.timer.index_new()
    answer = await call(send_processor(parts), send_request({const.TIMER_DELAY_SEC: "5"}))
    assert (answer.code, answer.remark) == (ResponseCode.SYSTEM_ERROR, flow_control_remark(1))
    answer = await call(send_processor(parts), send_request({const.TIMER_DELAY_SEC: "7"}))
    assert answer.code == ResponseCode.SUCCESS  # another slot


# -- the progress log on its own ------------------------------------------------------------------


def test_progress_log_reopens_drops_a_torn_record_and_compacts(tmp_path: Path) -> None:
    progress = TimerLog(tmp_path, sync=True)
    progress.open()
    progress.mark_done([0, 1, 3])
    progress.mark_intents([(2, 40)])
    progress.close()
    with (tmp_path / "progress.log").open("ab") as torn:
        torn.write(b"D\x00\x00")  # a crash in the middle of a record
    again = TimerLog(tmp_path, sync=True)
    again.open()
    assert [again.is_done(o) for o in range(5)] == [True, True, False, True, False]
    assert again.open_intents() == [(2, 40)]
    again.mark_done([2])
    again.advance_checkpoint(4)
    assert again.checkpoint == 4 and again.open_intents() == []
    again.mark_done([6])
    again.close()
    third = TimerLog(tmp_path, sync=True)
    third.open()
    assert third.checkpoint == 4
    assert [third.is_done(o) for o in range(8)] == [True] * 4 + [False, False, True, False]
    third.close()


async def test_a_recall_holds_across_a_restart(tmp_path: Path) -> None:
    store = tmp_path / "store"
    async with open_parts(store, clock=ManualClock(START_MS), recall_message_enable=True) as first:
        add_topic(first)
        gone = await send(first, {const.TIMER_DELAY_SEC: "3"}, b"gone")
        await send(first, {const.TIMER_DELAY_SEC: "3"}, b"kept")
        assert gone.recall_handle is not None
        answer = await call(recall_processor(first), recall_request(gone.recall_handle))
        assert answer.code == ResponseCode.SUCCESS
    async with open_parts(store, clock=ManualClock(START_MS + 500)) as second:
        assert second.storage.timer.pending == 3  # two messages and the marker
        clock_of(second).advance(4000)
        await second.storage.timer.deliver_due()
        assert [m.body for m in delivered(second)] == [b"kept"]
