"""Durable rewrites of one file shared by the requests that wait on them (a group commit for a table).

A POP, ack or change of invisible time may be answered only once the table holding it is on disk. Writing
the whole table (with two fsyncs) for each request, on the event loop, made every request wait for the
disk in turn and stalled the loop meanwhile. Here a request that changed the table waits for a write that
*began after* its change: the table is serialized on the loop (so the bytes are one consistent state),
written and fsynced in a worker thread, and every request that changed the table before that snapshot
is answered by the same write. Requests arriving during a write share the next one. One write at a time,
so the file has a single writer. A write that only reaches the page cache (``in_thread`` false) takes
microseconds: it is made on the loop, where the hop to a thread and back would cost more than it, and the
requests of one turn of the loop still share it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class GroupSave:
    """Coalesces durable writes of ``snapshot()`` by ``write(data)`` (which raises ``OSError`` on failure)."""

    def __init__(
        self, snapshot: Callable[[], bytes], write: Callable[[bytes], None], *, in_thread: bool = True
    ) -> None:
        self._snapshot = snapshot
        self._write = write
        self._in_thread = in_thread
        #: Callers whose changes the next write must hold.
        self._next: list[asyncio.Future[None]] = []
        #: Callers waiting on the write under way (it holds everything they could depend on).
        self._current: list[asyncio.Future[None]] | None = None
        self._writer: asyncio.Task[None] | None = None

    @property
    def writing(self) -> bool:
        return self._writer is not None

    async def save(self, changed: bool) -> None:
        """Return once what the caller changed (``changed``) is durable; with nothing changed, once the
        changes already asked to be saved are, since the caller's answer may rest on them. Raises the
        ``OSError`` of a failed write: nothing the caller changed may then be acknowledged."""
        if not changed and self._current is None and not self._next:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        if changed or self._current is None:
            self._next.append(future)  # a change not yet in any write under way
        else:
            self._current.append(future)
        if self._writer is None:
            self._writer = asyncio.create_task(self._write_rounds(), name="pop-table-write")
        await future

    async def drain(self) -> None:
        """Wait for every write asked for so far (a clean stop)."""
        while self._writer is not None:
            await asyncio.wait({self._writer})

    async def _write_rounds(self) -> None:
        try:
            while self._next:
                self._current, self._next = self._next, []
                failure: Exception | None = None
                try:
                    data = self._snapshot()
                    if self._in_thread:
                        await asyncio.to_thread(self._write, data)
                    else:
                        self._write(data)
                except Exception as exc:  # every waiter gets it: none of their changes is durable
                    failure = exc
                waiters, self._current = self._current, None
                for future in waiters:
                    if future.done():  # its caller was cancelled
                        continue
                    if failure is None:
                        future.set_result(None)
                    else:
                        future.set_exception(failure)
        finally:
            self._writer = None
