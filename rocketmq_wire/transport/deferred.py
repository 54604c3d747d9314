"""An answer a handler promises without waiting for it: the dispatcher sends it when it is given.

A handler that must wait before it can answer usually awaits, and the dispatcher resumes it once the wait
is over. Resuming costs a future, a loop callback and a climb back through every coroutine frame between
the handler and what it waited on. A broker under SYNC_FLUSH pays that on every send, although the
answer is already known when the append returns: only its code still depends on the fsync. Such a handler
returns a :class:`DeferredAnswer` instead, and whoever settles the wait (the group commit's round, for
instance) calls :meth:`DeferredAnswer.resolve` from its own callback; the answer goes out from there,
exactly as if the handler had returned it.

Until then the request counts as unfinished (``max_in_flight`` still bounds it). Whoever holds the promise
must settle it exactly once, with an answer or :meth:`DeferredAnswer.fail`, even when giving up (timeouts,
shutdown), or the peer never hears back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Generator
from typing import Any

from rocketmq_wire.command import RemotingCommand

#: Called with (answer, None) or (None, exception) once the promise is settled.
Delivery = Callable[[RemotingCommand | None, Exception | None], None]


class DeferredAnswer:
    """A handler's answer, given later by a plain callback (see the module).

    The dispatcher attaches its delivery when the handler returns; settling before that keeps the outcome
    until it does. Awaiting it (the dispatcher's task path) gives the answer or raises the failure.
    """

    __slots__ = ("_delivery", "_outcome")

    def __init__(self) -> None:
        self._delivery: Delivery | None = None
        self._outcome: tuple[RemotingCommand | None, Exception | None] | None = None

    @property
    def settled(self) -> bool:
        return self._outcome is not None

    def resolve(self, answer: RemotingCommand | None) -> None:
        """The answer (``None``: nothing to send), sent at once if the dispatcher has the promise already."""
        self._settle(answer, None)

    def fail(self, exc: Exception) -> None:
        """Answer as if the handler had raised ``exc`` (SYSTEM_ERROR, logged)."""
        self._settle(None, exc)

    def _settle(self, answer: RemotingCommand | None, exc: Exception | None) -> None:
        if self._outcome is not None:
            raise RuntimeError("a deferred answer is settled once")
        self._outcome = (answer, exc)
        delivery, self._delivery = self._delivery, None
        if delivery is not None:
            delivery(answer, exc)

    def deliver_to(self, delivery: Delivery) -> None:
        """Where the outcome goes (the dispatcher's side); at once if it is already known."""
        if self._delivery is not None:
            raise RuntimeError("a deferred answer has one recipient")
        if self._outcome is not None:
            delivery(*self._outcome)
        else:
            self._delivery = delivery

    def __await__(self) -> Generator[Any, None, RemotingCommand | None]:
        future: asyncio.Future[RemotingCommand | None] = asyncio.get_running_loop().create_future()

        def settle(answer: RemotingCommand | None, exc: Exception | None) -> None:
            if future.done():  # the awaiting task was cancelled
                return
            if exc is not None:
                future.set_exception(exc)
            else:
                future.set_result(answer)

        self.deliver_to(settle)
        return (yield from future.__await__())
