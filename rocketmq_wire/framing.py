"""Splitting a byte stream into commands, sans I/O.

Feed it whatever the socket delivered; it returns every command completed so far. The length prefix is
checked against the limit before anything of the frame is buffered beyond what already arrived, so a peer
announcing a huge frame costs nothing. After an error the stream is unusable (frame boundaries are lost):
the caller closes the connection.
"""

from __future__ import annotations

from rocketmq_wire.command import RemotingCommand
from rocketmq_wire.errors import CodecError, FrameTooLargeError

#: Java's default (``NettySystemConfig`` frame max length): 16 MiB, the length prefix included.
MAX_FRAME_SIZE = 16 * 1024 * 1024


class FrameDecoder:
    """Commands out of a byte stream: all of them at once (:meth:`feed`), or one at a time (:meth:`push` then
    :meth:`next`), for a reader that must stop part-way: what it has not taken stays here as the bytes it
    arrived as, a few dozen per small request instead of a decoded object of a kilobyte or so."""

    __slots__ = ("_buffer", "_failed", "_pos", "max_frame_size")

    def __init__(self, max_frame_size: int = MAX_FRAME_SIZE) -> None:
        self.max_frame_size = max_frame_size
        self._buffer = bytearray()
        self._pos = 0  # where the next frame starts; the bytes before it are taken
        self._failed = False

    @property
    def buffered(self) -> int:
        """Bytes received and not yet taken as commands: an unfinished frame, and whole ones not taken."""
        return len(self._buffer) - self._pos

    def clear(self) -> None:
        """Forget everything not yet taken (the connection is gone), releasing its memory."""
        self._buffer = bytearray()
        self._pos = 0

    def push(self, data: bytes | bytearray | memoryview) -> None:
        """Add received bytes without decoding anything."""
        if self._failed:
            raise CodecError("the stream already failed to decode; frame boundaries are lost")
        if self._pos:
            del self._buffer[: self._pos]
            self._pos = 0
        self._buffer += data

    def next(self) -> RemotingCommand | None:
        """The next whole command, or None until more bytes arrive."""
        buf = self._buffer
        pos = self._pos
        if len(buf) - pos < 4:
            return None
        try:
            length = self._check_length(int.from_bytes(buf[pos : pos + 4], "big"))
            if len(buf) - pos - 4 < length:
                return None
            command = RemotingCommand.decode(buf[pos : pos + 4 + length])
        except CodecError:
            self._fail()
            raise
        self._pos = pos + 4 + length
        if self._pos == len(buf):
            buf.clear()
            self._pos = 0
        return command

    def feed(self, data: bytes | bytearray | memoryview) -> list[RemotingCommand]:
        """Add received bytes and take every command they complete."""
        self.push(data)
        buf = self._buffer
        commands: list[RemotingCommand] = []
        pos = 0
        end = len(buf)
        try:
            while end - pos >= 4:
                length = self._check_length(int.from_bytes(buf[pos : pos + 4], "big"))
                if end - pos - 4 < length:
                    break
                commands.append(RemotingCommand.decode(buf[pos : pos + 4 + length]))
                pos += 4 + length
        except CodecError:
            self._fail()
            raise
        del buf[:pos]
        return commands

    def _check_length(self, length: int) -> int:
        """The length prefix, refused before any of its frame is waited for if it cannot be right."""
        if length + 4 > self.max_frame_size:
            raise FrameTooLargeError(length + 4, self.max_frame_size)
        if length < 4:
            raise CodecError(f"frame length {length} is too short to hold a header length word")
        return length

    def _fail(self) -> None:
        self._failed = True
        self._buffer.clear()
        self._pos = 0
