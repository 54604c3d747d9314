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
        self.connection._write_paused = True

    def resume_writing(self) -> None:
        self.connection._resume_writers()


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
    ) -> None:
        self._target = target
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
                await self._wait_writable(future)
                if future.done():
                    return future.result()
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
        if self._write_paused:
            await self._wait_writable(None)
            self._check_open()
        self._write(cmd.encode())

    async def send_response(self, cmd: RemotingCommand) -> None:
        """Send a response built by the caller (its opaque must be the request's); sets the response flag.

        For handlers that answer later than their return (long polling). Raises
        :class:`RemotingClosedError` if the connection is gone, as the answer cannot be delivered.
        """
        self._check_open()
        cmd.mark_response()
        if self._write_paused:
            await self._wait_writable(None)
            self._check_open()
        self._write(cmd.encode())

    def send_response_nowait(self, cmd: RemotingCommand) -> None:
        """Like :meth:`send_response` but ignoring backpressure, for small replies from plain callbacks."""
        self._check_open()
        cmd.mark_response()
        self._write(cmd.encode())

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
        """Stop reading the socket: flow control for a peer sending requests faster than we handle them."""
        if self._transport is not None and self._state == _OPEN:
            self._transport.pause_reading()

    def resume_reading(self) -> None:
        if self._transport is not None and self._state == _OPEN:
            self._transport.resume_reading()

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
            transport = self._transport
            if transport is not None and not transport.is_closing():
                transport.write(data)
            return
        self._out.append(data)
        self._out_size += len(data)
        if self._out_size >= _FLUSH_AT:
            self._flush()

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

    async def _wait_writable(self, abandon_with: asyncio.Future[RemotingCommand] | None) -> None:
        """Wait for the transport to drain below its low-water mark (or for ``abandon_with`` to finish)."""
        waiter: asyncio.Future[None] = self._loop.create_future()
        self._write_waiters.append(waiter)
        if abandon_with is not None:
            abandon_with.add_done_callback(lambda _f: None if waiter.done() else waiter.set_result(None))
        try:
            await waiter
        finally:
            if not waiter.done():
                waiter.cancel()
            try:
                self._write_waiters.remove(waiter)
            except ValueError:
                pass

    def _resume_writers(self) -> None:
        self._write_paused = False
        waiters, self._write_waiters = self._write_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

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
        transport.set_write_buffer_limits(high=_WRITE_HIGH_WATER, low=_WRITE_LOW_WATER)
        if self._on_open is not None:
            try:
                self._on_open(self)
            except Exception:
                logger.exception("connection-open callback failed for %s", self.remote_address)

    def _on_data(self, data: bytes) -> None:
        if self._state != _OPEN:
            return  # closing: anything more from this peer is ignored
        try:
            commands = self._decoder.feed(data)
        except Exception as exc:  # CodecError by contract; anything else is a decoder bug, same outcome
            reason = f"malformed input: {exc}"
            logger.warning("closing connection from %s: %s", self.remote_address, reason)
            self._drop(reason, exc)
            return
        pending = self._pending
        for cmd in commands:
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
            else:
                try:
                    self._on_request(cmd, self)
                except Exception:
                    logger.exception("request callback failed for %r from %s", cmd, self.remote_address)

    def _begin_close(self, reason: str, cause: BaseException | None) -> None:
        if self._state != _OPEN:
            return
        self._state = _CLOSING
        self._close_reason = reason
        self._close_cause = cause
        self._fail_pending()
        self._resume_writers()  # blocked writers wake up and find the connection closed

    def _drop(self, reason: str, cause: BaseException | None) -> None:
        self._begin_close(reason, cause)
        self._out.clear()
        self._out_size = 0
        if self._transport is not None:
            self._transport.abort()

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
        if not self._closed.done():
            self._closed.set_result(None)
        callbacks, self._close_callbacks = self._close_callbacks, []
        for callback in callbacks:
            try:
                callback(self)
            except Exception:
                logger.exception("connection-close callback failed for %s", self.remote_address)
