"""Connection open/close listeners that may be plain functions or coroutines.

Roles react to connections going away with real work -- the NameServer expires a broker's routes when its
channel closes, the broker forgets a client's subscriptions -- which is sometimes async. Listener coroutines
run as tasks owned here, so closing the endpoint can wait for them instead of leaking them.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from rocketmq_wire.transport.connection import Connection

logger = logging.getLogger("rocketmq_wire.transport")

#: ``listener(conn)``; may return an awaitable, which is then run to completion as a task.
ConnectionListener = Callable[[Connection], Any]


class ConnectionListeners:
    """An ordered set of listeners plus the tasks their coroutines are running in."""

    def __init__(self) -> None:
        self._listeners: list[ConnectionListener] = []
        self._tasks: set[asyncio.Task[None]] = set()

    def add(self, listener: ConnectionListener) -> None:
        if listener not in self._listeners:
            self._listeners.append(listener)

    def remove(self, listener: ConnectionListener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)

    def fire(self, conn: Connection) -> None:
        for listener in list(self._listeners):
            try:
                result = listener(conn)
            except Exception:
                logger.exception("connection listener %r failed for %s", listener, conn.address)
                continue
            if inspect.isawaitable(result):
                task = asyncio.get_running_loop().create_task(self._complete(listener, result, conn))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

    async def wait(self) -> None:
        """Wait for the listener coroutines started so far (and any they cause) to finish."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    @staticmethod
    async def _complete(listener: ConnectionListener, result: Awaitable[Any], conn: Connection) -> None:
        try:
            await result
        except Exception:
            logger.exception("connection listener %r failed for %s", listener, conn.address)
