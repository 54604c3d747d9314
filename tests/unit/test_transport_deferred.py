"""Handlers that promise their answer (DeferredAnswer): sent when settled, counted as in flight until then."""

from __future__ import annotations

import asyncio
from typing import cast

import pytest

from rocketmq_wire.codes import ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.transport import Connection, DeferredAnswer, RequestDispatcher
from tests.unit.transport_fakes import FakeConnection

CODE = 321


class Promiser:
    """Promises every answer and keeps the promises for the test to settle; ``b"now"`` is answered at once."""

    def __init__(self) -> None:
        self.promises: dict[int, DeferredAnswer] = {}

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand | DeferredAnswer:
        if request.body == b"now":
            return request.make_response(ResponseCode.SUCCESS, remark="now")
        promise = self.promises[request.opaque] = DeferredAnswer()
        if request.body == b"settled":  # settled before the dispatcher sees it
            promise.resolve(request.make_response(ResponseCode.SUCCESS, remark="settled early"))
        return promise


class PausingConnection(FakeConnection):
    def __init__(self) -> None:
        super().__init__()
        self.reading = True

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True


async def settle_loop() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


@pytest.mark.parametrize("eager", [True, False], ids=["eager", "task"])
async def test_a_promised_answer_is_sent_when_resolved_and_not_before(eager: bool) -> None:
    handler = Promiser()
    dispatcher = RequestDispatcher()
    dispatcher.register(CODE, handler, eager=eager)
    fake = FakeConnection()
    conn = cast(Connection, fake)
    for opaque, body in ((1, b"later"), (2, b"now"), (3, b"settled")):
        dispatcher(RemotingCommand.request(CODE, opaque=opaque, body=body), conn)
    await settle_loop()
    assert [(cmd.opaque, cmd.remark) for cmd in fake.sent] == [(2, "now"), (3, "settled early")]
    request = RemotingCommand.request(CODE, opaque=1)
    handler.promises[1].resolve(request.make_response(ResponseCode.FLUSH_DISK_TIMEOUT, remark="late"))
    await settle_loop()
    assert [(cmd.opaque, cmd.code, cmd.remark) for cmd in fake.sent][-1] == (
        1,
        ResponseCode.FLUSH_DISK_TIMEOUT,
        "late",
    )
    assert all(cmd.is_response for cmd in fake.sent) and len(fake.sent) == 3
    await dispatcher.close()


@pytest.mark.parametrize("eager", [True, False], ids=["eager", "task"])
async def test_a_failed_promise_is_answered_system_error(eager: bool) -> None:
    handler = Promiser()
    dispatcher = RequestDispatcher()
    dispatcher.register(CODE, handler, eager=eager)
    fake = FakeConnection()
    dispatcher(RemotingCommand.request(CODE, opaque=7, body=b"later"), cast(Connection, fake))
    await settle_loop()
    handler.promises[7].fail(ValueError("the store broke"))
    await settle_loop()
    assert [(cmd.opaque, cmd.code) for cmd in fake.sent] == [(7, ResponseCode.SYSTEM_ERROR)]
    assert "the store broke" in (fake.sent[0].remark or "")
    await dispatcher.close()


async def test_unsettled_promises_count_as_in_flight_and_pause_reading() -> None:
    handler = Promiser()
    dispatcher = RequestDispatcher(max_in_flight=4)
    dispatcher.register(CODE, handler, eager=True)
    fake = PausingConnection()
    conn = cast(Connection, fake)
    for opaque in range(1, 5):
        dispatcher(RemotingCommand.request(CODE, opaque=opaque, body=b"later"), conn)
    await settle_loop()
    assert fake.sent == [] and not fake.reading  # four promised, none settled: the peer is not read
    for opaque in (1, 2):
        handler.promises[opaque].resolve(RemotingCommand.request(CODE, opaque=opaque).make_response(0))
    assert [cmd.opaque for cmd in fake.sent] == [1, 2] and fake.reading  # down to half: read again
    await dispatcher.close()


async def test_a_oneway_promise_sends_nothing() -> None:
    handler = Promiser()
    dispatcher = RequestDispatcher()
    dispatcher.register(CODE, handler, eager=True)
    fake = FakeConnection()
    oneway = RemotingCommand.request(CODE, opaque=9, body=b"later")
    oneway.mark_oneway()
    dispatcher(oneway, cast(Connection, fake))
    await settle_loop()
    handler.promises[9].resolve(oneway.make_response(ResponseCode.SUCCESS))
    assert fake.sent == []
    await dispatcher.close()


def test_a_promise_is_settled_once_and_has_one_recipient() -> None:
    promise = DeferredAnswer()
    got: list[tuple[object, object]] = []
    promise.deliver_to(lambda answer, exc: got.append((answer, exc)))
    with pytest.raises(RuntimeError):
        promise.deliver_to(lambda answer, exc: None)
    promise.resolve(None)
    assert got == [(None, None)] and promise.settled
    with pytest.raises(RuntimeError):
        promise.fail(ValueError("twice"))
