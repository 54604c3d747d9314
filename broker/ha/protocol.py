"""The HA link's two byte streams, without any I/O (Apache's classic ``HAService`` wire format).

The link is plain TCP, not remoting frames. Each direction carries one kind of unit:

* slave -> master: a **report**, the slave's commit-log max offset as an 8-byte big-endian long. The first
  one tells the master where to start; later ones acknowledge what the slave holds. Apache's master only
  looks at the newest complete report in whatever has arrived, so :class:`ReportReader` does the same.
* master -> slave: a **transfer**, a 12-byte header (8-byte commit-log offset, 4-byte body size, both
  big-endian) followed by that many commit-log bytes, unchanged. A header with size 0 is the master's
  heartbeat: it only says where the master would continue.

Bytes arrive in arbitrary pieces, so both readers keep what they could not use yet; a reader raises
:class:`HAProtocolError` for anything a well-behaved peer never sends, and the connection is then dropped.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

REPORT = struct.Struct(">q")
HEADER = struct.Struct(">qi")
#: A transfer body is at most ``haTransferBatchSize`` (32 KiB by default) and never crosses a commit-log
#: file; anything beyond a file of Apache's largest practical size is a broken or hostile stream.
MAX_BODY_SIZE = 1 << 30


class HAProtocolError(Exception):
    """The peer sent something the HA protocol does not allow."""


def encode_report(offset: int) -> bytes:
    """A slave's report of its commit-log max offset."""
    if offset < 0:
        raise ValueError(f"a commit-log offset is never negative: {offset}")
    return REPORT.pack(offset)


def encode_header(offset: int, size: int) -> bytes:
    """The 12 bytes in front of ``size`` commit-log bytes that start at ``offset``."""
    if offset < 0 or not 0 <= size <= MAX_BODY_SIZE:
        raise ValueError(f"no transfer header for offset {offset}, size {size}")
    return HEADER.pack(offset, size)


def encode_transfer(offset: int, body: bytes = b"") -> bytes:
    """A whole transfer (header and body); an empty body makes it a heartbeat."""
    return encode_header(offset, len(body)) + body


class ReportReader:
    """The master's view of a slave's reports: the newest complete one, however the bytes were cut."""

    __slots__ = ("_pending",)

    def __init__(self) -> None:
        self._pending = b""

    def feed(self, data: bytes) -> int | None:
        """Take newly received bytes; returns the newest report they completed, or None if none."""
        buffered = self._pending + data
        whole = len(buffered) - len(buffered) % REPORT.size
        self._pending = buffered[whole:]
        if whole == 0:
            return None
        (offset,) = REPORT.unpack_from(buffered, whole - REPORT.size)
        if offset < 0:
            raise HAProtocolError(f"the slave reported a negative offset {offset}")
        return int(offset)


@dataclass(frozen=True, slots=True)
class Transfer:
    """One unit from the master: ``body`` holds the commit-log bytes from ``offset`` on."""

    offset: int
    body: bytes

    @property
    def is_heartbeat(self) -> bool:
        return not self.body

    @property
    def end(self) -> int:
        """The commit-log offset just past this transfer's bytes."""
        return self.offset + len(self.body)


class TransferReader:
    """The slave's view of the master's stream: whole transfers, in order.

    ``max_body_size`` bounds what one transfer may announce, so a corrupt header cannot make the slave wait
    for (and buffer) gigabytes; the slave passes a commit-log file's size.
    """

    __slots__ = ("_buffer", "_max_body_size")

    def __init__(self, max_body_size: int = MAX_BODY_SIZE) -> None:
        self._buffer = bytearray()
        self._max_body_size = max_body_size

    @property
    def buffered(self) -> int:
        """Bytes received but not yet part of a whole transfer."""
        return len(self._buffer)

    def pending_header(self) -> tuple[int, int] | None:
        """(offset, size) of the transfer whose body is still arriving, once its header is complete.

        Apache's slave checks the offset as soon as the header is there; this lets the caller do the same.
        """
        if len(self._buffer) < HEADER.size:
            return None
        offset, size = HEADER.unpack_from(self._buffer, 0)
        return int(offset), int(size)

    def feed(self, data: bytes) -> list[Transfer]:
        """Take newly received bytes; returns the transfers they completed (possibly none)."""
        self._buffer += data
        transfers: list[Transfer] = []
        position = 0
        buffer = self._buffer
        while len(buffer) - position >= HEADER.size:
            offset, size = HEADER.unpack_from(buffer, position)
            if offset < 0:
                raise HAProtocolError(f"the master sent a negative offset {offset}")
            if not 0 <= size <= self._max_body_size:
                raise HAProtocolError(f"the master announced a body of {size} bytes at offset {offset}")
            end = position + HEADER.size + size
            if end > len(buffer):
                break
            transfers.append(Transfer(int(offset), bytes(buffer[position + HEADER.size : end])))
            position = end
        if position:
            del buffer[:position]
        return transfers
