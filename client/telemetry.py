"""What a client tells its observers about each send and each processed batch: the shared seam behind the
plain statistics hook (``client.stats``) and the optional OpenTelemetry metrics and spans (``client.otel``).

A client asks :func:`make_observer` once, when it is built, for the observer matching its options; with
neither statistics nor OpenTelemetry wanted it gets :data:`NO_OBSERVER`, whose calls do nothing, so the
per-message path carries no test and no import attempt. ``client.otel`` (and through it ``opentelemetry``)
is imported only when OpenTelemetry is asked for, or asked for by default and installed (the ``otel``
extra); without the extra no OpenTelemetry module is ever imported.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Callable, Sequence
from typing import Any

from client.observer import Observer, OtelOptions, ProcessScope, SendScope
from client.stats import DEFAULT_STATS_INTERVAL_S, ClientStats, StatsCallback, StatsReporter
from rocketmq_wire.message import Message
from rocketmq_wire.message.stored import MessageExt


class _NoScope:
    __slots__ = ()

    def end(self, ok: bool, msg_id: str | None = None) -> None:
        return None


_NO_SCOPE = _NoScope()


class _NoObserver:
    """Observes nothing: what a client uses when neither statistics nor OpenTelemetry are on."""

    __slots__ = ()

    def start_send(self, topic: str, messages: Sequence[Message]) -> SendScope:
        return _NO_SCOPE

    def received(self, group: str, messages: Sequence[MessageExt]) -> None:
        return None

    def start_process(self, group: str, messages: Sequence[MessageExt]) -> ProcessScope:
        return _NO_SCOPE


NO_OBSERVER: Observer = _NoObserver()


def _body_size(messages: Sequence[Message] | Sequence[MessageExt]) -> int:
    return sum(len(m.body) for m in messages)


class _StatsSend:
    __slots__ = ("_began", "_count", "_size", "_stats")

    def __init__(self, stats: ClientStats, count: int, size: int) -> None:
        self._stats = stats
        self._count = count
        self._size = size
        self._began = time.perf_counter()

    def end(self, ok: bool, msg_id: str | None = None) -> None:
        spent_ms = (time.perf_counter() - self._began) * 1000
        self._stats.record_send(ok, self._count, self._size, spent_ms)


class _StatsProcess:
    __slots__ = ("_began", "_count", "_stats")

    def __init__(self, stats: ClientStats, count: int) -> None:
        self._stats = stats
        self._count = count
        self._began = time.perf_counter()

    def end(self, ok: bool, msg_id: str | None = None) -> None:
        spent_ms = (time.perf_counter() - self._began) * 1000
        if ok:
            self._stats.record_processed(self._count, 0, spent_ms)
        else:
            self._stats.record_processed(0, self._count, spent_ms)


class StatsObserver:
    """Feeds a :class:`ClientStats`."""

    __slots__ = ("stats",)

    def __init__(self, stats: ClientStats) -> None:
        self.stats = stats

    def start_send(self, topic: str, messages: Sequence[Message]) -> SendScope:
        return _StatsSend(self.stats, len(messages), _body_size(messages))

    def received(self, group: str, messages: Sequence[MessageExt]) -> None:
        self.stats.record_received(len(messages), _body_size(messages))

    def start_process(self, group: str, messages: Sequence[MessageExt]) -> ProcessScope:
        return _StatsProcess(self.stats, len(messages))


class _BothScopes:
    __slots__ = ("_first", "_second")

    def __init__(self, first: SendScope | ProcessScope, second: SendScope | ProcessScope) -> None:
        self._first = first
        self._second = second

    def end(self, ok: bool, msg_id: str | None = None) -> None:
        _end(self._first, ok, msg_id)
        _end(self._second, ok, msg_id)


def _end(scope: SendScope | ProcessScope, ok: bool, msg_id: str | None) -> None:
    if msg_id is None:
        scope.end(ok)
    else:
        scope.end(ok, msg_id)  # type: ignore[call-arg]


class _BothObservers:
    """Statistics and OpenTelemetry together."""

    __slots__ = ("_first", "_second")

    def __init__(self, first: Observer, second: Observer) -> None:
        self._first = first
        self._second = second

    def start_send(self, topic: str, messages: Sequence[Message]) -> SendScope:
        return _BothScopes(self._first.start_send(topic, messages), self._second.start_send(topic, messages))

    def received(self, group: str, messages: Sequence[MessageExt]) -> None:
        self._first.received(group, messages)
        self._second.received(group, messages)

    def start_process(self, group: str, messages: Sequence[MessageExt]) -> ProcessScope:
        return _BothScopes(
            self._first.start_process(group, messages), self._second.start_process(group, messages)
        )


def otel_installed() -> bool:
    """Whether the ``otel`` extra is importable, found without importing it."""
    try:
        return importlib.util.find_spec("opentelemetry") is not None
    except (ImportError, ValueError):
        return False


def make_observer(
    *,
    role: str,
    client_id: Callable[[], str],
    stats: ClientStats | None,
    otel: OtelOptions | bool | None,
    group: str = "",
) -> Observer:
    """The observer a client keeps for its life. ``otel``: ``None`` turns OpenTelemetry on when installed,
    ``False`` off, ``True`` or :class:`OtelOptions` on (an error if the extra is missing)."""
    observers: list[Observer] = []
    if stats is not None:
        observers.append(StatsObserver(stats))
    if otel is None:
        otel = otel_installed()
    if otel is not False:
        from client.otel import OtelObserver  # only when wanted: the extra may be absent

        options = otel if isinstance(otel, OtelOptions) else OtelOptions()
        observers.append(OtelObserver(role=role, client_id=client_id, options=options, group=group))
    if not observers:
        return NO_OBSERVER
    if len(observers) == 1:
        return observers[0]
    return _BothObservers(observers[0], observers[1])


class Observation:
    """A client's observers and statistics for its life, built from its user options once; the client
    calls :meth:`start` and :meth:`stop` with its own lifecycle and hands ``observer`` its traffic."""

    def __init__(
        self,
        *,
        role: str,
        client_id: Callable[[], str],
        stats_cb: StatsCallback | None = None,
        stats_interval_s: float | None = None,
        otel: OtelOptions | bool | None = None,
        lag: Callable[[], int | None] | None = None,
        group: str = "",
    ) -> None:
        self._client_id = client_id
        self.stats = ClientStats(role, lag) if stats_cb is not None else None
        self._reporter = (
            StatsReporter(self.stats, stats_cb, stats_interval_s or DEFAULT_STATS_INTERVAL_S)
            if self.stats is not None and stats_cb is not None
            else None
        )
        self.observer = make_observer(
            role=role, client_id=client_id, stats=self.stats, otel=otel, group=group
        )

    def start(self) -> None:
        if self.stats is not None:
            self.stats.client_id = self._client_id()
        if self._reporter is not None:
            self._reporter.start()

    async def stop(self) -> None:
        if self._reporter is not None:
            await self._reporter.stop()

    def snapshot(self) -> dict[str, Any] | None:
        """The statistics now, or None when the client keeps none (no ``stats_cb``)."""
        return None if self.stats is None else self.stats.snapshot()


__all__ = [
    "NO_OBSERVER",
    "Observation",
    "Observer",
    "OtelOptions",
    "ProcessScope",
    "SendScope",
    "make_observer",
]
