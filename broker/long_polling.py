"""Long polling: a pull that finds nothing waits at the broker until a message arrives or time runs out.

A consumer sets the suspend flag on its pulls. When such a pull finds no message, the broker keeps the
request instead of answering PULL_NOT_FOUND, for at most ``suspendTimeoutMillis`` (Apache's
``PullRequestHoldService``). A message arriving in the queue -- one the pull's tag filter accepts -- wakes
the request, which is then served again without the right to wait; so does the timeout. Either way the
answer goes out on the connection later, which is why the pull handler returns ``None`` for held requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable

from broker.clock import Clock
from broker.filtering import accepts
from rocketmq_wire import RemotingCommand, ResponseCode
from rocketmq_wire.transport import Connection
from rocketmq_wire.transport.dispatch import describe_exception, send_answer

log = logging.getLogger("broker.long_polling")

#: ``execute(request, conn)``: serve a held pull again, not allowing it to be held; returns the answer.
PullExecutor = Callable[[RemotingCommand, Connection], RemotingCommand | None]


@dataclasses.dataclass(eq=False, slots=True)
class HeldPull:
    request: RemotingCommand
    conn: Connection
    pull_from_offset: int
    codes: frozenset[int] | None
    deadline_ms: int
    timer: asyncio.Task[None] | None = None
    #: ``time.perf_counter()`` when it was held, for timing its answer.
    held_at: float = dataclasses.field(default_factory=time.perf_counter)


#: ``answered(request, answer, conn, held_at)``: a held pull was answered (for timing it).
HeldAnswerObserver = Callable[[RemotingCommand, RemotingCommand, Connection, float], None]


class PullRequestHoldService:
    def __init__(
        self, clock: Clock, execute: PullExecutor, answered: HeldAnswerObserver | None = None
    ) -> None:
        self._clock = clock
        self._execute = execute
        self._answered = answered
        self._held: dict[tuple[str, int], list[HeldPull]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False
        self._watchers: list[Callable[[], None]] = []

    def watch(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` whenever a pull is held or let go (for monitoring and tests)."""
        self._watchers.append(callback)

    def _changed(self) -> None:
        for callback in list(self._watchers):
            try:
                callback()
            except Exception:
                log.exception("hold-service watcher failed")

    @property
    def held_count(self) -> int:
        return sum(len(pulls) for pulls in self._held.values())

    def held(self, topic: str, queue_id: int) -> int:
        return len(self._held.get((topic, queue_id), ()))

    def suspend(
        self,
        topic: str,
        queue_id: int,
        request: RemotingCommand,
        conn: Connection,
        pull_from_offset: int,
        codes: frozenset[int] | None,
        timeout_ms: int,
    ) -> None:
        """Hold a pull that found nothing, for at most ``timeout_ms``."""
        pull = HeldPull(request, conn, pull_from_offset, codes, self._clock.now_ms() + max(0, timeout_ms))
        key = (topic, queue_id)
        self._held.setdefault(key, []).append(pull)
        pull.timer = asyncio.create_task(self._expire(key, pull), name="pull-hold-timeout")
        self._tasks.add(pull.timer)
        pull.timer.add_done_callback(self._tasks.discard)
        log.debug(
            "holding pull of %s/%d from offset %d for %d ms", topic, queue_id, pull_from_offset, timeout_ms
        )
        self._changed()

    def notify_arrival(self, topic: str, queue_id: int, max_offset: int, tag_codes: tuple[int, ...]) -> None:
        """Messages arrived: wake the held pulls of the queue that they are new to and that accept one."""
        key = (topic, queue_id)
        pulls = self._held.get(key)
        if not pulls:
            return
        keep: list[HeldPull] = []
        for pull in pulls:
            if max_offset > pull.pull_from_offset and (
                not tag_codes or any(accepts(pull.codes, code) for code in tag_codes)
            ):
                self._wake(pull)
            else:
                keep.append(pull)
        if keep:
            self._held[key] = keep
        else:
            del self._held[key]
        if len(keep) != len(pulls):
            self._changed()

    async def _expire(self, key: tuple[str, int], pull: HeldPull) -> None:
        # Measured from the deadline fixed at suspension, not from when this task first runs.
        await self._clock.sleep_ms(pull.deadline_ms - self._clock.now_ms())
        pulls = self._held.get(key)
        if pulls is None or pull not in pulls:
            return
        pulls.remove(pull)
        if not pulls:
            del self._held[key]
        pull.timer = None
        self._wake(pull)
        self._changed()

    def _wake(self, pull: HeldPull) -> None:
        if pull.timer is not None:
            pull.timer.cancel()
            pull.timer = None
        if not pull.conn.is_open:
            return
        try:
            answer = self._execute(pull.request, pull.conn)
        except Exception as exc:
            log.exception("serving a held pull from %s failed", pull.conn.remote_address)
            # answered as the dispatcher answers a handler that raised: the consumer is not left waiting
            answer = pull.request.make_response(ResponseCode.SYSTEM_ERROR, remark=describe_exception(exc))
        if answer is None:
            return
        if self._answered is not None:
            self._answered(pull.request, answer, pull.conn, pull.held_at)
        task = asyncio.create_task(send_answer(pull.request, answer, pull.conn), name="pull-hold-answer")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def connection_closed(self, conn: Connection) -> None:
        for key in list(self._held):
            pulls = self._held[key]
            keep = [pull for pull in pulls if pull.conn is not conn]
            for pull in pulls:
                if pull.conn is conn and pull.timer is not None:
                    pull.timer.cancel()
            if keep:
                self._held[key] = keep
            else:
                del self._held[key]
        self._changed()

    async def close(self) -> None:
        """Forget every held pull (their consumers retry elsewhere) and stop the timers."""
        self._closed = True
        self._held.clear()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
