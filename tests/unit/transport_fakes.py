"""Stand-ins for the transport's tests: a gate that records what it is told, a connection, a handler."""

from __future__ import annotations

import asyncio

from rocketmq_wire.codes import ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.transport import Connection


class RecordingGate:
    """Counts what is queued, as a real gate would, and refuses when told to."""

    def __init__(self, *, refuse_arrival: bool = False, refuse_start: bool = False) -> None:
        self.refuse_arrival = refuse_arrival
        self.refuse_start = refuse_start
        self.queued = 0
        self.events: list[tuple[str, int, float]] = []

    def on_arrival(
        self, request: RemotingCommand, conn: Connection, arrived_at: float
    ) -> RemotingCommand | None:
        self.events.append(("arrival", request.opaque, arrived_at))
        if self.refuse_arrival:
            return request.make_response(ResponseCode.SYSTEM_BUSY, "refused on arrival")
        self.queued += 1
        return None

    def on_start(
        self, request: RemotingCommand, conn: Connection, arrived_at: float
    ) -> RemotingCommand | None:
        self.events.append(("start", request.opaque, arrived_at))
        self.queued -= 1
        if self.refuse_start:
            return RemotingCommand(code=ResponseCode.SYSTEM_BUSY, remark="refused at start")
        return None

    def on_cancel(self, request: RemotingCommand, conn: Connection, arrived_at: float) -> None:
        self.events.append(("cancel", request.opaque, arrived_at))
        self.queued -= 1

    def kinds(self) -> list[tuple[str, int]]:
        return [(kind, opaque) for kind, opaque, _ in self.events]


class FakeConnection:
    """Just enough of a Connection for the dispatcher."""

    def __init__(self) -> None:
        self.remote_address = "10.0.0.9:4444"
        self.sent: list[RemotingCommand] = []
        self.writing_paused = False

    def add_close_callback(self, callback: object) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def send_response_nowait(self, cmd: RemotingCommand) -> None:
        cmd.mark_response()
        self.sent.append(cmd)

    async def send_response(self, cmd: RemotingCommand) -> None:
        self.send_response_nowait(cmd)


class Blocking:
    """A handler that records who ran and waits until released."""

    def __init__(self) -> None:
        self.ran: list[int] = []
        self.release = asyncio.Event()
        self.entered = asyncio.Event()

    async def __call__(self, request: RemotingCommand, conn: Connection) -> RemotingCommand:
        self.ran.append(request.opaque)
        self.entered.set()
        await self.release.wait()
        return request.make_response(ResponseCode.SUCCESS, "handled")
