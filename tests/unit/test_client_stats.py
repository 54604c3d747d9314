"""The statistics hook's figures and its reporter, without a cluster."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from client.stats import ClientStats, StatsReporter
from client.telemetry import NO_OBSERVER, Observation, make_observer


def test_figures_add_up_per_object() -> None:
    first, second = ClientStats("producer"), ClientStats("producer")
    first.record_send(True, 2, 10, 4.0)
    first.record_send(False, 1, 99, 1.0)
    second.record_send(True, 1, 3, 2.0)
    snap = first.snapshot()
    assert (snap["sent_ok"], snap["sent_failed"], snap["sent_bytes"]) == (2, 1, 10)
    assert snap["send_latency"] == {"count": 2, "avg_ms": 2.5, "min_ms": 1.0, "max_ms": 4.0}
    assert second.snapshot()["sent_ok"] == 1 and second.snapshot()["sent_bytes"] == 3
    assert snap["lag"] is None


def test_a_failing_lag_is_logged_and_none(caplog: pytest.LogCaptureFixture) -> None:
    def broken() -> int:
        raise RuntimeError("no lag")

    stats = ClientStats("push_consumer", broken)
    with caplog.at_level(logging.ERROR, logger="client.stats"):
        assert stats.snapshot()["lag"] is None
    assert "computing the lag failed" in caplog.text


async def test_reporter_calls_back_periodically_and_at_stop_and_survives_a_failing_callback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    stats = ClientStats("producer")
    calls: list[dict[str, Any]] = []

    def callback(snapshot: dict[str, Any]) -> None:
        calls.append(snapshot)
        if len(calls) == 1:
            raise ValueError("the user's bug")

    reporter = StatsReporter(stats, callback, 0.01)
    reporter.start()
    with caplog.at_level(logging.ERROR, logger="client.stats"):
        await asyncio.sleep(0.1)
    periodic = len(calls)
    assert periodic >= 2, "a failing callback does not stop the reporter"
    stats.record_send(True, 1, 1, 1.0)
    await reporter.stop()
    assert len(calls) == periodic + 1 and calls[-1]["sent_ok"] == 1
    assert "the stats callback failed" in caplog.text
    with pytest.raises(ValueError):
        StatsReporter(stats, callback, 0)


def test_no_options_means_the_do_nothing_observer() -> None:
    assert make_observer(role="producer", client_id=str, stats=None, otel=False) is NO_OBSERVER
    observation = Observation(role="producer", client_id=lambda: "c", otel=False)
    assert observation.observer is NO_OBSERVER and observation.snapshot() is None
    with_stats = Observation(role="producer", client_id=lambda: "c", stats_cb=lambda _: None, otel=False)
    assert with_stats.observer is not NO_OBSERVER and with_stats.snapshot() is not None
