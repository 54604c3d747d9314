"""Refusing sends with SYSTEM_BUSY before anything is stored, the way Apache's broker protects itself.

An Apache broker hands send requests (SEND_MESSAGE, SEND_MESSAGE_V2, SEND_BATCH_MESSAGE,
CONSUMER_SEND_MSG_BACK) to a thread pool with a bounded queue. It refuses a send when:

* the store's page cache is busy as the request arrives (the send processor's ``rejectRequest``):
  ``[REJECTREQUEST]...``;
* the send queue is full (``sendThreadPoolQueueCapacity``): ``[OVERLOAD]...``;
* with ``brokerFastFailureEnable``, its ``BrokerFastFailure`` cleaner (every 10 ms) answers whatever is
  queued while the page cache is busy (``[PCBUSY_CLEAN_QUEUE]...``) and any send that has waited at least
  ``waitTimeMillsInSendQueue`` ms (``[TIMEOUT_CLEAN_QUEUE]...``). A refused send is never processed.

Producers treat SYSTEM_BUSY as "try another broker" (and retry), so answering early under load beats
answering late or timing out. Here the event loop is the thread pool: the time between the dispatcher
receiving a request and its handler starting is its time in queue, and :class:`SendFlowControl` is the
:class:`~rocketmq_wire.transport.RequestGate` that sees both ends of that wait. Apache's cleaner would answer
a queued request at the first of its 10 ms rounds that finds it waiting too long; this gate answers it at
the end of the wait, instead of processing it, when such a round fell within the wait
(:func:`cleaner_saw_it_late`), which is the same answer to the client.

As in Apache, only the cleaner's refusals depend on ``brokerFastFailureEnable``; a busy page cache on
arrival and a full queue are refused whatever that flag says.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter, OrderedDict
from collections.abc import Callable
from typing import Protocol

from broker.config import BrokerConfig
from rocketmq_wire import RemotingCommand, RequestCode, ResponseCode
from rocketmq_wire.transport import Connection

log = logging.getLogger("broker.flow_control")

#: The requests Apache runs on its send executor, so the ones this gate watches.
SEND_REQUEST_CODES: tuple[int, ...] = (
    RequestCode.SEND_MESSAGE,
    RequestCode.SEND_MESSAGE_V2,
    RequestCode.SEND_BATCH_MESSAGE,
    RequestCode.CONSUMER_SEND_MSG_BACK,
)

REJECT_REQUEST = "REJECTREQUEST"
OVERLOAD = "OVERLOAD"
PCBUSY_CLEAN_QUEUE = "PCBUSY_CLEAN_QUEUE"
TIMEOUT_CLEAN_QUEUE = "TIMEOUT_CLEAN_QUEUE"

#: How often (ms of loop time) refusals are summarised at WARNING; each one is logged at DEBUG.
_WARN_EVERY_MS = 10_000


def system_busy_remark(reason: str) -> str:
    """Apache's remark for a send refused on arrival (REJECTREQUEST, OVERLOAD)."""
    return f"[{reason}]system busy, start flow control for a while"


#: Apache's BrokerFastFailure cleaner looks at the send queue once every this many milliseconds.
CLEANER_PERIOD_MS = 10


def ms_in_queue(arrived_at: float, now: float) -> int:
    """How long a send has waited, read the way Apache reads it: the difference of two millisecond clocks.

    Apache subtracts ``System.currentTimeMillis()`` readings, so a send that arrived at 9.99 ms and was
    looked at 10.00 ms has waited 1 ms, not 0.01 ms. Refusal and remark both use this reading: a remark
    saying a send waited 0 ms over a limit of 1 ms would contradict itself.
    """
    return int(now * 1000) - int(arrived_at * 1000)


def cleaner_saw_it_late(arrived_at: float, started_at: float, wait_limit_ms: int) -> bool:
    """Whether Apache's cleaner would have refused a send queued from ``arrived_at`` to ``started_at``.

    The cleaner runs in rounds every :data:`CLEANER_PERIOD_MS` and refuses what has waited at least
    ``waitTimeMillsInSendQueue`` (at least 1 ms: a send started within the millisecond it arrived was
    never seen queued) at that moment. A send is therefore refused only if a round fell between the moment
    it had waited that long and the moment it started; one that waited longer but started before the
    next round went through on Apache's broker, and goes through here (counting every long wait as
    refused turned away sends Apache's broker would have stored).
    """
    now_ms = int(started_at * 1000)
    last_round_ms = now_ms - now_ms % CLEANER_PERIOD_MS
    return last_round_ms - int(arrived_at * 1000) >= max(wait_limit_ms, 1)


def cleaned_remark(reason: str, waited_ms: int, queued: int) -> str:
    """Apache's remark for a queued send the cleaner answered (PCBUSY_CLEAN_QUEUE, TIMEOUT_CLEAN_QUEUE)."""
    return (
        f"[{reason}]broker busy, start flow control for a while, "
        f"period in queue: {waited_ms}ms, size of queue: {queued}"
    )


