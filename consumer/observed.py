"""A push consumer's handler seen by its observers (``client.telemetry``): each call is one process scope,
its outcome the handler's status (an exception, nothing, anything not a status, or a retry verdict count as
failure); whatever the handler returns or raises passes through unchanged."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from client.telemetry import Observer
from consumer.listener import ConsumeStatus
from rocketmq_wire.message.stored import MessageExt


def observed_handler(handler: Any, observer: Observer, group: str) -> Callable[[list[MessageExt], Any], Any]:
    """``handler`` with a process scope around each call; the caller picks this only when observed."""

    async def call(messages: list[MessageExt], context: Any) -> ConsumeStatus | None:
        scope = observer.start_process(group, messages)
        ok = False
        try:
            status: ConsumeStatus | None = await handler(messages, context)
            ok = isinstance(status, ConsumeStatus) and status.succeeded
            return status
        finally:
            scope.end(ok)

    return call
