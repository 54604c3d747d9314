"""All consume queues of a store, keyed by (topic, queue id), found on disk at start and created on demand.

The queues share one bounded cache of open files (:class:`~broker.store.segment.OpenFileCache`): a broker
may have far more consume-queue files than descriptors, so a file is open only while recently used.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

from broker.store.consume_queue import ConsumeQueue
from broker.store.segment import OpenFileCache

log = logging.getLogger("broker.store.queue_table")


class QueueTable:
    def __init__(self, root: Path, entries_per_file: int, *, max_open_files: int | None = None) -> None:
        """``max_open_files``: how many consume-queue files stay open at most (None: a share of the
        descriptor limit, :func:`~broker.store.segment.default_open_files`)."""
        self.root = root
        self.entries_per_file = entries_per_file
        self.open_files = OpenFileCache(max_open_files)
        self._queues: dict[tuple[str, int], ConsumeQueue] = {}

    def load(self) -> None:
        """Find every ``<topic>/<queueId>`` directory under the consume-queue root and list its files,
        opening none of them (:meth:`broker.store.segment_queue.SegmentQueue.load`)."""
        if not self.root.is_dir():
            return
        for topic_dir in sorted(self.root.iterdir()):
            if not topic_dir.is_dir():
                continue
            for queue_dir in sorted(topic_dir.iterdir()):
                if not queue_dir.is_dir() or not queue_dir.name.isdigit():
                    continue
                queue = self._new_queue(topic_dir.name, int(queue_dir.name))
                queue.load()
                self._queues[(topic_dir.name, int(queue_dir.name))] = queue

    def get(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        return self._queues.get((topic, queue_id))

    def get_or_create(self, topic: str, queue_id: int) -> ConsumeQueue:
        queue = self._queues.get((topic, queue_id))
        if queue is None:
            queue = self._new_queue(topic, queue_id)
            self._queues[(topic, queue_id)] = queue
        return queue

    def _new_queue(self, topic: str, queue_id: int) -> ConsumeQueue:
        return ConsumeQueue(self.root, topic, queue_id, self.entries_per_file, open_files=self.open_files)

    def next_offset(self, topic: str, queue_id: int) -> int:
        """The queue offset the next message of this queue gets."""
        queue = self._queues.get((topic, queue_id))
        return queue.max_offset if queue is not None else 0

    def __iter__(self) -> Iterator[ConsumeQueue]:
        return iter(list(self._queues.values()))

    def __len__(self) -> int:
        return len(self._queues)

    def topics(self) -> dict[str, list[int]]:
        """Each topic with the ids of its queues, sorted."""
        result: dict[str, list[int]] = {}
        for topic, queue_id in sorted(self._queues):
            result.setdefault(topic, []).append(queue_id)
        return result

    def remove_topic(self, topic: str) -> int:
        """Delete every consume queue of ``topic`` from disk; returns how many there were."""
        doomed = [key for key in self._queues if key[0] == topic]
        for key in doomed:
            self._queues.pop(key).destroy()
        try:
            (self.root / topic).rmdir()
        except OSError:
            pass
        if doomed:
            log.info("deleted %d consume queues of topic %s", len(doomed), topic)
        return len(doomed)

    def close(self) -> None:
        for queue in self._queues.values():
            queue.close()
