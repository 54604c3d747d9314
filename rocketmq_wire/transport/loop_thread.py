"""Driving an asyncio client from blocking code: one event loop in a thread of its own.

Every blocking facade (producer, admin, …) needs the same things: a private loop (so it works whether or not
the caller runs a loop, and two facades never share one), a way to run a coroutine there and wait, and a
start/stop lifecycle that is idempotent and thread-safe. :class:`BlockingRunner` is that, once.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """An event loop running in a daemon thread, and a way to run coroutines on it and wait."""

    def __init__(self, name: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        return self._loop

    @property
    def is_current(self) -> bool:
        """Whether the calling code runs on this loop's thread (a blocking call there would deadlock)."""
        return threading.current_thread() is self._thread

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for its result in this thread."""
        if self.is_current:
            coro.close()
            raise RuntimeError("a blocking call was made from its own event loop (e.g. from a callback)")
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise

    def stop(self) -> None:
        if self._loop.is_closed():
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()


class BlockingRunner:
    """Start, use and stop one asyncio client on a :class:`LoopThread`.

    ``not_running`` builds the error a call raises before ``start`` or after ``stop`` (each facade raises
    its own package's error type).
    """

    def __init__(self, thread_name: str, not_running: Callable[[str], Exception]) -> None:
        self._thread_name = thread_name
        self._not_running = not_running
        self._thread: LoopThread | None = None
        self._lock = threading.Lock()

    @property
    def running(self) -> bool:
        return self._thread is not None

    def start(self, opening: Callable[[], Coroutine[Any, Any, object]]) -> None:
        """Start the thread and run ``opening()`` on it; on failure the thread is stopped again."""
        with self._lock:
            if self._thread is not None:
                raise self._not_running("it was already started")
            thread = self._thread = LoopThread(self._thread_name)
        try:
            thread.run(opening())
        except BaseException:
            with self._lock:
                self._thread = None
            thread.stop()
            raise

    def stop(self, closing: Callable[[], Coroutine[Any, Any, object]]) -> None:
        """Run ``closing()`` and stop the thread; idempotent."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is None:
            return
        try:
            thread.run(closing())
        finally:
            thread.stop()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        thread = self._thread
        if thread is None:
            coro.close()
            raise self._not_running("it is not started (use it in a with block or call start() first)")
        return thread.run(coro, timeout)

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Start ``coro`` on the client's thread without waiting for it (callback forms of the facades)."""
        thread = self._thread
        if thread is None:
            coro.close()
            raise self._not_running("it is not started (use it in a with block or call start() first)")
        return asyncio.run_coroutine_threadsafe(coro, thread.loop)
