"""The push consumer's trace hook (consumer.trace.traced_handler): SubBefore before the listener, SubAfter
after it with success, cost and Java's ConsumeReturnType; trace messages and TRACE_ON=false skipped."""

from __future__ import annotations

from typing import Any, cast

import pytest

from client.trace import TraceDispatcher
from consumer import ConsumeStatus
from consumer.trace import traced_handler
from rocketmq_wire.message import MessageExt
from rocketmq_wire.trace import ConsumeReturnType, TraceContext, TraceType


class _Recorder:
    trace_topic = "RMQ_SYS_TRACE_TOPIC"

    def __init__(self) -> None:
        self.records: list[TraceContext] = []

    def append(self, ctx: TraceContext) -> bool:
        self.records.append(ctx)
        return True


def _message(topic: str = "T", props: str = "") -> MessageExt:
    base = "UNIQ_KEY\x01AABB\x02KEYS\x01k1 k2\x02TAGS\x01TagA\x02"
    return MessageExt(topic=topic, properties_string=base + props, reconsume_times=1, store_size=99)


def _wrap(recorder: _Recorder, handler: Any) -> Any:
    return traced_handler(handler, cast(TraceDispatcher, recorder), "CG", lambda: "10.0.0.9@1")


@pytest.mark.parametrize(
    ("status", "code", "success"),
    [
        (ConsumeStatus.CONSUME_SUCCESS, ConsumeReturnType.SUCCESS, True),
        (ConsumeStatus.SUCCESS, ConsumeReturnType.SUCCESS, True),
        (ConsumeStatus.RECONSUME_LATER, ConsumeReturnType.FAILED, False),
        (None, ConsumeReturnType.RETURNNULL, False),
    ],
)
async def test_before_and_after_records(status: ConsumeStatus | None, code: int, success: bool) -> None:
    recorder = _Recorder()
    seen: list[int] = []

    async def handler(messages: list[MessageExt], context: Any) -> ConsumeStatus | None:
        seen.append(len(recorder.records))  # SubBefore is already queued
        return status

    assert await _wrap(recorder, handler)([_message()], None) is status
    assert seen == [1]
    before, after = recorder.records
    assert (before.trace_type, after.trace_type) == (TraceType.SUB_BEFORE, TraceType.SUB_AFTER)
    assert before.request_id and after.request_id == before.request_id
    assert (before.group_name, after.group_name) == ("CG", "CG")
    bean = before.beans[0]
    assert (bean.msg_id, bean.keys, bean.tags, bean.retry_times, bean.body_length) == (
        "AABB",
        "k1 k2",
        "TagA",
        1,
        99,
    )
    assert (after.success, after.context_code) == (success, code)


async def test_exception_writes_failed_after_and_propagates() -> None:
    recorder = _Recorder()

    async def handler(messages: list[MessageExt], context: Any) -> ConsumeStatus:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        await _wrap(recorder, handler)([_message()], None)
    after = recorder.records[-1]
    assert (after.success, after.context_code) == (False, ConsumeReturnType.EXCEPTION)


async def test_trace_messages_and_switched_off_messages_are_not_traced() -> None:
    recorder = _Recorder()

    async def handler(messages: list[MessageExt], context: Any) -> ConsumeStatus:
        return ConsumeStatus.CONSUME_SUCCESS

    wrapped = _wrap(recorder, handler)
    await wrapped([_message("RMQ_SYS_TRACE_TOPIC"), _message(props="TRACE_ON\x01false\x02")], None)
    assert recorder.records == []
