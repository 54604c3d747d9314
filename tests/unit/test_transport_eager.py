"""Eager handlers: no task of their own, queued behind what arrived with them, a task only once they wait."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator
from typing import Any, cast

import pytest

from rocketmq_wire.codes import ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.transport import Connection, RemotingClient, RemotingServer, RequestDispatcher, dispatch
from tests.unit.transport_fakes import Blocking, FakeConnection, RecordingGate

CODE = 320
BOUND = 5.0


class Recorder:
    """Records the task each request ran in before and after its one optional wait."""

    def __init__(self, wait: asyncio.Future[None] | None = None) -> None:
        self.wait = wait
        self.before: list[asyncio.Task[object] | None] = []
        self.after: list[asyncio.Task[object] | None] = []

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        self.before.append(asyncio.current_task())
        if self.wait is not None and request.body == b"wait":
            await self.wait
        self.after.append(asyncio.current_task())
        return request.make_response(ResponseCode.SUCCESS, remark=f"done {request.opaque}", body=request.body)


async def settle() -> None:
    """Let the drain callback and any tasks it made run."""
    for _ in range(5):
        await asyncio.sleep(0)


async def test_a_handler_that_never_waits_is_answered_without_a_task() -> None:
    handler = Recorder()
    dispatcher = RequestDispatcher()
    dispatcher.register(CODE, handler, eager=True)
    fake = FakeConnection()
    conn = cast(Connection, fake)
    for opaque in (1, 2, 3):
        dispatcher(RemotingCommand.request(CODE, opaque=opaque, body=b"now"), conn)
    assert handler.before == []  # nothing runs inside the protocol callback itself ...
    await settle()
    assert handler.before == handler.after == [None, None, None]  # ... and then none ran in a task
    assert [(cmd.opaque, cmd.remark, cmd.is_response) for cmd in fake.sent] == [
        (1, "done 1", True),
        (2, "done 2", True),
        (3, "done 3", True),
    ]
    assert dispatcher.active_tasks == 0
    await dispatcher.close()


async def test_a_handler_that_waits_on_a_future_continues_without_a_task_when_it_is_done() -> None:
    release: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    handler = Recorder(release)
    dispatcher = RequestDispatcher()
    dispatcher.register(CODE, handler, eager=True)
    fake = FakeConnection()
    conn = cast(Connection, fake)
    dispatcher(RemotingCommand.request(CODE, opaque=1, body=b"wait"), conn)
    dispatcher(RemotingCommand.request(CODE, opaque=2, body=b"now"), conn)
    await settle()
    # The waiting one does not hold up the one behind it, and waits without a task.
    assert [cmd.opaque for cmd in fake.sent] == [2]
    assert dispatcher.active_tasks == 0 and handler.after == [None]
    release.set_result(None)
    await settle()
    assert [(cmd.opaque, cmd.remark) for cmd in fake.sent] == [(2, "done 2"), (1, "done 1")]
    assert handler.before == [None, None] and handler.after == [None, None]
    await dispatcher.close()


async def test_a_handler_that_yields_to_the_loop_continues_on_its_next_turn() -> None:
    async def yields(request: RemotingCommand, conn: Connection) -> RemotingCommand:
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        return request.make_response(ResponseCode.SUCCESS, remark="after two turns")

    dispatcher = RequestDispatcher()
    dispatcher.register(CODE, yields, eager=True)
    fake = FakeConnection()
    dispatcher(RemotingCommand.request(CODE, opaque=3), cast(Connection, fake))
    await settle()
    assert [(cmd.opaque, cmd.remark) for cmd in fake.sent] == [(3, "after two turns")]
    assert dispatcher.active_tasks == 0
    await dispatcher.close()


class OddAwaitable:
    """Yields something that is neither a future nor a bare yield: only a task knows what to make of it."""

    def __await__(self) -> Generator[Any, None, None]:
        yield "not a future"


def awaiting_odd(ended: list[str]) -> Callable[[RemotingCommand, Connection], Awaitable[RemotingCommand]]:
    """A handler that awaits an :class:`OddAwaitable` and notes when it ends."""

    async def odd(request: RemotingCommand, conn: Connection) -> RemotingCommand:
        try:
            await OddAwaitable()
        finally:
            ended.append("finally")
        return request.make_response(ResponseCode.SUCCESS)

    return odd


async def test_a_handler_waiting_on_anything_else_is_continued_by_a_task() -> None:
    reached: list[str] = []
    dispatcher = RequestDispatcher()
    dispatcher.register(CODE, awaiting_odd(reached), eager=True)
    fake = FakeConnection()
    dispatcher(RemotingCommand.request(CODE, opaque=4), cast(Connection, fake))
    await settle()
    # A task handed the bad yield back as an error, which the handler did not catch: SYSTEM_ERROR.
    assert reached == ["finally"]
    assert [(cmd.opaque, cmd.code) for cmd in fake.sent] == [(4, ResponseCode.SYSTEM_ERROR)]
    assert "bad yield" in (fake.sent[0].remark or "")
    assert dispatcher.active_tasks == 0
    await dispatcher.close()


async def test_failures_before_and_after_the_wait_are_answered_system_error() -> None:
    release: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def broken(request: RemotingCommand, conn: Connection) -> RemotingCommand:
        if request.body == b"later":
            await release
            raise ValueError("after the wait")
        raise KeyError("before any wait")

    dispatcher = RequestDispatcher()
    dispatcher.register(CODE, broken, eager=True)
    fake = FakeConnection()
    conn = cast(Connection, fake)
    dispatcher(RemotingCommand.request(CODE, opaque=1, body=b"later"), conn)
    dispatcher(RemotingCommand.request(CODE, opaque=2, body=b"now"), conn)
    await settle()
    release.set_result(None)
    await settle()
    answers = {cmd.opaque: cmd for cmd in fake.sent}
    assert {opaque: cmd.code for opaque, cmd in answers.items()} == {
        1: ResponseCode.SYSTEM_ERROR,
        2: ResponseCode.SYSTEM_ERROR,
    }
    assert (answers[1].remark or "").startswith("ValueError: after the wait, broken(")
    assert (answers[2].remark or "").startswith("KeyError: 'before any wait', broken(")
    await dispatcher.close()


async def test_requests_that_arrive_together_queue_behind_each_other_in_the_gate() -> None:
    handler = Recorder()
    gate = RecordingGate()
    queued_at_start: list[int] = []
    original_start = gate.on_start

    def on_start(request: RemotingCommand, conn: Connection, arrived_at: float) -> RemotingCommand | None:
        queued_at_start.append(gate.queued)
        return original_start(request, conn, arrived_at)

    gate.on_start = on_start  # type: ignore[method-assign]
    dispatcher = RequestDispatcher()
    dispatcher.register(CODE, handler, gate=gate, eager=True)
    fake = FakeConnection()
    conn = cast(Connection, fake)
    for opaque in (1, 2, 3):
        dispatcher(RemotingCommand.request(CODE, opaque=opaque), conn)
    assert gate.queued == 3  # all three arrived before any started, as in a thread pool's queue
    await settle()
    assert queued_at_start == [3, 2, 1]
    assert gate.kinds() == [
        ("arrival", 1),
        ("arrival", 2),
        ("arrival", 3),
        ("start", 1),
        ("start", 2),
        ("start", 3),
    ]
    assert [cmd.opaque for cmd in fake.sent] == [1, 2, 3] and gate.queued == 0
    await dispatcher.close()


async def test_a_refusal_at_start_is_the_answer_and_the_handler_never_runs() -> None:
    handler = Recorder()
    gate = RecordingGate(refuse_start=True)
    dispatcher = RequestDispatcher()
    dispatcher.register(CODE, handler, gate=gate, eager=True)
    fake = FakeConnection()
    dispatcher(RemotingCommand.request(CODE, opaque=7), cast(Connection, fake))
    await settle()
    assert [(cmd.opaque, cmd.code, cmd.remark) for cmd in fake.sent] == [
        (7, ResponseCode.SYSTEM_BUSY, "refused at start")
    ]
    assert handler.before == [] and gate.queued == 0
    await dispatcher.close()


async def test_closing_cancels_queued_jobs_in_the_gate_and_ends_waiting_handlers() -> None:
    ended: list[str] = []
    never: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def waits_forever(request: RemotingCommand, conn: Connection) -> RemotingCommand:
        try:
            await never
        except asyncio.CancelledError:
            ended.append(f"cancelled {request.opaque}")
            raise
        finally:
            ended.append(f"finally {request.opaque}")
        return request.make_response(ResponseCode.SUCCESS)

    gate = RecordingGate()
    dispatcher = RequestDispatcher()
    dispatcher.register(CODE, waits_forever, gate=gate, eager=True)
    fake = FakeConnection()
    conn = cast(Connection, fake)
    dispatcher(RemotingCommand.request(CODE, opaque=1), conn)
    await settle()  # 1 started and waits in its task
    dispatcher(RemotingCommand.request(CODE, opaque=2), conn)  # 2 is queued, not started
    async with asyncio.timeout(BOUND):
        await dispatcher.close()
    assert ended == ["cancelled 1", "finally 1"]  # the cancellation reached the handler where it waited
    assert gate.kinds() == [("arrival", 1), ("start", 1), ("arrival", 2), ("cancel", 2)]
    assert gate.queued == 0 and dispatcher.active_tasks == 0 and fake.sent == []


async def test_a_handler_whose_task_is_cancelled_before_its_first_step_is_closed() -> None:
    ended: list[str] = []
    dispatcher = RequestDispatcher()
    dispatcher.register(CODE, awaiting_odd(ended), eager=True)
    dispatcher(RemotingCommand.request(CODE, opaque=1), cast(Connection, FakeConnection()))
    # Run only the drain callback: the handler is suspended, its task made but not stepped yet.
    await asyncio.sleep(0)
    assert dispatcher.active_tasks == 1 and ended == []
    await dispatcher.close()
    assert ended == ["finally"] and dispatcher.active_tasks == 0


async def test_an_eager_code_takes_the_task_path_while_the_peer_is_not_reading() -> None:
    handler = Recorder()
    dispatcher = RequestDispatcher()
    dispatcher.register(CODE, handler, eager=True)
    fake = FakeConnection()
    fake.writing_paused = True
    dispatcher(RemotingCommand.request(CODE, opaque=1), cast(Connection, fake))
    await settle()
    assert isinstance(handler.before[0], asyncio.Task)
    assert [cmd.opaque for cmd in fake.sent] == [1]
    await dispatcher.close()


def test_an_ordered_registration_cannot_be_eager() -> None:
    with pytest.raises(ValueError, match="ordered"):
        RequestDispatcher().register(CODE, Blocking(), ordered=True, eager=True)


async def test_eager_requests_over_a_real_connection_keep_their_opaques() -> None:
    release: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    handler = Recorder(release)
    async with RemotingServer("127.0.0.1", 0) as server, RemotingClient() as client:
        server.register(CODE, handler, eager=True)
        requests = [RemotingCommand.request(CODE, body=b"wait" if i == 0 else b"now") for i in range(20)]
        pending = [
            asyncio.ensure_future(client.invoke(server.address, request, 3000)) for request in requests
        ]
        async with asyncio.timeout(BOUND):
            while len(handler.before) < 20:
                await asyncio.sleep(0.01)
        release.set_result(None)
        answers = await asyncio.gather(*pending)
    assert [answer.opaque for answer in answers] == [request.opaque for request in requests]
    assert [answer.body for answer in answers] == [request.body for request in requests]
    assert all(answer.code == ResponseCode.SUCCESS for answer in answers)


async def test_a_burst_that_waits_is_started_in_slices_one_that_does_not_in_one_turn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(dispatch, "EAGER_TURN_S", 0.0)  # every slice ends at its first waiting job
    release: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    handler = Recorder(release)
    dispatcher = RequestDispatcher()
    dispatcher.register(CODE, handler, eager=True)
    fake = FakeConnection()
    conn = cast(Connection, fake)

    async def started_per_turn(body: bytes) -> list[int]:
        for opaque in range(5):
            dispatcher(RemotingCommand.request(CODE, opaque=opaque, body=body), conn)
        counts = []
        for _ in range(6):
            before = len(handler.before)
            await asyncio.sleep(0)
            counts.append(len(handler.before) - before)
        return counts

    assert await started_per_turn(b"now") == [5, 0, 0, 0, 0, 0]
    assert await started_per_turn(b"wait") == [1, 1, 1, 1, 1, 0]
    release.set_result(None)
    await settle()
    assert sorted(cmd.opaque for cmd in fake.sent) == sorted(list(range(5)) * 2)
    await dispatcher.close()
