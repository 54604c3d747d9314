"""Committed consumer offsets, persisted as Apache's ``config/consumerOffset.json``.

The file maps ``"topic@group"`` to ``{queueId: offset}`` with bare integer keys, as fastjson writes the
Java ``ConcurrentMap<Integer, Long>``: ``{"offsetTable":{"TopicTest@g1":{0:12,1:3}}}``. An Apache broker
can load our file and we load its.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from broker.store.json_config import DataVersion, load_json_config, save_json_config
from rocketmq_wire import fastjson

log = logging.getLogger("broker.store.consumer_offsets")

FILE_NAME = "consumerOffset.json"
_SEPARATOR = "@"


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class ConsumerOffsetStore:
    """In-memory offset table with explicit persistence; the Broker calls :meth:`persist` periodically
    (Apache: every 5 s) and on shutdown. Safe to call from several threads."""

    def __init__(self, config_dir: Path, clock: Callable[[], int] = _now_ms) -> None:
        self.path = config_dir / FILE_NAME
        self._clock = clock
        self._lock = threading.Lock()
        self._table: dict[str, dict[int, int]] = {}
        self.data_version = DataVersion()
        self._dirty = False

    def load(self) -> None:
        parsed = load_json_config(self.path)
        table: dict[str, dict[int, int]] = {}
        if parsed is not None:
            raw = parsed.get("offsetTable")
            if isinstance(raw, dict):
                for key, queues in raw.items():
                    if not isinstance(key, str) or _SEPARATOR not in key or not isinstance(queues, dict):
                        continue
                    offsets: dict[int, int] = {}
                    for queue_id, offset in queues.items():
                        try:
                            offsets[int(queue_id)] = int(offset)
                        except (TypeError, ValueError):
                            log.warning("skipping malformed offset %r=%r of %s", queue_id, offset, key)
                    table[key] = offsets
            version = DataVersion.from_json(parsed.get("dataVersion"))
        else:
            version = DataVersion()
        with self._lock:
            self._table = table
            self.data_version = version
            self._dirty = False

    def persist(self) -> None:
        with self._lock:
            snapshot = {key: dict(queues) for key, queues in self._table.items()}
            version = self.data_version.to_json()
            self._dirty = False
        body: dict[fastjson.JsonKey, fastjson.JsonValue] = {}
        for key, queues in snapshot.items():
            body[key] = {queue_id: offset for queue_id, offset in sorted(queues.items())}
        save_json_config(self.path, fastjson.Bean({"dataVersion": version, "offsetTable": body}))

    def persist_if_dirty(self) -> bool:
        if not self._dirty:
            return False
        self.persist()
        return True

    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        key = f"{topic}{_SEPARATOR}{group}"
        with self._lock:
            queues = self._table.setdefault(key, {})
            if queues.get(queue_id) != offset:
                queues[queue_id] = offset
                self._dirty = True
                self.data_version.bump(self._clock())

    def merge(self, table: Mapping[str, Mapping[int, int]]) -> None:
        """Take entries of another broker's table (``"topic@group"`` keys), each replacing ours whole, as a
        slave copies its master's (Apache's ``putAll``); entries only we have are kept."""
        with self._lock:
            for key, queues in table.items():
                if _SEPARATOR not in key:
                    continue
                self._table[key] = {int(queue_id): int(offset) for queue_id, offset in queues.items()}
            if table:
                self._dirty = True
                self.data_version.bump(self._clock())

    def query_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, or -1 when the group never committed one for that queue (as Apache)."""
        with self._lock:
            return self._table.get(f"{topic}{_SEPARATOR}{group}", {}).get(queue_id, -1)

    def offsets(self, group: str, topic: str) -> dict[int, int]:
        with self._lock:
            return dict(self._table.get(f"{topic}{_SEPARATOR}{group}", {}))

    def table(self) -> dict[tuple[str, str], dict[int, int]]:
        """Every entry as ``(topic, group) -> {queue_id: offset}``."""
        with self._lock:
            result: dict[tuple[str, str], dict[int, int]] = {}
            for key, queues in self._table.items():
                topic, _, group = key.partition(_SEPARATOR)
                result[(topic, group)] = dict(queues)
            return result

    def groups_of_topic(self, topic: str) -> set[str]:
        return {group for (t, group) in self.table() if t == topic}

    def topics_of_group(self, group: str) -> set[str]:
        return {topic for (topic, g) in self.table() if g == group}

    def remove_group(self, group: str, topic: str | None = None) -> None:
        """Forget a group's offsets (for one topic, or all of them)."""
        with self._lock:
            doomed = [
                key
                for key in self._table
                if key.partition(_SEPARATOR)[2] == group
                and (topic is None or key.partition(_SEPARATOR)[0] == topic)
            ]
            self._forget(doomed)

    def remove_topic(self, topic: str) -> None:
        with self._lock:
            self._forget([key for key in self._table if key.partition(_SEPARATOR)[0] == topic])

    def _forget(self, keys: list[str]) -> None:
        for key in keys:
            del self._table[key]
        if keys:
            self._dirty = True
            self.data_version.bump(self._clock())
