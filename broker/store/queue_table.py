"""All consume queues of a store, keyed by (topic, queue id), found on disk at start and created on demand."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

from broker.store.consume_queue import ConsumeQueue

log = logging.getLogger("broker.store.queue_table")


class QueueTable:
    def __init__(self, root: Path, entries_per_file: int) -> None:
        self.root = root
        self.entries_per_file = entries_per_file
        self._queues: dict[tuple[str, int], ConsumeQueue] = {}

    def load(self) -> None:
        """Open every ``<topic>/<queueId>`` directory under the consume-queue root."""
        if not self.root.is_dir():
            return
        for topic_dir in sorted(self.root.iterdir()):
            if not topic_dir.is_dir():
                continue
            for queue_dir in sorted(topic_dir.iterdir()):
                if not queue_dir.is_dir() or not queue_dir.name.isdigit():
                    continue
                queue = ConsumeQueue(self.root, topic_dir.name, int(queue_dir.name), self.entries_per_file)
                queue.load()
                self._queues[(topic_dir.name, int(queue_dir.name))] = queue

    def get(self, topic: str, queue_id: int) -> ConsumeQueue | None:
        return self._queues.get((topic, queue_id))

    def get_or_create(self, topic: str, queue_id: int) -> ConsumeQueue:
        queue = self._queues.get((topic, queue_id))
        if queue is None:
            queue = ConsumeQueue(self.root, topic, queue_id, self.entries_per_file)
            self._queues[(topic, queue_id)] = queue
        return queue

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
