"""A small table kept durable by appending each whole new version to a journal, not by renaming files.

Rewriting a file atomically costs a temporary file, two fsyncs (the file, then its directory) and a rename;
done from a worker thread that is about ten system calls, and the thread must win the GIL back from a busy
event loop after each of them (up to the interpreter's switch interval, 5 ms, every time). The POP table is
rewritten before every POP and ack is answered, so that wait was most of a request's latency.

Here a new version is one framed record (magic, length, CRC-32, bytes) appended with a single ``write`` on a
descriptor opened ``O_APPEND | O_DSYNC``: on disk when the call returns, one GIL round trip. Without
``sync`` (a broker under ASYNC_FLUSH) the descriptor has no ``O_DSYNC``: the version is in the page cache
when the call returns, which a killed broker does not lose, the promise that flush mode makes for
messages too; the write then takes microseconds and belongs on the event loop. The newest
whole record of the journal is the table; a record cut short by a crash was never acknowledged and is
ignored. When the journal outgrows :data:`COMPACT_BYTES` the version is also written to the base file
atomically and the journal emptied, so the journal's newest record (when it has one) is never older than
the base file, whatever moment a crash picks.
"""

from __future__ import annotations

import contextlib
import logging
import os
import struct
import threading
import zlib
from pathlib import Path

from broker.store.atomic_file import read_if_exists, write_atomically

log = logging.getLogger("broker.store.snapshot_journal")

_HEADER = struct.Struct(">4sII")
_MAGIC = b"SNJ1"
#: Past this size the journal is folded into the base file (a few thousand versions of a small table).
COMPACT_BYTES = 8 * 1024 * 1024


def frame(data: bytes) -> bytes:
    """One journal record holding ``data``."""
    return _HEADER.pack(_MAGIC, len(data), zlib.crc32(data)) + data


def newest_record(journal: bytes) -> tuple[bytes | None, int]:
    """The last whole, intact record of ``journal`` and where the intact prefix ends (a torn or damaged
    tail, and anything after it, is not part of the journal)."""
    newest: bytes | None = None
    position = 0
    while position + _HEADER.size <= len(journal):
        magic, length, crc = _HEADER.unpack_from(journal, position)
        start = position + _HEADER.size
        data = journal[start : start + length]
        if magic != _MAGIC or len(data) != length or zlib.crc32(data) != crc:
            break
        newest = data
        position = start + length
    return newest, position


class SnapshotJournal:
    """The newest version of one table, in ``base`` and ``journal`` (see the module's note). One writer at a
    time: :meth:`write` may run in a worker thread, but never two at once."""

    def __init__(
        self, base: Path, journal: Path, *, sync: bool = True, compact_bytes: int = COMPACT_BYTES
    ) -> None:
        self.base = base
        self.sync = sync
        self.journal = journal
        self._compact_bytes = compact_bytes
        self._fd: int | None = None
        #: Bytes of whole records in the journal (where the next append must start).
        self._size = 0
        #: An append failed part way: the journal may hold a partial record past ``_size``.
        self._torn = False
        self._lock = threading.Lock()

    def read(self) -> bytes | None:
        """The newest durable version (None: never written). Folds a non-empty journal into the base file
        first, so appends start on a clean journal (no torn tail before them)."""
        raw = read_if_exists(self.journal) or b""
        newest, intact = newest_record(raw)
        if intact != len(raw):
            log.warning("%s: ignoring %d bytes after its last whole record", self.journal, len(raw) - intact)
        if newest is not None:
            write_atomically(self.base, newest)
        if raw:
            self._truncate()
        return newest if newest is not None else read_if_exists(self.base)

    def write(self, data: bytes) -> None:
        """Make ``data`` the durable version; ``OSError`` when it may not be."""
        with self._lock:
            fd = self._open()
            if self._torn:  # a failed append left bytes after the last whole record: cut them first
                os.ftruncate(fd, self._size)
                self._torn = False
            record = frame(data)
            view = memoryview(record)
            try:
                while view:
                    view = view[os.write(fd, view) :]
            except OSError:
                self._torn = True
                raise
            self._size += len(record)
            if self._size > self._compact_bytes:
                try:
                    write_atomically(self.base, data)
                    self._truncate()
                except OSError:  # the version is durable in the journal; folding it in can wait
                    log.exception("could not fold %s into %s; trying again later", self.journal, self.base)

    def close(self) -> None:
        with self._lock:
            self._close()

    def _open(self) -> int:
        if self._fd is None:
            self.journal.parent.mkdir(parents=True, exist_ok=True)
            flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | (os.O_DSYNC if self.sync else 0)
            self._fd = os.open(self.journal, flags, 0o644)
            self._size = os.fstat(self._fd).st_size
            self._torn = False
        return self._fd

    def _truncate(self) -> None:
        fd = os.open(self.journal, os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            os.ftruncate(fd, 0)
            self._size = 0  # whatever the fsync says: appends now start at 0
            os.fsync(fd)
        finally:
            os.close(fd)

    def _close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
