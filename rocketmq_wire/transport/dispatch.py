"""Routing incoming requests to handlers by request code, the way Java's remoting layer answers them.

Used by both the server (its whole job) and the client (brokers send producers and consumers requests such
as CHECK_TRANSACTION_STATE and NOTIFY_CONSUMER_IDS_CHANGED over the client's own connection).

Behaviour that Java peers rely on, mirrored here:

* an unregistered code is answered REQUEST_CODE_NOT_SUPPORTED, remark ``" request type <code> not supported"``
  (with Java's leading space);
* a handler that raises is answered SYSTEM_ERROR, remark "<exception>, <where it was raised>";
* a oneway request never gets an answer, not even an error;
* a handler returning ``None`` sends nothing: it may answer later with :meth:`Connection.send_response`
  (better: :func:`send_answer`, which keeps the promise below).

Whatever a handler returns, the request is answered or its connection closed, never left silent: an answer
that cannot be encoded (a header value no frame can carry, a bug in a handler) is replaced by SYSTEM_ERROR
with a short remark, as Apache answers an exception in a processor, and if even that cannot be sent the
connection is closed with a logged reason, as Apache's ``NettyEncoder`` closes a channel it cannot write to.

Each request runs in its own task, so a slow handler does not hold up the connection. A handler registered
``eager`` runs without one: the requests that arrive together are queued, then started one after the other
in one callback; one that has to wait on a future is continued by that future's done callback, as a task
would continue it, but without the task and its scheduling (anything else it waits on gets a task). A send
that needs nothing but the event loop (appending to the store) is answered at once, one that waits for an
fsync when the fsync is done, and each still waits its turn in a queue that gates see, as a thread pool's
queue would be seen. A handler may also return a :class:`~rocketmq_wire.transport.deferred.DeferredAnswer`:
its answer is sent whenever that is settled, by whoever holds it, and the request counts as in flight
until then. Code in an eager handler runs outside any task, so it must not use ``asyncio.timeout``
or ``current_task()``. A handler that never
waits (a NameServer's table lookups) may be registered *inline* instead: it is a plain function called as the
request arrives, its answer written at once, which saves the task, its scheduling and its bookkeeping on
every request. While the connection's writes are backed up, an inline request takes the task path, so it
waits for the peer to read as the others do. Handlers registered
with ``ordered=True`` instead run one at a time, in arrival order, per connection (all ordered codes of one
connection share that lane). A connection whose peer keeps more than ``max_in_flight`` requests unfinished
stops being read until it drops back to half that, which bounds the tasks and buffered answers one peer costs.
The same holds for the bytes those requests are counted as (``max_in_flight_bytes``: body plus
:data:`REQUEST_COST`, released on average as they finish), and, for ``max_total_bytes``, summed over every
connection: past that, a connection with a request unfinished is not read until the sum is back below half
(or its own requests are all done), so peers that flood cannot starve the memory of those that do not.

A registration may carry a :class:`RequestGate`: an admission hook for servers that protect themselves under
load (a broker refusing sends with SYSTEM_BUSY, as Apache's does). The time between a request's arrival and
its handler's start is the time it waited for the event loop, i.e. its time in queue; the gate sees both
ends of that wait and may answer instead of the handler at either end. The gate holds the policy (what to
refuse, with which answer); this module only promises when it is asked.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import time
import traceback
import types
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from rocketmq_wire.codes import ResponseCode
from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.transport.connection import Connection
from rocketmq_wire.transport.deferred import DeferredAnswer
from rocketmq_wire.transport.errors import RemotingClosedError

logger = logging.getLogger("rocketmq_wire.transport")

#: What a handler gives back: its answer, ``None`` (nothing to send now), or a promise of the answer.
Outcome = RemotingCommand | DeferredAnswer | None

#: ``async def handler(request, conn) -> response, None or a DeferredAnswer``.
Handler = Callable[[RemotingCommand, Connection], Awaitable[Outcome]]

#: ``def handler(request, conn) -> response or None``, run inline: it must not block.
InlineHandler = Callable[[RemotingCommand, Connection], RemotingCommand | None]

DEFAULT_MAX_IN_FLIGHT = 4096

#: What an unfinished request is counted as beyond its body, in bytes: its command, job and task objects
#: (measured at 1.5-2.5 KiB for a small request with its handler's coroutine).
REQUEST_COST = 2048

#: How long eager jobs may keep the event loop per turn (seconds) once one of them waits. A burst of
#: requests that wait (SYNC_FLUSH sends) is started in slices, so the fsync covering the first ones runs and
#: their answers leave while the rest is appended: the peer works on those answers in parallel instead of
#: waiting for the whole burst. A burst that never waits runs to its end in one turn (its answers are
#: already written; more turns would only cost more loop iterations). Measured on the broker under SYNC_FLUSH,
#: 64 single sends in flight, slices alternated run by run: 0.3 ms ~10,000 msg/s (a round for every few
#: sends), 0.5 ms ~11,300, 1 ms ~10,400, 2-4 ms ~7,500 (the peer waits for whole bursts).
EAGER_TURN_S = 0.0005


class RequestGate(Protocol):
    """Admission control for the requests of the codes it is registered with.

    All three methods are called on the event loop and must not block; ``arrived_at`` is the loop's
    ``time()`` (seconds, monotonic) when the request arrived, the same value in every call about one request.

    * :meth:`on_arrival` is called as the request arrives, before a task exists for it. Returning a response
      refuses the request: that response is the answer (none for a oneway) and the gate hears nothing more
      about it. Returning ``None`` admits it: it is now queued.
    * Every admitted request then gets exactly one of :meth:`on_start` (its turn has come: return a response
      to answer with that instead of running the handler, ``None`` to run the handler) or :meth:`on_cancel`
      (it will never start: the dispatcher closed before its turn), so a gate can count what is queued.
    """

    def on_arrival(
        self, request: RemotingCommand, conn: Connection, arrived_at: float
    ) -> RemotingCommand | None: ...

    def on_start(
        self, request: RemotingCommand, conn: Connection, arrived_at: float
    ) -> RemotingCommand | None: ...

    def on_cancel(self, request: RemotingCommand, conn: Connection, arrived_at: float) -> None: ...


@dataclass(frozen=True, slots=True)
class _Registration:
    handler: Handler
    ordered: bool
    gate: RequestGate | None = None
    #: The plain function of an inline registration (``handler`` then wraps it for the task path).
    inline: InlineHandler | None = None
    #: Started in the dispatcher's drain callback, given a task only once it has to wait.
    eager: bool = False


@dataclass(slots=True, eq=False)
class _Job:
    """One admitted request on its way to its handler: everything its answer and its bookkeeping need.

    ``started`` once the gate has been told so. An eager job that has to wait keeps its suspended handler
    in ``coro`` (the dispatcher's ``_parked`` table says what it waits on).
    """

    registration: _Registration
    request: RemotingCommand
    arrived_at: float
    conn: Connection
    peer: _PeerState
    started: bool = False
    #: For an eager job that had to wait: its task has resumed the handler (it owns the rest).
    resumed: bool = False
    coro: Coroutine[Any, Any, Outcome] | None = None


@dataclass(slots=True)
class _PeerState:
    """Per-connection bookkeeping: unfinished requests, and the ordered lane when one is in use."""

    in_flight: int = 0
    #: What the unfinished requests are counted as (see ``REQUEST_COST``).
    in_bytes: int = 0
    paused: bool = False
    lane: deque[_Job] = field(default_factory=deque)
    lane_task: asyncio.Task[None] | None = None


def describe_exception(exc: BaseException) -> str:
    """The remark Java puts in a SYSTEM_ERROR answer: the exception text, then its innermost frame."""
    name = type(exc).__name__
    message = str(exc)
    text = f"{name}: {message}" if message else name
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        last = frames[-1]
        text += f", {last.name}({os.path.basename(last.filename)}:{last.lineno})"
    return text


class RequestDispatcher:
    """The request callback of a set of connections: looks up the handler and runs it in a task."""

    def __init__(
        self,
        handlers: Mapping[int, Handler] | None = None,
        *,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        max_in_flight_bytes: int = 0,
        max_total_bytes: int = 0,
    ) -> None:
        if max_in_flight < 2:
            raise ValueError("max_in_flight must be at least 2")
        self._handlers: dict[int, _Registration] = {}
        self._default: _Registration | None = None
        self._max_in_flight = max_in_flight
        # Byte bounds (0: none): per connection, and over all of them; ``_total`` is that sum.
        self._max_bytes = max(0, max_in_flight_bytes)
        self._max_total = max(0, max_total_bytes)
        self._total = 0
        self._over_total = False
        #: How often the requests of all connections passed ``max_total_bytes`` (see the server's sweep).
        self.times_over = 0
        self._peers: dict[Connection, _PeerState] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._closed = False
        # Eager jobs arrived but not started yet, and the callback that will start them.
        self._eager: deque[_Job] = deque()
        self._drain: asyncio.Handle | None = None
        # Eager jobs waiting without a task: what each waits on (a future, or the handle of a bare yield).
        self._parked: dict[_Job, asyncio.Future[Any] | asyncio.Handle] = {}
        for code, handler in (handlers or {}).items():
            self.register(code, handler)

    def register(
        self,
        code: int,
        handler: Handler,
        *,
        ordered: bool = False,
        gate: RequestGate | None = None,
        eager: bool = False,
    ) -> None:
        """Route ``code`` to ``handler``, replacing any earlier registration for it; ``gate`` admits (or
        refuses) each request of that code on arrival and again when its handler is about to start;
        ``eager`` starts the handler without a task, giving it one only if it has to wait."""
        if ordered and eager:
            raise ValueError("an ordered registration cannot be eager")
        self._handlers[int(code)] = _Registration(handler, ordered, gate, None, eager)

    def register_inline(self, code: int, handler: InlineHandler) -> None:
        """Route ``code`` to a handler that answers without waiting, run as the request arrives."""

        async def as_task(request: RemotingCommand, conn: Connection) -> RemotingCommand | None:
            return handler(request, conn)

        self._handlers[int(code)] = _Registration(as_task, False, None, handler)

    def unregister(self, code: int) -> None:
        """Stop serving ``code``: it is answered REQUEST_CODE_NOT_SUPPORTED again (a client whose last
        producer or consumer that served it has left)."""
        self._handlers.pop(int(code), None)

    def register_default(self, handler: Handler | None, *, ordered: bool = False) -> None:
        """Handle every unregistered code (Java's default processor); ``None`` restores NOT_SUPPORTED."""
        self._default = None if handler is None else _Registration(handler, ordered)

    def handles(self, code: int) -> bool:
        return int(code) in self._handlers or self._default is not None

    @property
    def active_tasks(self) -> int:
        return len(self._tasks)

    @property
    def over_total(self) -> bool:
        """True while the requests of all connections are past ``max_total_bytes``."""
        return self._over_total

    @property
    def in_flight_bytes(self) -> int:
        """What the unfinished requests of every connection are counted as, summed."""
        return self._total

    def __call__(self, request: RemotingCommand, conn: Connection) -> None:
        if self._closed:
            return
        registration = self._handlers.get(request.code, self._default)
        if registration is None:
            self._reject_unsupported(request, conn)
            return
        inline = registration.inline
        if inline is not None and not conn.writing_paused:
            self._run_inline(inline, request, conn)
            return
        arrived_at = 0.0
        gate = registration.gate
        if gate is not None:
            arrived_at = asyncio.get_running_loop().time()
            if not self._admit(gate, request, conn, arrived_at):
                return
        peer = self._peers.get(conn)
        if peer is None:
            peer = self._peers[conn] = _PeerState()
            conn.add_close_callback(self._forget)
        peer.in_flight += 1
        size = len(request.body) + REQUEST_COST
        peer.in_bytes += size
        self._total += size
        if self._total >= self._max_total > 0 and not self._over_total:
            self._over_total = True
            self.times_over += 1
            logger.warning(
                "%d bytes of requests unfinished (bound %d): no connection with one unfinished is read",
                self._total,
                self._max_total,
            )
        if not peer.paused and (
            peer.in_flight >= self._max_in_flight
            or peer.in_bytes >= self._max_bytes > 0
            or (self._over_total and peer.in_flight > 1)
        ):
            peer.paused = True
            logger.debug(
                "%s has %d requests (%d bytes) in flight: pausing reads",
                conn.remote_address,
                peer.in_flight,
                peer.in_bytes,
            )
            conn.pause_reading()
        job = _Job(registration, request, arrived_at, conn, peer)
        if registration.ordered:
            peer.lane.append(job)
            if peer.lane_task is None:
                task = peer.lane_task = self._spawn(self._drain_lane(conn, peer))
                task.add_done_callback(lambda done: self._lane_never_ran(done, conn, peer))
        elif registration.eager:
            self._eager.append(job)
            if self._drain is None:
                self._drain = asyncio.get_running_loop().call_soon(self._start_eager_jobs)
        else:
            self._run_in_task(job)

    async def close(self) -> None:
        """Stop taking requests and cancel the handlers still running; returns once they have all ended."""
        self._closed = True
        if self._drain is not None:
            self._drain.cancel()
            self._drain = None
        while self._eager:
            job = self._eager.popleft()
            self._abandon(job)
            self._finished(job.conn, job.peer)
        self._end_parked()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)

    # -- internals -------------------------------------------------------------------------------------

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _forget(self, conn: Connection) -> None:
        self._peers.pop(conn, None)

    def _finished(self, conn: Connection, peer: _PeerState) -> None:
        # Sizes are not kept per request: each finishing one releases the average, so the count is exact
        # when the peer's requests are alike and comes back to 0 with its last one whatever they are.
        share = peer.in_bytes // peer.in_flight
        peer.in_bytes -= share
        self._total -= share
        peer.in_flight -= 1
        if self._over_total and self._total < self._max_total // 2:
            self._over_total = False
            logger.info("requests unfinished down to %d bytes: reading from every connection", self._total)
            for other_conn, other in list(self._peers.items()):
                if other.paused and other is not peer:
                    self._maybe_resume(other_conn, other)
        if peer.paused:
            self._maybe_resume(conn, peer)

    def _maybe_resume(self, conn: Connection, peer: _PeerState) -> None:
        """Read ``conn`` again once it is down to half of each of its bounds (and, while the total is past
        its own, once it has nothing unfinished)."""
        if peer.in_flight > self._max_in_flight // 2 or peer.in_bytes > self._max_bytes // 2 > 0:
            return
        if self._over_total and peer.in_flight:
            return
        peer.paused = False
        logger.debug("%s down to %d requests in flight: resuming reads", conn.remote_address, peer.in_flight)
        conn.resume_reading()

    def _admit(
        self, gate: RequestGate, request: RemotingCommand, conn: Connection, arrived_at: float
    ) -> bool:
        """Ask the gate on arrival; answer its refusal at once. True if the request may be queued."""
        try:
            refusal = gate.on_arrival(request, conn, arrived_at)
        except Exception as exc:
            logger.exception("request gate for code %d failed on arrival", request.code)
            refusal = request.make_response(ResponseCode.SYSTEM_ERROR, remark=describe_exception(exc))
        if refusal is None:
            return True
        send_answer_now(request, refusal, conn)
        return False

    # A task cancelled before its first step never runs its coroutine, ``finally`` clauses included (the
    # server closing with requests still queued): these done callbacks settle such tasks' jobs instead.

    def _job_never_ran(self, job: _Job) -> None:
        if not job.started:
            self._abandon(job)
            self._finished(job.conn, job.peer)

    def _lane_never_ran(self, task: asyncio.Task[None], conn: Connection, peer: _PeerState) -> None:
        if peer.lane_task is task:
            peer.lane_task = None
            self._abandon_lane(conn, peer)

    def _abandon_lane(self, conn: Connection, peer: _PeerState) -> None:
        while peer.lane:
            self._abandon(peer.lane.popleft())
            self._finished(conn, peer)

    def _abandon(self, job: _Job) -> None:
        job.started = True  # the gate hears about each job once
        gate = job.registration.gate
        if gate is None:
            return
        try:
            gate.on_cancel(job.request, job.conn, job.arrived_at)
        except Exception:
            logger.exception("request gate for code %d failed on cancel", job.request.code)

    def _run_in_task(self, job: _Job) -> None:
        task = self._spawn(self._handle_one(job))
        task.add_done_callback(lambda _done: self._job_never_ran(job))

    async def _handle_one(self, job: _Job) -> None:
        try:
            await self._run(job)
        finally:
            self._finished(job.conn, job.peer)

    async def _drain_lane(self, conn: Connection, peer: _PeerState) -> None:
        try:
            while peer.lane:
                job = peer.lane.popleft()
                try:
                    await self._run(job)
                finally:
                    self._finished(conn, peer)
        finally:
            peer.lane_task = None
            self._abandon_lane(conn, peer)  # only left over when cancelled

    @staticmethod
    def _start(job: _Job) -> RemotingCommand | None:
        """The job's turn has come: the gate's answer instead of the handler's, if it has one."""
        job.started = True
        gate = job.registration.gate
        return None if gate is None else gate.on_start(job.request, job.conn, job.arrived_at)

    async def _run(self, job: _Job) -> None:
        request = job.request
        conn = job.conn
        response: RemotingCommand | None = None
        try:
            response = self._start(job)
            if response is None:
                response = await _settled(await job.registration.handler(request, conn))
        except Exception as exc:
            response = _failure_answer(request, conn, exc)
        await send_answer(request, response, conn)

    @staticmethod
    def _run_inline(handler: InlineHandler, request: RemotingCommand, conn: Connection) -> None:
        try:
            response = handler(request, conn)
        except Exception as exc:
            response = _failure_answer(request, conn, exc)
        send_answer_now(request, response, conn)

    # -- eager jobs: started in one callback, continued by what they wait on -----------------------------

    def _start_eager_jobs(self) -> None:
        self._drain = None
        queue = self._eager
        turn_ends = time.monotonic() + EAGER_TURN_S
        waiting = False
        while queue and not self._closed:
            waiting = self._start_eager(queue.popleft()) or waiting
            if waiting and time.monotonic() >= turn_ends:
                break
        if queue and not self._closed:
            # Let the loop write these answers, read, and hear from the disk before the next ones.
            self._drain = asyncio.get_running_loop().call_soon(self._start_eager_jobs)

    def _start_eager(self, job: _Job) -> bool:
        """Start one job; True if it has to wait (it goes on once what it waits on is done)."""
        if job.conn.writing_paused:  # its answer would have to wait for the peer: the task path waits
            self._run_in_task(job)
            return True
        response: Outcome = None
        try:
            response = self._start(job)
            if response is None:
                started = job.registration.handler(job.request, job.conn)
                coro = started if type(started) is types.CoroutineType else _awaiting(started)
                try:
                    waiting_on = coro.send(None)
                except StopIteration as stop:
                    response = stop.value
                else:
                    job.coro = coro
                    self._wait_for(job, waiting_on)
                    return True
        except Exception as exc:
            response = _failure_answer(job.request, job.conn, exc)
        return self._conclude(job, response)

    def _conclude(self, job: _Job, response: Outcome) -> bool:
        """A handler run outside any task has returned: send its answer, or have its promise send it.
        True while the answer is still to come."""
        if isinstance(response, DeferredAnswer):
            response.deliver_to(functools.partial(self._deliver, job))
            return True
        self._deliver(job, response, None)
        return False

    def _deliver(self, job: _Job, response: RemotingCommand | None, exc: Exception | None) -> None:
        """Send a job's answer (or the failure answer for ``exc``): its handler returned it, or settled
        the answer it promised."""
        try:
            if exc is not None:
                response = _failure_answer(job.request, job.conn, exc)
            # Written at once even while the peer reads slowly: it is one of the answers max_in_flight bounds.
            send_answer_now(job.request, response, job.conn)
        finally:
            self._finished(job.conn, job.peer)

    def _wait_for(self, job: _Job, waiting_on: Any) -> None:
        """Continue a suspended handler once what it waits on is done: by a callback when that is a future of
        this loop (or a bare yield), as a task would but without one; in a task for anything else."""
        loop = asyncio.get_running_loop()
        if waiting_on is None:  # a bare yield (``asyncio.sleep(0)``): run again on the next turn
            self._parked[job] = loop.call_soon(self._wake, job, None)
            return
        if getattr(waiting_on, "_asyncio_future_blocking", False) and waiting_on.get_loop() is loop:
            waiting_on._asyncio_future_blocking = False  # as a task does when it takes the future over
            waiting_on.add_done_callback(functools.partial(self._wake, job))
            self._parked[job] = waiting_on
            return
        self._continue_in_task(job, waiting_on)

    def _continue_in_task(self, job: _Job, waiting_on: Any) -> None:
        task = self._spawn(self._resume(job, waiting_on))
        task.add_done_callback(lambda _done: self._never_resumed(job))

    def _wake(self, job: _Job, _done: object) -> None:
        if self._parked.pop(job, None) is None:
            return  # the dispatcher closed and ended it already
        coro = job.coro
        assert coro is not None
        response: Outcome = None
        try:
            waiting_on = coro.send(None)  # the awaited future's result (or exception) reaches it here
        except StopIteration as stop:
            response = stop.value
        except Exception as exc:
            response = _failure_answer(job.request, job.conn, exc)
        except asyncio.CancelledError:
            logger.debug("handler for request code %d was cancelled", job.request.code)
            self._finished(job.conn, job.peer)
            return
        else:
            self._wait_for(job, waiting_on)
            return
        self._conclude(job, response)

    def _end_parked(self) -> None:
        """Closing: a cancellation for every handler waiting without a task, thrown where it waits."""
        while self._parked:
            job, waiting_on = self._parked.popitem()
            waiting_on.cancel()  # a future nobody else awaits, or the handle of a bare yield
            assert job.coro is not None
            try:
                waiting_on = job.coro.throw(asyncio.CancelledError())
            except (Exception, asyncio.CancelledError):  # it ended: however it did, nobody is left to answer
                self._finished(job.conn, job.peer)
            else:  # it caught the cancellation and waits again: a task sees it through
                self._continue_in_task(job, waiting_on)

    async def _resume(self, job: _Job, waiting_on: Any) -> None:
        job.resumed = True
        assert job.coro is not None
        try:
            try:
                response = await _settled(await _Suspended(job.coro, waiting_on))
            except Exception as exc:
                response = _failure_answer(job.request, job.conn, exc)
            await send_answer(job.request, response, job.conn)
        finally:
            self._finished(job.conn, job.peer)

    def _never_resumed(self, job: _Job) -> None:
        # Its task was cancelled before its first step (the dispatcher closing): end the handler where it
        # waits, so its ``finally`` clauses run now rather than whenever it is collected.
        if not job.resumed:
            assert job.coro is not None
            job.coro.close()
            self._finished(job.conn, job.peer)

    def _reject_unsupported(self, request: RemotingCommand, conn: Connection) -> None:
        remark = f" request type {request.code} not supported"
        logger.error("%s%s", conn.remote_address, remark)
        if request.is_oneway:
            return
        send_answer_now(request, request.make_response(ResponseCode.REQUEST_CODE_NOT_SUPPORTED, remark), conn)


class _Suspended:
    """A handler coroutine that ran outside any task until it had to wait on ``waiting_on``.

    Awaiting this in a task continues the coroutine there, as if the task had run it from the start: the
    task first waits on what the coroutine was waiting on, then resumes it, passing in whatever it is
    sent or thrown (a cancellation reaches the handler where it stopped).
    """

    __slots__ = ("_coro", "_waiting_on")

    def __init__(self, coro: Coroutine[Any, Any, Outcome], waiting_on: Any) -> None:
        self._coro = coro
        self._waiting_on = waiting_on

    def __await__(self) -> Generator[Any, Any, Outcome]:
        try:
            yield self._waiting_on
        except BaseException as exc:
            try:
                waiting_on = self._coro.throw(exc)
            except StopIteration as stop:
                result: Outcome = stop.value
                return result
            return (yield from _Suspended(self._coro, waiting_on).__await__())
        return (yield from self._coro.__await__())


async def _awaiting(awaitable: Awaitable[Outcome]) -> Outcome:
    return await awaitable


async def _settled(response: Outcome) -> RemotingCommand | None:
    """The answer itself, waiting for it when the handler promised it (the task path)."""
    if isinstance(response, DeferredAnswer):
        return await response
    return response


async def send_answer(request: RemotingCommand, response: RemotingCommand | None, conn: Connection) -> None:
    """Send ``response`` as the answer to ``request`` (none to a oneway), waiting while the connection's
    writes are backed up; for a handler that answers after it returned (a held pull).

    Never raises: an answer that cannot be encoded becomes SYSTEM_ERROR, and a connection that cannot carry
    even that is closed; a closed connection is logged at debug level.
    """
    try:
        answer = _addressed(request, response, conn)
        if answer is None:
            return
        await conn.send_response(answer)
    except RemotingClosedError as exc:
        _undeliverable(request, exc)
    except Exception as exc:
        _answer_unsendable(request, response, conn, exc)


def send_answer_now(request: RemotingCommand, response: RemotingCommand | None, conn: Connection) -> None:
    """:func:`send_answer` written at once, whatever the connection's backlog."""
    try:
        answer = _addressed(request, response, conn)
        if answer is None:
            return
        conn.send_response_nowait(answer)
    except RemotingClosedError as exc:
        _undeliverable(request, exc)
    except Exception as exc:
        _answer_unsendable(request, response, conn, exc)


#: The longest remark of the SYSTEM_ERROR that replaces an answer that cannot be sent.
_UNSENDABLE_REMARK_LIMIT = 200


def _answer_unsendable(request: RemotingCommand, answer: object, conn: Connection, exc: Exception) -> None:
    """``answer`` could not be encoded (nothing of it was written): answer SYSTEM_ERROR instead, and close
    the connection if even that cannot go out, so that the peer is never left waiting in silence."""
    logger.error(
        "answer %s to request code %d (opaque %d) from %s cannot be sent",
        getattr(answer, "code", type(answer).__name__),
        request.code,
        request.opaque,
        conn.remote_address,
        exc_info=exc,
    )
    if request.is_oneway:
        return
    # ASCII only, short: it must go out whatever made the first answer fail
    remark = ascii(f"answer could not be encoded: {type(exc).__name__}: {exc}")[1:-1]
    fallback = request.make_response(ResponseCode.SYSTEM_ERROR, remark=remark[:_UNSENDABLE_REMARK_LIMIT])
    try:
        conn.send_response_nowait(fallback)
    except RemotingClosedError as closed:
        _undeliverable(request, closed)
    except Exception as again:
        reason = f"cannot answer request code {request.code} (opaque {request.opaque}): {again}"
        logger.error("closing connection from %s: %s", conn.remote_address, reason, exc_info=again)
        conn.close(reason)


def _failure_answer(request: RemotingCommand, conn: Connection, exc: Exception) -> RemotingCommand | None:
    """Log a handler's exception; Java's SYSTEM_ERROR answer for it (none for a oneway)."""
    logger.exception(
        "handler for request code %d (opaque %d) from %s failed",
        request.code,
        request.opaque,
        conn.remote_address,
        exc_info=exc,
    )
    if request.is_oneway:
        return None
    return request.make_response(ResponseCode.SYSTEM_ERROR, remark=describe_exception(exc))


def _addressed(
    request: RemotingCommand, response: RemotingCommand | None, conn: Connection
) -> RemotingCommand | None:
    """``response`` with the request's opaque and serialize type, or None when nothing is to be sent."""
    if response is None:
        return None
    if request.is_oneway:
        logger.debug(
            "dropping the answer to oneway request code %d from %s", request.code, conn.remote_address
        )
        return None
    response.opaque = request.opaque
    response.serialize_type = request.serialize_type
    return response


def _undeliverable(request: RemotingCommand, exc: RemotingClosedError) -> None:
    logger.debug("cannot answer request code %d (opaque %d): %s", request.code, request.opaque, exc.reason)
