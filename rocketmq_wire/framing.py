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
    __slots__ = ("_buffer", "_failed", "max_frame_size")

    def __init__(self, max_frame_size: int = MAX_FRAME_SIZE) -> None:
        self.max_frame_size = max_frame_size
        self._buffer = bytearray()
        self._failed = False

    @property
    def buffered(self) -> int:
        """Bytes received that do not yet form a whole frame."""
        return len(self._buffer)

    def feed(self, data: bytes | bytearray | memoryview) -> list[RemotingCommand]:
        if self._failed:
            raise CodecError("the stream already failed to decode; frame boundaries are lost")
        buf = self._buffer
        buf += data
        commands: list[RemotingCommand] = []
        pos = 0
        end = len(buf)
        try:
            while end - pos >= 4:
                length = int.from_bytes(buf[pos : pos + 4], "big")
                if length + 4 > self.max_frame_size:
                    raise FrameTooLargeError(length + 4, self.max_frame_size)
                if length < 4:
                    raise CodecError(f"frame length {length} is too short to hold a header length word")
                if end - pos - 4 < length:
                    break
                commands.append(RemotingCommand.decode(buf[pos : pos + 4 + length]))
                pos += 4 + length
        except CodecError:
            self._failed = True
            buf.clear()
            raise
        del buf[:pos]
        return commands
