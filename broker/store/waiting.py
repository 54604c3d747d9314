"""Waiting for a verdict with a deadline, at the cost of a future and a timer.

Every SYNC_FLUSH send waits for the group commit and every SYNC_MASTER send for a slave, so these waits
are on the send path: ``asyncio.wait_for`` would make a task per wait (and ``shield`` another future);
a bare future settled by whichever comes first, the verdict or the timer, does the same job.
"""

from __future__ import annotations

import asyncio


def settle(future: asyncio.Future[bool], value: bool) -> None:
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
