"""Per-topic pull and consume figures of one consumer (Java's ``ConsumerStatsManager``).

Operators read them from GET_CONSUMER_RUNNING_INFO (mqadmin ``consumerStatus``) and compare members of a
group by them, so they are computed the way Java's ``StatsItem`` computes them, not merely "something
similar": every counter (a running total and a number of calls) is sampled every 10 s, the last 7 samples
(one minute) give the per-minute figures, and samples every 10 minutes, the last 7 (one hour), the
per-hour ones. A rate is the growth of the total between the oldest and newest sample divided by the time
between them; an average time is that growth divided by the growth in calls.

Java samples on timers; here a counter is sampled when it is next touched -- by an update or a read --
with the values it held at each sampling time it passed (it cannot have changed since it was last
touched), which gives the same samples without a timer per counter. The clock is injectable for tests.
"""

from __future__ import annotations

import collections
import dataclasses
import time
from collections.abc import Callable

from rocketmq_wire.bodies.running_info import TopicConsumeStatus

#: ``samplingInSeconds``: every 10 s, keeping 7 samples -- the minute figures.
MINUTE_SAMPLE_MS = 10_000
MINUTE_SAMPLES = 7
#: ``samplingInMinutes``: every 10 minutes, keeping 7 samples -- the hour figures.
HOUR_SAMPLE_MS = 600_000
HOUR_SAMPLES = 7


def _monotonic_ms() -> float:
    return time.monotonic() * 1000


@dataclasses.dataclass(frozen=True, slots=True)
class Snapshot:
    """Java's ``StatsSnapshot``: growth of the total, per second, per call, and the calls counted."""

    sum: float = 0.0
    tps: float = 0.0
    avgpt: float = 0.0
    times: int = 0


class _Samples:
    """The last ``keep`` samples ``(at_ms, calls, total)`` of a counter taken every ``period_ms``.

    Java starts the series with a zero sample one period before the first real one; so does this.
    """

    def __init__(self, period_ms: float, keep: int, start_ms: float) -> None:
        self._period = period_ms
        self._samples: collections.deque[tuple[float, int, float]] = collections.deque(
            [(start_ms - period_ms, 0, 0.0), (start_ms, 0, 0.0)], maxlen=keep
        )
        self._next_ms = start_ms + period_ms

    def catch_up(self, now_ms: float, calls: int, total: float) -> None:
        """Take the samples due by ``now_ms``; the counter held ``calls`` / ``total`` at all of them."""
        if now_ms < self._next_ms:
            return
        due = int((now_ms - self._next_ms) // self._period) + 1
        keep = self._samples.maxlen or 0
        first = self._next_ms + max(0, due - keep) * self._period  # older ones would be dropped at once
        for index in range(min(due, keep)):
            self._samples.append((first + index * self._period, calls, total))
        self._next_ms += due * self._period

    def snapshot(self) -> Snapshot:
        """``computeStatsData``: from the oldest to the newest sample kept."""
        first_at, first_calls, first_total = self._samples[0]
        last_at, last_calls, last_total = self._samples[-1]
        total = last_total - first_total
        calls = last_calls - first_calls
        return Snapshot(
            sum=total,
            tps=total * 1000.0 / (last_at - first_at),
            avgpt=total / calls if calls > 0 else 0.0,
            times=calls,
        )


class StatsItem:
    """A counter sampled for minute and hour figures: a total (messages, or milliseconds for response
    times) and the number of calls that added to it."""

    def __init__(self, now_ms: float) -> None:
        self.total = 0.0
        self.calls = 0
        self._minute = _Samples(MINUTE_SAMPLE_MS, MINUTE_SAMPLES, now_ms)
        self._hour = _Samples(HOUR_SAMPLE_MS, HOUR_SAMPLES, now_ms)

    def _catch_up(self, now_ms: float) -> None:
        self._minute.catch_up(now_ms, self.calls, self.total)
        self._hour.catch_up(now_ms, self.calls, self.total)

    def add(self, value: float, now_ms: float, calls: int = 1) -> None:
        self._catch_up(now_ms)  # samples due before this update must not see it
        self.total += value
        self.calls += calls

    def in_minute(self, now_ms: float) -> Snapshot:
        self._catch_up(now_ms)
        return self._minute.snapshot()

    def in_hour(self, now_ms: float) -> Snapshot:
        self._catch_up(now_ms)
        return self._hour.snapshot()


class _ItemSet:
    """Counters by topic, created on first use (Java's ``StatsItemSet``, keyed ``topic@group``; one
    consumer has one group, so the topic is enough here)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._items: dict[str, StatsItem] = {}

    def add(self, topic: str, value: float, calls: int = 1) -> None:
        now = self._clock()
        item = self._items.get(topic)
        if item is None:
            item = self._items[topic] = StatsItem(now)
        item.add(value, now, calls)

    def in_minute(self, topic: str) -> Snapshot:
        item = self._items.get(topic)
        return Snapshot() if item is None else item.in_minute(self._clock())

    def in_hour(self, topic: str) -> Snapshot:
        item = self._items.get(topic)
        return Snapshot() if item is None else item.in_hour(self._clock())


class ConsumerStats:
    """The five counters Java's client keeps per topic; ``clock`` gives milliseconds (by default the
    monotonic clock, looked up when the object is made so that tests can replace it)."""

    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        clock = clock or _monotonic_ms
        self._pull_rt = _ItemSet(clock)
        self._pull_tps = _ItemSet(clock)
        self._consume_rt = _ItemSet(clock)
        self._consume_ok = _ItemSet(clock)
        self._consume_failed = _ItemSet(clock)

    def pulled(self, topic: str, rt_ms: float, messages: int) -> None:
        """A pull that found messages: its round trip, and how many it brought (after tag filtering)."""
        self._pull_rt.add(topic, rt_ms)
        if messages > 0:
            self._pull_tps.add(topic, messages)

    def consumed(self, topic: str, rt_ms: float, ok: int, failed: int) -> None:
        """One listener call: how long it took, how many messages it took and how many it failed.

        Java counts both, a zero included, whenever the verdict is processed."""
        self._consume_rt.add(topic, rt_ms)
        self._consume_ok.add(topic, ok)
        self._consume_failed.add(topic, failed)

    def consume_time(self, topic: str, rt_ms: float) -> None:
        """A listener call whose verdict is not processed (its queue was released meanwhile)."""
        self._consume_rt.add(topic, rt_ms)

    def status(self, topic: str) -> TopicConsumeStatus:
        """The topic's figures as GET_CONSUMER_RUNNING_INFO reports them; a listener time of 0 over the
        last minute falls back to the last hour's, as in Java."""
        consume_rt = self._consume_rt.in_minute(topic)
        if consume_rt.sum == 0:
            consume_rt = self._consume_rt.in_hour(topic)
        return TopicConsumeStatus(
            pull_rt=self._pull_rt.in_minute(topic).avgpt,
            pull_tps=self._pull_tps.in_minute(topic).tps,
            consume_rt=consume_rt.avgpt,
            consume_ok_tps=self._consume_ok.in_minute(topic).tps,
            consume_failed_tps=self._consume_failed.in_minute(topic).tps,
            consume_failed_msgs=int(self._consume_failed.in_hour(topic).sum),
        )
