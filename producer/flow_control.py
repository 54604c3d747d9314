"""Riding out a busy broker: which answers mean "busy, nothing stored", and how long to wait before resending.

Apache's broker sheds load instead of queueing without bound: a send that waited in its queue longer than
``waitTimeMillsInSendQueue``, or that met a commit log held longer than ``osPageCacheBusyTimeOutMills``, is
answered SYSTEM_BUSY (``[TIMEOUT_CLEAN_QUEUE]``, ``[PCBUSY_CLEAN_QUEUE]``, ``[REJECTREQUEST]``,
``[OVERLOAD]``), and a store that finds the page cache busy answers SYSTEM_ERROR ``[PC_SYNCHRONIZED]``. All of
these are given before the message is written, so sending it again can never store it twice; they differ
from a timed-out answer, after which the message may be stored.

Java 5.x resends at once, on another broker when it can. Resending at once into a broker that is shedding
load makes the overload worse, so once every broker tried has said busy the producer waits a bounded,
exponentially growing and jittered delay before the next attempt, always within the send's time budget.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from client.backoff import Backoff
from rocketmq_wire.codes import ResponseCode

#: Remarks with which a SYSTEM_ERROR answer means "busy, not stored" (Apache's ``OS_PAGE_CACHE_BUSY``).
BUSY_SYSTEM_ERROR_PREFIXES: tuple[str, ...] = ("[PC_SYNCHRONIZED]",)


def is_busy_answer(code: int, remark: str | None) -> bool:
    """True for a broker answer that refuses a send for load and guarantees it was not stored."""
    if code == ResponseCode.SYSTEM_BUSY:
        return True
    return code == ResponseCode.SYSTEM_ERROR and (remark or "").startswith(BUSY_SYSTEM_ERROR_PREFIXES)


@dataclasses.dataclass(frozen=True, slots=True)
class BusyAnswer:
    """One busy refusal, as reported to :meth:`producer.Producer.add_busy_listener` listeners."""

    broker_name: str
    addr: str
    code: int
    remark: str | None


#: ``listener(answer)``, called on the event loop for every busy answer (keep it quick; it may not raise).
BusyListener = Callable[[BusyAnswer], None]


class BusyRefusals:
    """The busy answers one send has met: which brokers refused since the last pause, and the backoff.

    The next attempt goes at once to a broker that has not refused since the last pause (Java 5.x's "resend
    at once" on another broker); it waits first only when the broker it is about to try refused already.
    """

    def __init__(self, backoff: Backoff) -> None:
        self._backoff = backoff
        self._since_pause: set[str] = set()
        self.count = 0
        self.last: BusyAnswer | None = None

    def add(self, answer: BusyAnswer) -> None:
        self._since_pause.add(answer.broker_name)
        self.count += 1
        self.last = answer

    def must_pause_before(self, broker_name: str) -> bool:
        return broker_name in self._since_pause

    def next_pause_ms(self) -> float:
        self._since_pause.clear()
        return self._backoff.next_delay_ms()
