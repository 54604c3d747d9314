"""Waiting for a verdict cheaply: these waits are on the send path.

Every SYNC_MASTER send waits for a slave: ``asyncio.wait_for`` would make a task per wait (and ``shield``
another future); a bare future settled by whichever comes first, the verdict or the timer, does the same
job. Every SYNC_FLUSH send waits for the group commit, which calls back instead (no future at all);
:func:`outcome` turns such a callback API back into a coroutine for callers that prefer to await.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def settle(future: asyncio.Future[T], value: T) -> None:
    """Give ``future`` its verdict unless it already has one (the timer and the verdict race)."""
    if not future.done():
        future.set_result(value)


async def wait_settled(future: asyncio.Future[bool], timeout_s: float) -> bool:
    """``future``'s verdict, or False once ``timeout_s`` passed without one (the future is settled False)."""
    timer = asyncio.get_running_loop().call_later(timeout_s, settle, future, False)
    try:
        return await future
    finally:
        timer.cancel()


async def outcome(start: Callable[[Callable[[T], object]], T | None]) -> T:
    """Await an operation written for callbacks: ``start(done)`` returns the outcome when it has it at
    once, else ``None``, and calls ``done(outcome)`` later."""
    future: asyncio.Future[T] = asyncio.get_running_loop().create_future()
    now = start(functools.partial(settle, future))  # settle: the awaiting task may have been cancelled
    return now if now is not None else await future
