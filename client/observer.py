"""The seam between a client and whoever watches its traffic: the scopes and observer a client calls
(``client.telemetry`` builds them), and the OpenTelemetry options a user passes. Kept apart so that
``client.otel`` can implement these without importing the module that imports it."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, Protocol

from rocketmq_wire.message import Message
from rocketmq_wire.message.stored import MessageExt


class SendScope(Protocol):
    """One send under way; ``end`` is called once, with the outcome."""

    def end(self, ok: bool, msg_id: str | None = None) -> None: ...


class ProcessScope(Protocol):
    """One handler call on a batch of messages under way; ``end`` is called once."""

    def end(self, ok: bool) -> None: ...


class Observer(Protocol):
    """Told by a client about its traffic. ``start_send`` may add properties to the message (the trace
    context) and so must be called before the message is encoded."""

    def start_send(self, topic: str, messages: Sequence[Message]) -> SendScope: ...

    def received(self, group: str, messages: Sequence[MessageExt]) -> None: ...

    def start_process(self, group: str, messages: Sequence[MessageExt]) -> ProcessScope: ...


@dataclasses.dataclass(frozen=True)
class OtelOptions:
    """Where a client's OpenTelemetry metrics and spans go; ``None`` providers mean OpenTelemetry's global
    ones (whatever the application configured, or OpenTelemetry's own no-op)."""

    meter_provider: Any = None
    tracer_provider: Any = None
