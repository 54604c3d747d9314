"""The set of index files in ``index/``: which one takes new keys, which ones a query reads, which expire.

Files are named by their creation time (``yyyyMMddHHmmssSSS``, as Apache names them) so name order is age
order. Keys are indexed as ``topic#key`` for every key of the KEYS property and for the UNIQ_KEY, so one
lookup serves both QUERY_MESSAGE flavours.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from broker.store.index_file import IndexFile

log = logging.getLogger("broker.store.index_service")


def index_key(topic: str, key: str) -> str:
    return f"{topic}#{key}"


def _file_name(timestamp_ms: int) -> str:
    seconds, millis = divmod(timestamp_ms, 1000)
    return time.strftime("%Y%m%d%H%M%S", time.localtime(seconds)) + f"{millis:03d}"


class IndexService:
    def __init__(self, directory: Path, slot_count: int, entry_count: int, clock: Callable[[], int]) -> None:
        self.directory = directory
        self.slot_count = slot_count
        self.entry_count = entry_count
        self._clock = clock
        self._files: list[IndexFile] = []
        #: Set by :meth:`load` when the files on disk had to be discarded.
        self.needs_rebuild = False

    def load(self) -> None:
        """Open the index files; if any is unusable, drop them all and ask for a rebuild.

        A file of another size (the slot or entry count changed) or an unreadable one cannot be read
        alongside the others, and keys indexed in one file can only be re-added in order, so the whole
        index is rebuilt from the commit log (:attr:`needs_rebuild`).
        """
        if not self.directory.is_dir():
            return
        paths = sorted(p for p in self.directory.iterdir() if p.is_file() and p.name.isdigit())
        for path in paths:
            try:
                self._files.append(IndexFile(path, self.slot_count, self.entry_count))
            except (OSError, ValueError):
                log.warning("index file %s is unusable; rebuilding the whole index", path, exc_info=True)
                self.needs_rebuild = True
                break
        if self.needs_rebuild:
            for index in self._files:
                index.close()
            self._files = []
            for path in paths:
                path.unlink(missing_ok=True)

    @property
    def files(self) -> list[IndexFile]:
        return list(self._files)

    @property
    def last_indexed_offset(self) -> int:
        """Commit-log offset of the newest indexed message, -1 when nothing is indexed."""
        for index in reversed(self._files):
            if not index.is_empty:
                return index.end_phy_offset
        return -1

    def drop_from(self, phy_offset: int) -> int | None:
        """Delete the newest files that index anything at or past ``phy_offset``.

        Returns the commit-log offset re-indexing must start from (the first message of the oldest file
        dropped), or None if nothing was dropped.
        """
        resume: int | None = None
        while self._files and not self._files[-1].is_empty and self._files[-1].end_phy_offset >= phy_offset:
            index = self._files.pop()
            resume = index.begin_phy_offset
            index.destroy()
        while self._files and self._files[-1].is_empty:
            self._files.pop().destroy()
        return resume

    def put(self, keys: list[str], phy_offset: int, store_timestamp: int) -> None:
        """Index one message under the given full keys (``topic#key``)."""
        self.put_entries([(key, phy_offset, store_timestamp) for key in keys])

    def put_entries(self, entries: Sequence[tuple[str, int, int]]) -> None:
        """Index (full key, commit-log offset, store timestamp) entries, in commit-log order."""
        remaining = entries
        while remaining:
            index = self._writable_file()
            written = index.put_entries(remaining)
            remaining = remaining[written:]

    def _writable_file(self) -> IndexFile:
        last = self._files[-1] if self._files else None
        if last is not None and not last.is_full:
            return last
        self.directory.mkdir(parents=True, exist_ok=True)
        now = self._clock()
        path = self.directory / _file_name(now)
        while path.exists() or (self._files and path.name <= self._files[-1].path.name):
            now += 1
            path = self.directory / _file_name(now)
        index = IndexFile.create(
            path,
            self.slot_count,
            self.entry_count,
            after_phy_offset=last.end_phy_offset if last is not None else 0,
            after_timestamp=last.end_timestamp if last is not None else 0,
        )
        # The full file is left for the periodic checkpoint to fsync: an fsync here would stall the append.
        self._files.append(index)
        return index

    def lookup(self, topic: str, key: str, max_results: int, begin: int, end: int) -> list[int]:
        """Candidate commit-log offsets, newest first, for ``key`` of ``topic`` stored within [begin, end]."""
        full_key = index_key(topic, key)
        found: list[int] = []
        for index in reversed(self._files):
            if len(found) >= max_results:
                break
            if index.overlaps(begin, end):
                found.extend(index.lookup(full_key, max_results - len(found), begin, end))
            if index.begin_timestamp < begin:
                break
        return found

    def delete_expired(self, min_phy_offset: int) -> int:
        """Delete files (never the newest) whose every entry points before the commit log's first byte."""
        removed = 0
        while len(self._files) > 1 and self._files[0].end_phy_offset < min_phy_offset:
            self._files.pop(0).destroy()
            removed += 1
        return removed

    def flush(self) -> None:
        for index in list(self._files):
            index.flush()

    def close(self) -> None:
        for index in self._files:
            index.close()
