"""The consumer's pull and consume figures, computed as Java's ``StatsItem`` computes them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from consumer.stats import MINUTE_SAMPLE_MS, MINUTE_SAMPLES, ConsumerStats, StatsItem
from rocketmq_wire.bodies.running_info import TopicConsumeStatus


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_minute_figures_of_pulls_and_consumption() -> None:
    clock = Clock()
    stats = ConsumerStats(clock)
    stats.pulled("T", rt_ms=10, messages=5)  # both counters start here, at 0 ms
    clock.now = 1_000
    stats.consumed("T", rt_ms=100, ok=4, failed=1)
    clock.now = 2_000
    stats.consumed("T", rt_ms=50, ok=0, failed=2)
    clock.now = 5_000
    stats.pulled("T", rt_ms=30, messages=3)
    stats.pulled("T", rt_ms=20, messages=0)  # found nothing the subscription wants: a round trip, no messages
    clock.now = 11_000
    status = stats.status("T")
    # samples at -10 s (zero), 0 s (zero) and 10 s: every event counts, over 20 s
    assert status.pull_rt == 20.0  # (10 + 30 + 20) / 3 pulls
    assert status.pull_tps == 0.4  # 8 messages / 20 s
    # the consume counters started at 1 s: samples at -9 s, 1 s and 11 s
    assert status.consume_rt == 75.0
    assert status.consume_ok_tps == 0.2
    assert status.consume_failed_tps == 0.15
    assert status.consume_failed_msgs == 0  # hour figures are sampled every 10 minutes: none yet


def test_the_minute_slides_and_the_hour_takes_over() -> None:
    clock = Clock()
    stats = ConsumerStats(clock)
    stats.consumed("T", rt_ms=100, ok=4, failed=1)
    stats.consumed("T", rt_ms=50, ok=0, failed=2)
    clock.now = 10_000
    assert stats.status("T").consume_ok_tps == 0.2
    clock.now = 80_000  # seven samples later the events are out of the minute
    quiet = stats.status("T")
    assert (quiet.consume_ok_tps, quiet.consume_failed_tps) == (0.0, 0.0)
    assert quiet.consume_rt == 0.0  # and not yet in an hour sample
    clock.now = 600_000  # the first ten-minute sample: the hour figures see them
    later = stats.status("T")
    assert later.consume_failed_msgs == 3
    assert later.consume_rt == 75.0  # nothing in the last minute: Java falls back to the hour


def test_an_unknown_topic_has_zero_figures() -> None:
    assert ConsumerStats(Clock()).status("never") == TopicConsumeStatus()


def _reference(events: list[tuple[int, int]], read_at: int) -> tuple[float, float]:
    """What a timer sampling every 10 s from the first event on would give (Java's way): ``(sum, tps)``."""
    start = events[0][0]
    samples = [(start - MINUTE_SAMPLE_MS, 0), (start, 0)]
    tick = start + MINUTE_SAMPLE_MS
    while tick <= read_at:
        samples.append((tick, sum(v for t, v in events if t < tick)))
        tick += MINUTE_SAMPLE_MS
    kept = samples[-MINUTE_SAMPLES:]
    total = kept[-1][1] - kept[0][1]
    return total, total * 1000.0 / (kept[-1][0] - kept[0][0])


@given(
    st.lists(st.tuples(st.integers(0, 200_000), st.integers(0, 50)), min_size=1, max_size=40),
    st.integers(0, 100_000),
)
def test_sampling_on_touch_equals_sampling_on_a_timer(raw: list[tuple[int, int]], after: int) -> None:
    events = sorted(raw, key=lambda e: e[0])
    item = StatsItem(events[0][0])
    for at, value in events:
        item.add(value, at)
    read_at = events[-1][0] + after
    snapshot = item.in_minute(read_at)
    assert (snapshot.sum, snapshot.tps) == _reference(events, read_at)
