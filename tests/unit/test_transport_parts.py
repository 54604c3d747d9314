"""The transport's small parts on their own: addresses, opaque ids, error remarks, dispatcher flow control."""

from __future__ import annotations

import asyncio
from typing import cast

import pytest

from rocketmq_wire.codes import ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.transport import Connection, OpaqueCounter, RequestDispatcher
from rocketmq_wire.transport.address import format_address, parse_address
from rocketmq_wire.transport.dispatch import describe_exception


@pytest.mark.parametrize(
    ("addr", "expected"),
    [
        ("127.0.0.1:9876", ("127.0.0.1", 9876)),
        ("broker-a.example:10911", ("broker-a.example", 10911)),
        (" 10.0.0.1:1 ", ("10.0.0.1", 1)),
        ("[::1]:9876", ("::1", 9876)),
        ("::1:9876", ("::1", 9876)),
    ],
)
def test_parse_address(addr: str, expected: tuple[str, int]) -> None:
    assert parse_address(addr) == expected


@pytest.mark.parametrize("addr", ["localhost", ":9876", "host:", "host:port", "host:70000"])
def test_parse_address_rejects(addr: str) -> None:
    with pytest.raises(ValueError):
        parse_address(addr)


def test_format_address() -> None:
    assert format_address(("127.0.0.1", 5000)) == "127.0.0.1:5000"
    assert format_address(("::1", 5000, 0, 0)) == "::1:5000"
    assert format_address(None) == ""


def test_opaque_counter_counts_and_wraps_within_java_int() -> None:
    counter = OpaqueCounter(0x7FFFFFFE)
    assert [counter(), counter(), counter(), counter()] == [0x7FFFFFFE, 0x7FFFFFFF, 0, 1]
    with pytest.raises(ValueError):
        OpaqueCounter(-1)


def test_opaque_counters_are_independent() -> None:
    first, second = OpaqueCounter(), OpaqueCounter()
    assert [first(), first(), second()] == [0, 1, 0]


def test_describe_exception_like_java_exception_simple_desc() -> None:
    def failing() -> None:
        raise KeyError("topic")

    try:
        failing()
    except KeyError as exc:
        text = describe_exception(exc)
    assert text.startswith("KeyError: 'topic', failing(test_transport_parts.py:")
    assert describe_exception(RuntimeError()) == "RuntimeError"


class FakeConnection:
    """Just enough of a Connection for the dispatcher: records what it is asked to do."""

    def __init__(self) -> None:
        self.remote_address = "10.0.0.9:4444"
        self.sent: list[RemotingCommand] = []
        self.calls: list[str] = []
        self.close_callbacks: list[object] = []
        self.sent_changed = asyncio.Event()

    async def wait_sent(self, count: int) -> None:
        async with asyncio.timeout(5):
            while len(self.sent) < count:
                self.sent_changed.clear()
                await self.sent_changed.wait()

    def add_close_callback(self, callback: object) -> None:
        self.close_callbacks.append(callback)

    def pause_reading(self) -> None:
        self.calls.append("pause")

    def resume_reading(self) -> None:
        self.calls.append("resume")

    def send_response_nowait(self, cmd: RemotingCommand) -> None:
        cmd.mark_response()
        self.sent.append(cmd)
        self.sent_changed.set()

    async def send_response(self, cmd: RemotingCommand) -> None:
        self.send_response_nowait(cmd)


async def test_dispatcher_pauses_a_flooding_peer_and_resumes_at_half() -> None:
    gates = [asyncio.Event() for _ in range(8)]
    done = asyncio.Event()
    finished: list[int] = []

    async def handler(request: RemotingCommand, conn: Connection) -> RemotingCommand:
        number = int(request.body)
        await gates[number].wait()
        finished.append(number)
        if len(finished) == len(gates):
            done.set()
        return request.make_response()

    dispatcher = RequestDispatcher({7: handler}, max_in_flight=8)
    fake = FakeConnection()
    conn = cast(Connection, fake)
    for i in range(8):
        dispatcher(RemotingCommand.request(7, body=b"%d" % i, opaque=i), conn)
    assert fake.calls == ["pause"]
    assert dispatcher.active_tasks == 8
    for i in range(3):
        gates[i].set()
    await fake.wait_sent(3)
    assert fake.calls == ["pause"]  # 5 in flight, above half of 8
    gates[3].set()
    await fake.wait_sent(4)
    assert fake.calls == ["pause", "resume"]
    for gate in gates:
        gate.set()
    async with asyncio.timeout(5):
        await done.wait()
    await dispatcher.close()
    assert sorted(r.opaque for r in fake.sent) == list(range(8))
    assert len(fake.close_callbacks) == 1


async def test_dispatcher_unknown_oneway_gets_no_answer() -> None:
    dispatcher = RequestDispatcher()
    fake = FakeConnection()
    oneway = RemotingCommand.request(99)
    oneway.mark_oneway()
    dispatcher(oneway, cast(Connection, fake))
    dispatcher(RemotingCommand.request(98, opaque=3), cast(Connection, fake))
    (answer,) = fake.sent
    assert answer.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    assert answer.remark == " request type 98 not supported"
    assert answer.opaque == 3 and answer.is_response


async def test_dispatcher_default_handler_and_failing_oneway() -> None:
    seen: list[int] = []
    both_seen = asyncio.Event()

    async def anything(request: RemotingCommand, conn: Connection) -> RemotingCommand:
        seen.append(request.code)
        if len(seen) == 2:
            both_seen.set()
        if request.is_oneway:
            raise RuntimeError("oneway failures are only logged")
        return request.make_response(ResponseCode.SUCCESS)

    dispatcher = RequestDispatcher()
    dispatcher.register_default(anything)
    assert dispatcher.handles(12345)
    fake = FakeConnection()
    oneway = RemotingCommand.request(500)
    oneway.mark_oneway()
    dispatcher(oneway, cast(Connection, fake))
    dispatcher(RemotingCommand.request(501, opaque=9), cast(Connection, fake))
    await fake.wait_sent(1)
    async with asyncio.timeout(5):
        await both_seen.wait()
    await dispatcher.close()
    assert sorted(seen) == [500, 501]
    (answer,) = fake.sent
    assert answer.code == ResponseCode.SUCCESS and answer.opaque == 9
    dispatcher.register_default(None)
    assert not dispatcher.handles(12345)


def test_dispatcher_rejects_tiny_in_flight_limit() -> None:
    with pytest.raises(ValueError):
        RequestDispatcher(max_in_flight=1)
