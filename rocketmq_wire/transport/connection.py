"""One TCP connection carrying remoting commands in both directions.

Both ends of the protocol are symmetrical at this level: either side may send requests (a broker asks a
producer to check a transaction) and either side answers. So the same :class:`Connection` serves the client
and the server; what differs is who creates it and which request callback it feeds.

Design points, all for throughput with many requests in flight:

* bytes are split into commands in ``data_received`` by a :class:`FrameDecoder`, with no stream reader task;
* waiters are plain futures in a dict keyed by opaque; a timeout is one ``call_later`` handle, no extra task;
* the first frame of an event-loop turn is written at once; those that follow in the same turn are
  coalesced into one ``writelines`` call, so a burst of responses costs two system calls, not one each;
* writers only await when the transport has paused writing (its buffer passed the high-water mark).

A server must not be harmed by a peer that sends and never reads, so what a connection holds is bounded
(``max_buffered``, and a :class:`BufferBudget` shared by a server's connections): past the bound, the
connection stops *reading* (the peer's requests stay in its own socket) instead of growing memory, and reads
again once what it holds has drained below half the bound. What it holds is measured only while the peer
falls behind (the transport has paused writing), so a connection whose peer keeps up pays nothing for it.
Whoever stops reading (a bound, the dispatcher's in-flight limit) holds a bit of ``_read_holds``; the socket
is read again when none is left. Frames already read when a hold starts wait in the decoder, as the bytes
they arrived as, until it ends.

Activity (a read, or a turn's first write) is noted with a flag, not a clock, so that the server's idle sweep
(``serverChannelMaxIdleTimeSeconds``) costs one attribute write per read and per turn of writes.

Any decoding error leaves the stream without frame boundaries, so the connection is dropped at once, with a
log line giving the reason, and every waiter fails with :class:`RemotingClosedError`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import cast

from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.framing import MAX_FRAME_SIZE, FrameDecoder
from rocketmq_wire.transport.address import format_address
from rocketmq_wire.transport.errors import RemotingClosedError, RemotingTimeoutError
from rocketmq_wire.transport.opaque import OpaqueCounter

logger = logging.getLogger("rocketmq_wire.transport")

#: Called, in the event loop, for each incoming request; must not block. See ``RequestDispatcher``.
RequestCallback = Callable[[RemotingCommand, "Connection"], None]
#: Called once when the connection is established or once when it is gone.
ConnectionCallback = Callable[["Connection"], None]

# Transport write-buffer marks: large enough that a few big message bodies don't pause every writer.
_WRITE_HIGH_WATER = 1024 * 1024
_WRITE_LOW_WATER = 256 * 1024
# Coalesced frames are handed over at once past this size, so the transport can apply backpressure mid-turn.
_FLUSH_AT = 256 * 1024

_OPEN, _CLOSING, _CLOSED = 0, 1, 2

# Why the socket is not being read (bits of ``Connection._read_holds``); it is read again once none is set.
_HOLD_CALLER = 1  # pause_reading(): the dispatcher's in-flight bound
_HOLD_OWN = 2  # this connection's unsent bytes passed its bound
_HOLD_SERVER = 4  # the server's total passed its bound, and this connection has answers waiting


class BufferBudget:
    """The bytes a set of connections (one server's) hold for their peers, and a bound on their sum.

    Why: each connection's own bound (``max_buffered``) caps what one peer that never reads can cost, but a
    thousand such peers would still cost a thousand bounds. Past ``limit``, every connection that has
    answers waiting for its peer stops being read, until the sum is back below half the limit; a connection
    whose peer catches up (nothing of it waits any more) is read again at once, so healthy peers are served
    throughout. Bytes of requests not yet whole count towards the sum, but never stop a connection: a frame
    whose reading stopped half-way could never complete (the idle timeout closes peers that stall there).

    A connection's unsent bytes are only counted once its transport passes its high-water mark (up to
    1 MiB), so while the sum is past the limit every connection's transport is given a high-water mark of 0:
    a peer that is behind by anything at all then counts, and is not read, at once. Connections report to
    the budget only on their slow paths (see :class:`Connection`), never per frame.
    """

    __slots__ = ("_backed_up", "_held", "_members", "limit", "low", "over", "times_over", "total")

    def __init__(self, limit: int) -> None:
        #: The bound in bytes; 0 or less: none (the sum is still kept, for figures).
        self.limit = limit
        self.low = limit // 2
        #: What the connections hold, as they last measured it.
        self.total = 0
        self.over = False
        #: How often the sum passed the limit (the server returns freed memory to the system after).
        self.times_over = 0
        self._members: set[Connection] = set()  # the open connections
        self._backed_up: set[Connection] = set()  # connections with answers waiting for their peers
        self._held: set[Connection] = set()  # those not read because of this budget

    def _update(self, conn: Connection, delta: int, waiting: int) -> None:
        """``conn`` now holds ``delta`` bytes more than it last reported, ``waiting`` of them unsent."""
        self.total += delta
        if waiting:
            self._backed_up.add(conn)
        else:
            self._backed_up.discard(conn)
        if self.limit <= 0:
            return
        if not self.over:
            if self.total >= self.limit:
                self.over = True
                self.times_over += 1
                logger.warning(
                    "connections hold %d bytes for their peers (bound %d): not reading from the %d whose "
                    "answers wait to be read",
                    self.total,
                    self.limit,
                    len(self._backed_up),
                )
                for backed_up in list(self._backed_up):
                    self._hold(backed_up)
                for member in list(self._members):
                    member._tighten(True)  # may report back (pause_writing): they are held then
            return
        if self.total < self.low:
            self.over = False
            logger.info("connections hold %d bytes for their peers again: reading from all", self.total)
            for member in list(self._members):
                member._tighten(False)
            held, self._held = self._held, set()
            for each in held:
                each._release(_HOLD_SERVER)
        elif waiting:
            self._hold(conn)
        elif conn in self._held:  # its peer has read everything: it may send more
            self._held.discard(conn)
            conn._release(_HOLD_SERVER)

    def _hold(self, conn: Connection) -> None:
        if conn not in self._held:
            self._held.add(conn)
            conn._hold(_HOLD_SERVER)

    def _join(self, conn: Connection) -> None:
        self._members.add(conn)
        if self.over:
            conn._tighten(True)

    def _leave(self, conn: Connection, accounted: int) -> None:
        """``conn`` is gone: nothing of it counts any more."""
        self._members.discard(conn)
        self._held.discard(conn)
        self._update(conn, -accounted, 0)


class _ConnectionProtocol(asyncio.Protocol):
    """asyncio's callback face of a :class:`Connection`, kept separate so the public class stays small."""

    __slots__ = ("connection",)

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport, though not always an ``asyncio.Transport`` subclass (uvloop's is not one).
        self.connection._attach(cast(asyncio.Transport, transport))

    def data_received(self, data: bytes) -> None:
        self.connection._on_data(data)

    def eof_received(self) -> bool | None:
        return False  # half-closed streams are no use to a request/response protocol: close

    def connection_lost(self, exc: Exception | None) -> None:
        self.connection._detach(exc)

    def pause_writing(self) -> None:
        self.connection._writes_backed_up()

    def resume_writing(self) -> None:
        self.connection._writes_drained()


class Connection:
    """A remoting connection: requests out with matched responses, requests in to a callback.

    Create one through :class:`RemotingClient` or :class:`RemotingServer`; use it from the event loop that
    owns it. ``remote_address`` is "ip:port" as Java logs it, and is what the server-side listeners see.
    """

    def __init__(
        self,
        *,
        opaques: OpaqueCounter,
        on_request: RequestCallback,
        on_open: ConnectionCallback | None = None,
        max_frame_size: int = MAX_FRAME_SIZE,
        target: str | None = None,
        max_buffered: int = 0,
        budget: BufferBudget | None = None,
        response_version: int | None = None,
    ) -> None:
        self._target = target
        #: The ``version`` a server puts on its answers (its own release, as Apache's servers do: clients
        #: read features off it); ``None`` keeps whatever the response was built with.
        self._response_version = response_version
        self._loop = asyncio.get_running_loop()
        self._opaques = opaques
        self._on_request = on_request
        self._on_open = on_open
        self._decoder = FrameDecoder(max_frame_size)
        self._pending: dict[int, asyncio.Future[RemotingCommand]] = {}
        self._transport: asyncio.Transport | None = None
        self._state = _OPEN
        self._out: list[bytes] = []
        self._out_size = 0
        self._flush_handle: asyncio.Handle | None = None
        self._write_paused = False
        self._write_waiters: list[asyncio.Future[None]] = []
        self._close_reason: str | None = None
        self._close_cause: BaseException | None = None
        self._closed = self._loop.create_future()
        self._close_callbacks: list[ConnectionCallback] = []
        # Bounds (see the module docstring): unsent bytes past ``max_buffered`` stop reading until they are
        # below half of it. The transport's own high-water mark stays under the bound, so that the bound is
        # looked at (on pause_writing) before it can be passed.
        self._max_buffered = max(0, max_buffered)
        self._low_buffered = self._max_buffered // 2
        self._budget = budget
        self._bounded = self._max_buffered > 0 or budget is not None
        self._high_water = (
            max(1, min(_WRITE_HIGH_WATER, self._max_buffered // 2))
            if self._max_buffered
            else _WRITE_HIGH_WATER
        )
        self._flush_at = min(_FLUSH_AT, self._high_water)
        self._held_bytes = 0  # encoded frames whose writers wait for the transport to drain
        self._accounted = 0  # what the budget was last told this connection holds
        self._read_holds = 0  # _HOLD_* bits: why the socket is not being read
        self._reading = True  # what the transport was last told
        # Whole frames received but not yet handed over (a hold started part-way through a read) stay in the
        # decoder as bytes; this continues handing them over on a later turn.
        self._resume_handle: asyncio.Handle | None = None
        # Idle detection: set on activity, turned into a time by whoever asks (the server's sweep).
        self._active = False
        self._last_active = self._loop.time()
        self._queued_seen = 0
        self.protocol = _ConnectionProtocol(self)
        self.remote_address = ""
        self.local_address = ""

    def __repr__(self) -> str:
        state = ("open", "closing", "closed")[self._state]
        return (
            f"<Connection {self.local_address} -> {self.remote_address} {state} pending={len(self._pending)}>"
        )

    # -- state -----------------------------------------------------------------------------------------

    @property
    def address(self) -> str:
        """The "host:port" this connection was opened to (client side), else the peer's "ip:port"."""
        return self._target or self.remote_address

    @property
    def is_open(self) -> bool:
        """True until a close starts, from either side; a closing connection accepts no new work."""
        return self._state == _OPEN and self._transport is not None

    @property
    def is_closed(self) -> bool:
        """True once the socket is gone and the close callbacks have run."""
        return self._state == _CLOSED

    @property
    def close_reason(self) -> str | None:
        return self._close_reason

    @property
    def pending_count(self) -> int:
        """Requests sent on this connection still waiting for their response."""
        return len(self._pending)

    @property
    def writing_paused(self) -> bool:
        """True while the transport's buffer is above its high-water mark and writers wait."""
        return self._write_paused

    @property
    def reading_paused(self) -> bool:
        """True while the socket is not read: a bound was reached, or :meth:`pause_reading` was called."""
        return self._read_holds != 0

    @property
    def unsent_bytes(self) -> int:
        """Bytes written to this connection that the kernel has not taken yet (answers a peer has not read):
        the transport's buffer, frames coalesced for this turn, and frames whose writers wait for room."""
        transport = self._transport
        queued = transport.get_write_buffer_size() if transport is not None else 0
        return queued + self._out_size + self._held_bytes

    @property
    def buffered_bytes(self) -> int:
        """Everything held here for this connection: :attr:`unsent_bytes`, plus bytes received that are not
        yet a whole request, plus requests read but withheld while reading is paused (estimated)."""
        return self.unsent_bytes + self._decoder.buffered

    def idle_for(self, now: float) -> float:
        """Seconds without a read or a write as of ``now`` (the event loop's clock).

        Activity only raises a flag; this turns it into a time, so a caller asking every ``p`` seconds sees
        the connection's last activity up to ``p`` late, and never early. One caller per connection (the
        server's idle sweep): asking clears the flag. A transport buffer that changed since the last call
        counts too: the peer is reading what was written (as Netty counts a completed write).
        """
        transport = self._transport
        queued = transport.get_write_buffer_size() if transport is not None else 0
        if self._active or queued != self._queued_seen:
            self._active = False
            self._queued_seen = queued
            self._last_active = now
        return now - self._last_active

    def add_close_callback(self, callback: ConnectionCallback) -> None:
        """Run ``callback(conn)`` once the connection is gone; soon, if it already is."""
        if self._state == _CLOSED:
            self._loop.call_soon(callback, self)
        else:
            self._close_callbacks.append(callback)

    def get_extra_info(self, name: str, default: object = None) -> object:
        """Transport details (``peercert``, ``sslcontext``, ``socket`` ...), as asyncio names them."""
        if self._transport is None:
            return default
        return self._transport.get_extra_info(name, default)

    # -- outgoing --------------------------------------------------------------------------------------

    async def request(self, cmd: RemotingCommand, timeout: float) -> RemotingCommand:
        """Send ``cmd`` and wait at most ``timeout`` seconds for the response with its opaque.

        The opaque is assigned here (``cmd`` is updated). A timeout leaves the connection open; the late
        answer, if any, is logged at debug level and dropped.
        """
        self._check_open()
        pending = self._pending
        opaque = self._opaques()
        while opaque in pending:  # only after a wrap-around with a very old request still waiting
            opaque = self._opaques()
        cmd.opaque = opaque
        loop = self._loop
        future: asyncio.Future[RemotingCommand] = loop.create_future()
        pending[opaque] = future
        timer = loop.call_later(timeout, self._expire, opaque, future, timeout)
        try:
            if self._write_paused:
                data = cmd.encode()
                await self._wait_writable(future, len(data))
                if future.done():
                    return future.result()
                self._write(data)
            else:
                self._write(cmd.encode())
            return await future
        finally:
            timer.cancel()
            if pending.get(opaque) is future:
                del pending[opaque]

    async def oneway(self, cmd: RemotingCommand) -> None:
        """Send ``cmd`` with the oneway flag set; the peer sends nothing back. The opaque is assigned here."""
        self._check_open()
        cmd.mark_oneway()
        cmd.opaque = self._opaques()
        data = cmd.encode()
        if self._write_paused:  # encoded first: what waits is counted
            await self._wait_writable(None, len(data))
            self._check_open()
        self._write(data)

    async def send_response(self, cmd: RemotingCommand) -> None:
        """Send a response built by the caller (its opaque must be the request's); sets the response flag.

        For handlers that answer later than their return (long polling). Raises
        :class:`RemotingClosedError` if the connection is gone, as the answer cannot be delivered.
        """
        self._check_open()
        self._stamp_response(cmd)
        data = cmd.encode()
        if self._write_paused:  # encoded first: what waits is counted
            await self._wait_writable(None, len(data))
            self._check_open()
        self._write(data)

    def send_response_nowait(self, cmd: RemotingCommand) -> None:
        """Like :meth:`send_response` but ignoring backpressure, for small replies from plain callbacks."""
        self._check_open()
        self._stamp_response(cmd)
        self._write(cmd.encode())

    def _stamp_response(self, cmd: RemotingCommand) -> None:
        cmd.mark_response()
        if self._response_version is not None:
            cmd.version = self._response_version

    # -- closing ---------------------------------------------------------------------------------------

    def close(self, reason: str = "closed locally") -> None:
        """Start an orderly close: fail waiters now, flush what is written, then close the socket."""
        if self._state != _OPEN:
            return
        self._begin_close(reason, None)
        self._flush()
        if self._transport is not None:
            self._transport.close()

    def abort(self, reason: str = "aborted locally") -> None:
        """Drop the connection at once, discarding unsent data."""
        if self._state != _CLOSED:
            self._drop(reason, None)

    async def wait_closed(self) -> None:
        """Wait until the socket is gone and the close callbacks have run."""
        await asyncio.shield(self._closed)

    async def aclose(self, grace: float = 1.0) -> None:
        """Close; abort if flushing takes over ``grace`` s, so a peer that never reads cannot stall us."""
        self.close()
        try:
            async with asyncio.timeout(grace):
                await self.wait_closed()
        except TimeoutError:
            self.abort("peer did not let the close complete")
            await self.wait_closed()

    def pause_reading(self) -> None:
        """Stop reading the socket: flow control for a peer sending requests faster than we handle them.

        Requests of data already read are withheld too, from the next one on. Reading resumes with
        :meth:`resume_reading` unless a bound of this connection's still stops it."""
        self._hold(_HOLD_CALLER)

    def resume_reading(self) -> None:
        """Undo :meth:`pause_reading`: withheld requests are delivered, then the socket is read again."""
        self._release(_HOLD_CALLER)

    # -- internals -------------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._state != _OPEN or self._transport is None:
            raise self._closed_error()

    def _closed_error(self) -> RemotingClosedError:
        reason = self._close_reason or "not connected"
        err = RemotingClosedError(
            f"connection to {self.remote_address or '?'} is closed: {reason}", self.remote_address, reason
        )
        err.__cause__ = self._close_cause
        return err

    def _write(self, data: bytes) -> None:
        if self._flush_handle is None:
            # First frame this turn goes out at once (no added latency); later ones wait for the batch.
            self._flush_handle = self._loop.call_soon(self._flush)
            self._active = True
            transport = self._transport
            if transport is not None and not transport.is_closing():
                transport.write(data)
        else:
            self._out.append(data)
            self._out_size += len(data)
            if self._out_size >= self._flush_at:
                self._flush()
        if self._write_paused and self._bounded:  # the peer is behind: every frame more is looked at
            self._account()

    def _flush(self) -> None:
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        out = self._out
        if not out:
            return
        self._out = []
        self._out_size = 0
        transport = self._transport
        if transport is None or transport.is_closing():
            return  # the waiters learn about it from connection_lost
        if len(out) == 1:
            transport.write(out[0])
        else:
            transport.writelines(out)

    async def _wait_writable(self, abandon_with: asyncio.Future[RemotingCommand] | None, size: int) -> None:
        """Wait for the transport to drain below its low-water mark (or for ``abandon_with`` to finish),
        counting the ``size`` bytes of the encoded frame the caller holds meanwhile."""
        waiter: asyncio.Future[None] = self._loop.create_future()
        self._write_waiters.append(waiter)
        if abandon_with is not None:
            abandon_with.add_done_callback(lambda _f: None if waiter.done() else waiter.set_result(None))
        self._held_bytes += size
        if self._bounded:
            self._account()
        try:
            await waiter
        finally:
            self._held_bytes -= size
            if not waiter.done():
                waiter.cancel()
            try:
                self._write_waiters.remove(waiter)
            except ValueError:
                pass
            if self._bounded:  # its bytes move to the transport now: the last writer to leave may end a hold
                self._account()

    def _writes_backed_up(self) -> None:
        """The transport passed its high-water mark: the peer reads slower than we write."""
        self._write_paused = True
        if self._bounded:
            self._account()

    def _writes_drained(self) -> None:
        """The transport drained below its low-water mark: wake the writers, then measure again."""
        self._resume_writers()
        if self._bounded:
            self._account()

    def _resume_writers(self) -> None:
        self._write_paused = False
        waiters, self._write_waiters = self._write_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    # -- bounds and reading ----------------------------------------------------------------------------

    def _account(self) -> None:
        """Measure what this connection holds and apply the bounds to it.

        Only called on slow paths: when the transport pauses or resumes writing, for each frame written or
        held while it is paused, and per read while something is counted. Unsent bytes count only while the
        transport is paused: below its high-water mark they are what any peer that keeps up costs.
        """
        if self._state != _OPEN:
            return  # closing: the budget forgets it all when the socket is gone
        waiting = self._held_bytes
        transport = self._transport
        if self._write_paused and transport is not None:
            waiting += transport.get_write_buffer_size() + self._out_size
        limit = self._max_buffered
        if limit:
            if waiting >= limit:
                if not self._read_holds & _HOLD_OWN:
                    logger.info(
                        "not reading from %s for now: %d bytes wait for it to read them (bound %d)",
                        self.remote_address,
                        waiting,
                        limit,
                    )
                    self._hold(_HOLD_OWN)
            elif waiting < self._low_buffered and self._read_holds & _HOLD_OWN:
                logger.debug(
                    "%s has read its answers down to %d bytes: reading again", self.remote_address, waiting
                )
                self._release(_HOLD_OWN)
        budget = self._budget
        if budget is not None:
            held = waiting + self._decoder.buffered
            delta = held - self._accounted
            self._accounted = held
            budget._update(self, delta, waiting)

    def _tighten(self, tight: bool) -> None:
        """The transport's write-buffer marks: this connection's own, or 0 while the server is over its
        budget (anything unsent then pauses writing, which this connection reports; frames are not
        coalesced then either, so each one meets the transport's mark)."""
        transport = self._transport
        if transport is None or self._state != _OPEN:
            return
        if tight:
            self._flush_at = 0
            transport.set_write_buffer_limits(high=0, low=0)
        else:
            high = self._high_water
            self._flush_at = min(_FLUSH_AT, high)
            low = _WRITE_LOW_WATER if high == _WRITE_HIGH_WATER else high // 4
            transport.set_write_buffer_limits(high=high, low=low)

    def _hold(self, why: int) -> None:
        holds = self._read_holds
        self._read_holds = holds | why
        if self._state == _OPEN:
            self._stop_reading()

    def _release(self, why: int) -> None:
        holds = self._read_holds
        if not holds & why:
            return
        self._read_holds = holds & ~why
        if self._read_holds or self._state != _OPEN:
            return
        self._continue_soon()

    def _continue_soon(self) -> None:
        """Hand over what the decoder still holds, then read again, from a callback of its own: whoever
        ended the hold (a handler finishing) must not re-enter the request callback."""
        if self._resume_handle is None and self._state == _OPEN:
            self._resume_handle = self._loop.call_soon(self._continue)

    def _continue(self) -> None:
        self._resume_handle = None
        if self._read_holds or self._state != _OPEN:
            return
        if self._take_commands() and not self._reading and self._transport is not None:
            self._reading = True
            self._transport.resume_reading()

    def _stop_reading(self) -> None:
        if self._reading and self._transport is not None:
            self._reading = False
            self._transport.pause_reading()

    def _take_commands(self) -> bool:
        """Hand every whole command received to its waiter or to the request callback, stopping after a
        request once reading is held or the peer has fallen behind on its answers (the rest then goes one
        per turn, so that each answer is written, or waits for room and is counted, before the next request
        is handed over). True if the decoder has no whole command left."""
        decoder = self._decoder
        pending = self._pending
        while True:
            try:
                cmd = decoder.next()
            except Exception as exc:  # CodecError by contract; anything else is a decoder bug, same outcome
                reason = f"malformed input: {exc}"
                logger.warning("closing connection from %s: %s", self.remote_address, reason)
                self._drop(reason, exc)
                return False
            if cmd is None:
                return True
            if cmd.is_response:
                future = pending.pop(cmd.opaque, None)
                if future is None or future.done():
                    logger.debug(
                        "dropping response from %s with opaque %d: nobody waits for it (timed out?)",
                        self.remote_address,
                        cmd.opaque,
                    )
                else:
                    future.set_result(cmd)
                continue
            try:
                self._on_request(cmd, self)
            except Exception:
                logger.exception("request callback failed for %r from %s", cmd, self.remote_address)
            if self._state != _OPEN:
                return False
            if self._read_holds or self._write_paused:
                self._stop_reading()
                if not self._read_holds:
                    self._continue_soon()
                return False

    def _expire(self, opaque: int, future: asyncio.Future[RemotingCommand], timeout: float) -> None:
        if self._pending.get(opaque) is future:
            del self._pending[opaque]
        if not future.done():
            timeout_ms = timeout * 1000
            future.set_exception(
                RemotingTimeoutError(
                    f"no response from {self.remote_address} to opaque {opaque} within {timeout_ms:.0f} ms",
                    self.remote_address,
                    timeout_ms,
                )
            )

    def _attach(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self.remote_address = format_address(transport.get_extra_info("peername"))
        self.local_address = format_address(transport.get_extra_info("sockname"))
        self._tighten(False)
        self._last_active = self._loop.time()
        if self._read_holds:  # paused before the socket existed
            self._reading = False
            transport.pause_reading()
        if self._budget is not None:
            self._budget._join(self)
        if self._on_open is not None:
            try:
                self._on_open(self)
            except Exception:
                logger.exception("connection-open callback failed for %s", self.remote_address)

    def _on_data(self, data: bytes) -> None:
        if self._state != _OPEN:
            return  # closing: anything more from this peer is ignored
        self._active = True
        self._decoder.push(data)
        if self._read_holds or self._resume_handle is not None:
            # Data after a hold began (a transport may deliver what it had read): it waits, in order.
            self._stop_reading()
        else:
            self._take_commands()
        if self._budget is not None and (self._accounted or self._decoder.buffered):
            self._account()  # the server counts what this connection holds, or had counted something

    def _begin_close(self, reason: str, cause: BaseException | None) -> None:
        if self._state != _OPEN:
            return
        self._state = _CLOSING
        self._close_reason = reason
        self._close_cause = cause
        self._cancel_resume()  # requests nobody will answer now
        self._fail_pending()
        self._resume_writers()  # blocked writers wake up and find the connection closed

    def _drop(self, reason: str, cause: BaseException | None) -> None:
        self._begin_close(reason, cause)
        self._out.clear()
        self._out_size = 0
        if self._transport is not None:
            self._transport.abort()

    def _cancel_resume(self) -> None:
        if self._resume_handle is not None:
            self._resume_handle.cancel()
            self._resume_handle = None

    def _fail_pending(self) -> None:
        pending, self._pending = self._pending, {}
        for future in pending.values():
            if not future.done():
                future.set_exception(self._closed_error())

    def _detach(self, exc: Exception | None) -> None:
        if self._state == _OPEN:
            reason = f"connection lost: {exc}" if exc is not None else "closed by peer"
            logger.debug("connection %s -> %s: %s", self.local_address, self.remote_address, reason)
            self._begin_close(reason, exc)
        self._state = _CLOSED
        if self._flush_handle is not None:
            self._flush_handle.cancel()
            self._flush_handle = None
        self._out.clear()
        self._out_size = 0
        self._transport = None
        # Nothing of the peer's stays behind in a closed connection that someone still refers to.
        self._decoder.clear()
        self._cancel_resume()
        if self._budget is not None:
            self._budget._leave(self, self._accounted)
        self._accounted = 0
        if not self._closed.done():
            self._closed.set_result(None)
        callbacks, self._close_callbacks = self._close_callbacks, []
        for callback in callbacks:
            try:
                callback(self)
            except Exception:
                logger.exception("connection-close callback failed for %s", self.remote_address)
