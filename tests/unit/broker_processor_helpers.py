"""Stand-ins for driving the broker's processors in-process from parts (``broker.testing.open_parts``).

A request goes through the codec before the processor sees it, and its answer after, so a test checks what
would cross the wire, as tests/unit/test_nameserver_processor.py does for the NameServer.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from broker.parts import BrokerParts
from broker.processors.pull import PullMessageProcessor
from broker.processors.send import SendMessageProcessor
from rocketmq_wire import RemotingCommand, ResponseCode
from rocketmq_wire.headers.base import CommandHeader
from rocketmq_wire.transport import DeferredAnswer


class FakeConnection:
    """Just enough of a client's connection for the processors and the client tables."""

    def __init__(self, remote_address: str = "10.0.0.7:50001") -> None:
        self.remote_address = remote_address
        self.is_open = True
        self.close_reason: str | None = None

    def close(self, reason: str = "") -> None:
        self.is_open = False
        self.close_reason = reason


class RecordingChannel:
    """A ClientChannel that records what the broker sends to clients and answers with ``answer``."""

    def __init__(self, answer: RemotingCommand | None = None, error: Exception | None = None) -> None:
        self.answer = answer
        self.error = error
        self.invoked: list[tuple[FakeConnection, RemotingCommand, float]] = []
        self.oneways: list[tuple[FakeConnection, RemotingCommand]] = []

    async def invoke(self, conn: Any, cmd: RemotingCommand, timeout_ms: float) -> RemotingCommand:
        self.invoked.append((conn, cmd, timeout_ms))
        if self.error is not None:
            raise self.error
        return self.answer or RemotingCommand(code=ResponseCode.SUCCESS)

    async def invoke_oneway(self, conn: Any, cmd: RemotingCommand) -> None:
        self.oneways.append((conn, cmd))
        if self.error is not None:
            raise self.error


def wire_request(
    code: int, header: CommandHeader | None = None, body: bytes = b"", **attrs: Any
) -> RemotingCommand:
    """A request as the broker would decode it from a client's frame."""
    return RemotingCommand.decode(RemotingCommand.request(code, header, body, **attrs).encode())


async def call(
    processor: Any, request: RemotingCommand, conn: FakeConnection | None = None
) -> RemotingCommand:
    """``processor``'s answer to ``request`` (a promised one awaited), as the client would decode it."""
    outcome = processor(request, conn or FakeConnection())
    answer = await outcome if isinstance(outcome, Awaitable) else outcome
    if isinstance(answer, DeferredAnswer):
        answer = await answer
    assert isinstance(answer, RemotingCommand), f"no answer: {answer!r}"
    assert answer.is_response and answer.opaque == request.opaque
    return RemotingCommand.decode(answer.encode())


# -- the send and pull processors, built from a broker's parts as broker/handlers.py builds them ------------


def send_processor(parts: BrokerParts) -> SendMessageProcessor:
    """The send processor with every part it takes (one place for every test that sends through it)."""
    return SendMessageProcessor(
        config=parts.config,
        topics=parts.metadata.topics,
        groups=parts.metadata.groups,
        messages=parts.storage.messages,
        schedule=parts.storage.schedule,
        transactions=parts.storage.transactions,
        unique_ids=parts.services.unique_ids,
        announcer=parts.services.announcer,
        timer=parts.storage.timer,
        stats=parts.stats,
    )


def pull_processor(parts: BrokerParts) -> PullMessageProcessor:
    """The pull processor with every part it takes."""
    return PullMessageProcessor(
        config=parts.config,
        topics=parts.metadata.topics,
        groups=parts.metadata.groups,
        offsets=parts.metadata.offsets,
        consumers=parts.clients.consumers,
        store=parts.storage.store,
        stats=parts.stats,
        pull_holder=parts.services.pull_holder,
        filters=parts.services.filters,
    )
