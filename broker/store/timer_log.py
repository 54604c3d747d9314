"""The timer's durable progress: a checkpoint and an append-only log of what was handled since.

The timer messages themselves live in the commit log (queue 0 of ``rmq_sys_wheel_timer``); this records only
which of them are finished, by timer-queue offset:

* ``checkpoint``: the offset below which every entry is finished, written atomically (write-then-rename).
* ``progress.log``: fixed-size records after it. ``D offset``: the entry is finished (delivered, recalled, or
  a recall marker used up). ``I offset from``: a delivery is about to store the entry's copy into its real
  queue, whose end was ``from``. An intent is written (and, under SYNC_FLUSH, fsynced) before the copy is
  stored, the done record after the store acknowledged it. A crash in between leaves an open intent, and
  recovery settles it by looking in the real queue from ``from`` on for the copy (same ``UNIQ_KEY`` and
  ``TIMER_OUT_MS``): found means done, not found means deliver again. So no acknowledged timer is lost and
  none is delivered twice.

Finished offsets past the checkpoint are kept as a bitmap (one bit per offset), not a set of integers. A torn
record at the log's end (a crash mid-write) is dropped on open: it was never fsynced, so never relied on.
"""

from __future__ import annotations

import logging
import os
import struct
import time
from pathlib import Path
from typing import BinaryIO

from broker.store.atomic_file import read_if_exists, write_atomically

log = logging.getLogger("broker.store.timer_log")

_RECORD = struct.Struct(">cqq")
_DONE = b"D"
_INTENT = b"I"
CHECKPOINT_FILE = "checkpoint"
LOG_FILE = "progress.log"


class TimerLog:
    def __init__(self, directory: Path, *, sync: bool) -> None:
        self._dir = directory
        self._sync = sync
        self.checkpoint = 0
        self._done = bytearray()
        self._intents: dict[int, int] = {}
        self._file: BinaryIO | None = None
        #: When the checkpoint last moved, and how many times it has (its data version).
        self.version_timestamp = 0
        self.version_counter = 0
        #: Entries finished since the checkpoint last moved (the checkpoint can only move when some were).
        self.finished_since_checkpoint = 0

    # -- the bitmap ---------------------------------------------------------------------------------------

    def is_done(self, offset: int) -> bool:
        if offset < self.checkpoint:
            return True
        index = offset - self.checkpoint
        byte = index >> 3
        return byte < len(self._done) and bool(self._done[byte] & (1 << (index & 7)))

    def _set_done(self, offset: int) -> None:
        if offset < self.checkpoint:
            return
        index = offset - self.checkpoint
        byte = index >> 3
        if byte >= len(self._done):
            self._done.extend(bytes(byte + 1 - len(self._done)))
        self._done[byte] |= 1 << (index & 7)

    # -- opening ---------------------------------------------------------------------------------------

    def open(self) -> None:
        self._dir.mkdir(parents=True, exist_ok=True)
        raw = read_if_exists(self._dir / CHECKPOINT_FILE)
        if raw is not None:
            try:
                self.checkpoint = int(raw.decode("ascii").strip())
            except (UnicodeError, ValueError):
                raise OSError(f"the timer checkpoint {self._dir / CHECKPOINT_FILE} is unreadable") from None
        path = self._dir / LOG_FILE
        data = read_if_exists(path) or b""
        whole = len(data) - len(data) % _RECORD.size
        if whole != len(data):
            log.warning("dropping a torn record at the end of %s", path)
        for kind, offset, aux in _RECORD.iter_unpack(data[:whole]):
            if kind == _DONE:
                self._set_done(offset)
                self._intents.pop(offset, None)
            elif kind == _INTENT and not self.is_done(offset):
                self._intents[offset] = aux
        self._file = open(path, "r+b" if path.exists() else "w+b")
        self._file.truncate(whole)
        self._file.seek(whole)

    def size_bytes(self) -> int:
        """How many bytes the progress log holds."""
        return self._file.tell() if self._file is not None else 0

    def open_intents(self) -> list[tuple[int, int]]:
        return sorted((o, f) for o, f in self._intents.items() if not self.is_done(o))

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    # -- appending -------------------------------------------------------------------------------------

    def _append(self, records: bytes) -> None:
        file = self._file
        if file is None:
            raise OSError("the timer log is not open")
        file.write(records)
        file.flush()
        if self._sync:
            os.fsync(file.fileno())

    @property
    def sync(self) -> bool:
        """Appends are fsynced (SYNC_FLUSH): slow enough to belong off the event loop."""
        return self._sync

    def mark_intents(self, intents: list[tuple[int, int]]) -> None:
        """Record deliveries about to store their copies: (timer-queue offset, real queue end) each."""
        self._append(b"".join(_RECORD.pack(_INTENT, offset, real_from) for offset, real_from in intents))
        self._intents.update(intents)

    def mark_done(self, offsets: list[int]) -> None:
        """Record, in the given order, that these entries are finished (durable before returning)."""
        self._append(b"".join(_RECORD.pack(_DONE, o, 0) for o in offsets))
        for offset in offsets:
            self._set_done(offset)
            self._intents.pop(offset, None)
        self.finished_since_checkpoint += len(offsets)

    def advance_checkpoint(self, lowest_pending: int) -> None:
        """Move the checkpoint up to ``lowest_pending`` and rewrite the log without what it now covers."""
        self.finished_since_checkpoint = 0
        if lowest_pending <= self.checkpoint or self._file is None:
            return
        write_atomically(self._dir / CHECKPOINT_FILE, str(lowest_pending).encode("ascii"))
        self.version_timestamp = time.time_ns() // 1_000_000
        self.version_counter += 1
        kept: list[int] = [
            o for o in range(lowest_pending, self.checkpoint + len(self._done) * 8) if self.is_done(o)
        ]
        intents = {o: f for o, f in self._intents.items() if o >= lowest_pending}
        self.checkpoint = lowest_pending
        self._done = bytearray()
        for offset in kept:
            self._set_done(offset)
        self._intents = intents
        records = b"".join(_RECORD.pack(_DONE, o, 0) for o in kept)
        records += b"".join(_RECORD.pack(_INTENT, o, f) for o, f in intents.items())
        path = self._dir / LOG_FILE
        self._file.close()
        write_atomically(path, records, durable=True)
        self._file = open(path, "r+b")
        self._file.seek(0, os.SEEK_END)
