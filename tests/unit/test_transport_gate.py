"""Request gates: refusing at arrival or at start, keeping count through cancellation, oneway silence."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import cast

import pytest

from rocketmq_wire.codes import ResponseCode, SerializeType
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.transport import Connection, RemotingClient, RemotingServer, RequestDispatcher, RequestGate
from tests.unit.transport_fakes import Blocking, FakeConnection, RecordingGate

CODE = 310


def test_recording_gate_is_a_request_gate() -> None:
    gate: RequestGate = RecordingGate()  # mypy checks the protocol here
    assert gate is not None


@pytest.fixture
async def client() -> AsyncIterator[RemotingClient]:
    connected = RemotingClient()
    yield connected
    await connected.close()


async def test_gate_refusing_on_arrival_answers_at_once_and_the_handler_never_runs(
    client: RemotingClient,
) -> None:
    handler = Blocking()
    gate = RecordingGate(refuse_arrival=True)
    async with RemotingServer("127.0.0.1", 0) as server:
        server.register(CODE, handler, gate=gate)
        request = RemotingCommand.request(CODE, serialize_type=SerializeType.ROCKETMQ)
        answer = await client.invoke(server.address, request, 3000)
    assert answer.code == ResponseCode.SYSTEM_BUSY and answer.remark == "refused on arrival"
    assert answer.serialize_type == SerializeType.ROCKETMQ
    assert handler.ran == []
    assert gate.kinds() == [("arrival", request.opaque)]
    assert gate.queued == 0


async def test_gate_refusing_at_start_answers_instead_of_the_handler(client: RemotingClient) -> None:
    handler = Blocking()
    handler.release.set()
    gate = RecordingGate(refuse_start=True)
    async with RemotingServer("127.0.0.1", 0) as server:
        server.register(CODE, handler, gate=gate)
        before = asyncio.get_running_loop().time()
        request = RemotingCommand.request(CODE)
        answer = await client.invoke(server.address, request, 3000)
        after = asyncio.get_running_loop().time()
        gate.refuse_start = False
        handled = await client.invoke(server.address, RemotingCommand.request(CODE), 3000)
    assert answer.code == ResponseCode.SYSTEM_BUSY and answer.remark == "refused at start"
    assert answer.opaque == request.opaque and answer.is_response
    assert handled.code == ResponseCode.SUCCESS and handled.remark == "handled"
    assert handler.ran == [handled.opaque]
    (arrival, start, *_) = gate.events
    assert arrival[:2] == ("arrival", request.opaque) and start[:2] == ("start", request.opaque)
    assert before <= arrival[2] == start[2] <= after  # the loop time of arrival, passed to both calls
    assert gate.queued == 0


async def test_queued_count_returns_to_zero_when_queued_tasks_are_cancelled() -> None:
    handler = Blocking()
    gate = RecordingGate()
    dispatcher = RequestDispatcher()
    dispatcher.register(CODE, handler, gate=gate)
    conn = cast(Connection, FakeConnection())
    dispatcher(RemotingCommand.request(CODE, opaque=1), conn)
    async with asyncio.timeout(5):
        await handler.entered.wait()  # the first one runs (and blocks) ...
    for opaque in (2, 3, 4):  # ... these three are queued behind it, their tasks not started
        dispatcher(RemotingCommand.request(CODE, opaque=opaque), conn)
    assert gate.queued == 3
    await dispatcher.close()
    assert handler.ran == [1]
    assert gate.kinds() == [
        ("arrival", 1),
        ("start", 1),
        ("arrival", 2),
        ("arrival", 3),
        ("arrival", 4),
        ("cancel", 2),
        ("cancel", 3),
        ("cancel", 4),
    ]
    assert gate.queued == 0
    assert dispatcher.active_tasks == 0


async def test_ordered_lane_left_behind_by_a_close_is_cancelled_in_the_gate_too() -> None:
    handler = Blocking()
    gate = RecordingGate()
    dispatcher = RequestDispatcher()
    dispatcher.register(CODE, handler, ordered=True, gate=gate)
    conn = cast(Connection, FakeConnection())
    dispatcher(RemotingCommand.request(CODE, opaque=1), conn)
    async with asyncio.timeout(5):
        await handler.entered.wait()
    for opaque in (2, 3):
        dispatcher(RemotingCommand.request(CODE, opaque=opaque), conn)
    await dispatcher.close()
    assert handler.ran == [1]
    assert [event for event in gate.kinds() if event[0] != "arrival"] == [
        ("start", 1),
        ("cancel", 2),
        ("cancel", 3),
    ]
    assert gate.queued == 0


async def test_lane_task_cancelled_before_its_first_step_cancels_every_job() -> None:
    handler = Blocking()
    gate = RecordingGate()
    dispatcher = RequestDispatcher()
    dispatcher.register(CODE, handler, ordered=True, gate=gate)
    conn = cast(Connection, FakeConnection())
    for opaque in (1, 2):
        dispatcher(RemotingCommand.request(CODE, opaque=opaque), conn)
    await dispatcher.close()  # nothing has had a turn yet
    assert handler.ran == []
    assert [event for event in gate.kinds() if event[0] != "arrival"] == [("cancel", 1), ("cancel", 2)]
    assert gate.queued == 0


async def test_oneway_requests_get_no_answer_from_a_refusing_gate() -> None:
    handler = Blocking()
    handler.release.set()
    fake = FakeConnection()
    conn = cast(Connection, fake)
    dispatcher = RequestDispatcher()
    at_arrival, at_start = RecordingGate(refuse_arrival=True), RecordingGate(refuse_start=True)
    dispatcher.register(CODE, handler, gate=at_arrival)
    dispatcher.register(CODE + 1, handler, gate=at_start)
    for code in (CODE, CODE + 1):
        oneway = RemotingCommand.request(code, opaque=code)
        oneway.mark_oneway()
        dispatcher(oneway, conn)
    dispatcher(RemotingCommand.request(CODE + 1, opaque=7), conn)  # answered, so we know when both ran
    async with asyncio.timeout(5):
        while not fake.sent:
            await asyncio.sleep(0)
    await dispatcher.close()
    assert [(cmd.opaque, cmd.remark) for cmd in fake.sent] == [(7, "refused at start")]
    assert handler.ran == []
    assert at_arrival.kinds() == [("arrival", CODE)]
    assert at_start.kinds() == [("arrival", CODE + 1), ("arrival", 7), ("start", CODE + 1), ("start", 7)]
    assert at_arrival.queued == at_start.queued == 0


async def test_a_failing_gate_is_answered_like_a_failing_handler() -> None:
    class Broken(RecordingGate):
        def on_arrival(
            self, request: RemotingCommand, conn: Connection, arrived_at: float
        ) -> RemotingCommand | None:
            raise RuntimeError("gate bug")

    handler = Blocking()
    fake = FakeConnection()
    dispatcher = RequestDispatcher()
    dispatcher.register(CODE, handler, gate=Broken())
    dispatcher(RemotingCommand.request(CODE, opaque=5), cast(Connection, fake))
    await dispatcher.close()
    (answer,) = fake.sent
    assert answer.code == ResponseCode.SYSTEM_ERROR and answer.opaque == 5
    assert answer.remark is not None and answer.remark.startswith("RuntimeError: gate bug")
    assert handler.ran == []


async def test_codes_without_a_gate_are_untouched(client: RemotingClient) -> None:
    handler = Blocking()
    handler.release.set()
    gate = RecordingGate(refuse_arrival=True)
    async with RemotingServer("127.0.0.1", 0) as server:
        server.register(CODE, handler, gate=gate)
        server.register(CODE + 1, handler)
        answer = await client.invoke(server.address, RemotingCommand.request(CODE + 1), 3000)
    assert answer.code == ResponseCode.SUCCESS
    assert gate.events == []
