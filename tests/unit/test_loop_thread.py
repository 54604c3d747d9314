"""The blocking-facade runner: one private loop, an idempotent lifecycle, clear errors."""

from __future__ import annotations

import asyncio
import threading

import pytest

from rocketmq_wire.transport.loop_thread import BlockingRunner


class _Closed(Exception):
    pass


def test_lifecycle_and_calls_run_on_a_private_loop() -> None:
    events: list[str] = []

    async def opening() -> None:
        events.append("open")

    async def closing() -> None:
        events.append("close")

    async def where() -> str:
        return threading.current_thread().name

    runner = BlockingRunner("test-loop", _Closed)
    with pytest.raises(_Closed, match="not started"):
        runner.run(where())
    runner.start(opening)
    with pytest.raises(_Closed, match="already started"):
        runner.start(opening)
    assert runner.run(where()) == "test-loop"
    runner.stop(closing)
    runner.stop(closing)  # idempotent: closing runs once
    assert events == ["open", "close"] and not runner.running


def test_a_failed_start_leaves_nothing_running() -> None:
    async def opening() -> None:
        raise OSError("connection refused")

    runner = BlockingRunner("test-loop", _Closed)
    before = threading.active_count()
    with pytest.raises(OSError):
        runner.start(opening)
    assert not runner.running and threading.active_count() == before


def test_a_blocking_call_from_its_own_loop_is_refused_not_deadlocked() -> None:
    runner = BlockingRunner("test-loop", _Closed)

    async def nothing() -> None:
        return None

    runner.start(nothing)

    async def reenter() -> str:
        inner = asyncio.sleep(0)
        try:
            runner.run(inner)
        except RuntimeError as exc:
            return str(exc)
        return "no error"

    try:
        assert "own event loop" in runner.run(reenter(), timeout=5)
    finally:
        runner.stop(nothing)