class PageCacheProbe(Protocol):
    """What the gate asks the store (:class:`~broker.store.MessageStore` provides it)."""

    def is_os_page_cache_busy(self) -> bool: ...

    def was_os_page_cache_busy_within(self, window_ms: float) -> bool: ...


def _loop_time() -> float:
    return asyncio.get_running_loop().time()


class SendFlowControl:
    """The send queue's admission policy: one instance shared by every send code and connection.

    Settings are read from ``config`` on every request, so UPDATE_BROKER_CONFIG takes effect at once.
    ``now`` is the clock ``arrived_at`` comes from (the event loop's, seconds); tests may hand in another.
    """

    def __init__(
        self, config: BrokerConfig, store: PageCacheProbe, *, now: Callable[[], float] = _loop_time
    ) -> None:
        self._config = config
        self._store = store
        self._now = now
        # Arrival time -> how many queued requests arrived then; insertion order is arrival order, so the
        # first key is the oldest request still queued.
        self._arrivals: OrderedDict[float, int] = OrderedDict()
        self._queued = 0
        #: Refusals so far by Apache's tag: REJECTREQUEST, OVERLOAD, PCBUSY_CLEAN_QUEUE, TIMEOUT_CLEAN_QUEUE.
        self.refused: Counter[str] = Counter()
        self._refused_at_last_warning = 0
        self._last_warning_at: float | None = None

    @property
    def queued(self) -> int:
        """Sends admitted whose handler has not started yet (``sendThreadPoolQueueSize``)."""
        return self._queued

    def head_wait_ms(self) -> int:
        """How long the oldest queued send has waited (``sendThreadPoolQueueHeadWaitTimeMills``)."""
        if not self._arrivals:
            return 0
        oldest = next(iter(self._arrivals))
        return max(0, int((self._now() - oldest) * 1000))

    # -- RequestGate ---------------------------------------------------------------------------------------

    def on_arrival(
        self, request: RemotingCommand, conn: Connection, arrived_at: float
    ) -> RemotingCommand | None:
        if self._store.is_os_page_cache_busy():
            return self._refuse(request, conn, REJECT_REQUEST, system_busy_remark(REJECT_REQUEST))
        if self._queued >= self._config.send_thread_pool_queue_capacity:
            return self._refuse(request, conn, OVERLOAD, system_busy_remark(OVERLOAD))
        self._queued += 1
        self._arrivals[arrived_at] = self._arrivals.get(arrived_at, 0) + 1
        return None

    def on_start(
        self, request: RemotingCommand, conn: Connection, arrived_at: float
    ) -> RemotingCommand | None:
        self._dequeue(arrived_at)
        config = self._config
        if not config.broker_fast_failure_enable:
            return None
        now = self._now()
        if self._store.was_os_page_cache_busy_within(max(0.0, (now - arrived_at) * 1000)):
            remark = cleaned_remark(PCBUSY_CLEAN_QUEUE, ms_in_queue(arrived_at, now), self._queued)
            return self._refuse(request, conn, PCBUSY_CLEAN_QUEUE, remark)
        if cleaner_saw_it_late(arrived_at, now, config.wait_time_mills_in_send_queue):
            remark = cleaned_remark(TIMEOUT_CLEAN_QUEUE, ms_in_queue(arrived_at, now), self._queued)
            return self._refuse(request, conn, TIMEOUT_CLEAN_QUEUE, remark)
        return None

    def on_cancel(self, request: RemotingCommand, conn: Connection, arrived_at: float) -> None:
        self._dequeue(arrived_at)

    # -- internals -----------------------------------------------------------------------------------------

    def _dequeue(self, arrived_at: float) -> None:
        self._queued = max(0, self._queued - 1)
        left = self._arrivals.get(arrived_at, 0) - 1
        if left > 0:
            self._arrivals[arrived_at] = left
        else:
            self._arrivals.pop(arrived_at, None)

    def _refuse(
        self, request: RemotingCommand, conn: Connection, reason: str, remark: str
    ) -> RemotingCommand:
        self.refused[reason] += 1
        log.debug("refusing request code %d from %s: %s", request.code, conn.remote_address, remark)
        self._maybe_warn()
        return request.make_response(ResponseCode.SYSTEM_BUSY, remark)

    def _maybe_warn(self) -> None:
        now = self._now()
        if self._last_warning_at is not None and (now - self._last_warning_at) * 1000 < _WARN_EVERY_MS:
            return
        total = sum(self.refused.values())
        log.warning(
            "flow control: refused %d send(s) with SYSTEM_BUSY since the last report (%s in all); %d queued",
            total - self._refused_at_last_warning,
            ", ".join(f"{reason} {count}" for reason, count in sorted(self.refused.items())),
            self._queued,
        )
        self._last_warning_at = now
        self._refused_at_last_warning = total
