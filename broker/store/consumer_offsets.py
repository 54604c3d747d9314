"""Committed consumer offsets, persisted as Apache's ``config/consumerOffset.json``.

The file maps ``"topic@group"`` to ``{queueId: offset}`` with bare integer keys, as fastjson writes the
Java ``ConcurrentMap<Integer, Long>``: ``{"offsetTable":{"TopicTest@g1":{0:12,1:3}}}``. An Apache broker
can load our file and we load its.

The whole table is one file, so one entry Java could not hold (a queue id beyond an ``int``, an offset beyond
a ``long``) would make every later write of it fail, or make the file one Apache cannot load: such a value is
refused when it is committed, and skipped with a log line wherever else it could come from (a file, a
master's table), so that it never stops the other groups' offsets from being saved.
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

#: Java's ``Integer`` (queue ids) and ``Long`` (offsets).
_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


def _storable(queue_id: object, offset: object) -> bool:
    """Whether the entry is one Java's ``ConcurrentMap<Integer, Long>`` holds (and fastjson writes)."""
    return (
        type(queue_id) is int
        and type(offset) is int
        and _INT_MIN <= queue_id <= _INT_MAX
        and _LONG_MIN <= offset <= _LONG_MAX
    )


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _entry(queue_id: object, offset: object) -> tuple[int, int] | None:
    """A read entry as numbers (digit strings too, as Java reads them), or None when Java could not hold
    it."""
    if not isinstance(queue_id, int | str) or not isinstance(offset, int | str):
        return None
    if isinstance(queue_id, bool) or isinstance(offset, bool):
        return None
    try:
        entry = int(queue_id), int(offset)
    except ValueError:
        return None
    return entry if _storable(*entry) else None


def _queue_order(entry: tuple[object, object]) -> tuple[int, int]:
    """Queue ids in numeric order; anything else (never saved) after them."""
    queue_id = entry[0]
    return (0, queue_id) if type(queue_id) is int else (1, 0)


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
                        entry = _entry(queue_id, offset)
                        if entry is None:
                            log.warning("skipping malformed offset %r=%r of %s", queue_id, offset, key)
                        else:
                            offsets[entry[0]] = entry[1]
                    table[key] = offsets
            version = DataVersion.from_json(parsed.get("dataVersion"))
            stamps = (version.timestamp, version.counter, version.state_version)
            if not all(_LONG_MIN <= stamp <= _LONG_MAX for stamp in stamps):
                log.warning("%s: dataVersion %r is beyond Java's long: starting a new one", self.path, stamps)
                version = DataVersion()
        else:
            version = DataVersion()
        with self._lock:
            self._table = table
            self.data_version = version
            self._dirty = False

    def persist(self) -> None:
        """Write the table; an entry Java could not hold is left out (with a log line), never the rest.

        A failed write raises, and leaves the table marked dirty so that the next periodic save tries again.
        """
        with self._lock:
            snapshot = {key: dict(queues) for key, queues in self._table.items()}
            version = self.data_version.to_json()
            self._dirty = False
        body: dict[fastjson.JsonKey, fastjson.JsonValue] = {}
        for key, queues in snapshot.items():
            if not isinstance(key, str):
                log.error("not saving the offsets under the key %r: not a topic@group name", key)
                continue
            kept: dict[fastjson.JsonKey, fastjson.JsonValue] = {}
            for queue_id, offset in sorted(queues.items(), key=_queue_order):
                if _storable(queue_id, offset):
                    kept[queue_id] = offset
                else:
                    log.error("not saving the offset %r=%r of %s: Java cannot hold it", queue_id, offset, key)
            body[key] = kept
        try:
            save_json_config(self.path, fastjson.Bean({"dataVersion": version, "offsetTable": body}))
        except BaseException:
            with self._lock:
                self._dirty = True
            raise

    def persist_if_dirty(self) -> bool:
        if not self._dirty:
            return False
        self.persist()
        return True

    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """Record a group's offset; raises :class:`ValueError` (and logs) for a queue id that is no Java
        ``int`` or an offset that is no Java ``long``, which would poison the file."""
        if not _storable(queue_id, offset):
            log.warning(
                "refusing the offset %r=%r of %s@%s: Java cannot hold it", queue_id, offset, topic, group
            )
            raise ValueError(f"offset {offset!r} of queue {queue_id!r} is outside Java's int/long range")
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
                offsets: dict[int, int] = {}
                for queue_id, offset in queues.items():
                    entry = _entry(queue_id, offset)
                    if entry is None:
                        log.warning("skipping offset %r=%r of %s from a peer's table", queue_id, offset, key)
                    else:
                        offsets[entry[0]] = entry[1]
                self._table[key] = offsets
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
