"""Topic configs, persisted as Apache's ``config/topics.json``
(``{"dataVersion":{...},"topicConfigTable":{"name":{...}}}``).

Each config is kept as a plain mapping with Java's ``TopicConfig`` field names (``topicName``,
``readQueueNums``, ``writeQueueNums``, ``perm``, ``topicFilterType``, ``topicSysFlag``, ``order`` and, in
5.x, ``attributes``) because the typed ``TopicConfig`` body lives in :mod:`rocketmq_wire.bodies`, which
converts to and from this form; unknown fields read from an Apache file are kept and written back.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from broker.store.json_config import DataVersion, load_json_config, save_json_config
from rocketmq_wire import fastjson

log = logging.getLogger("broker.store.topic_configs")

FILE_NAME = "topics.json"

#: What Apache's ``TopicConfig`` constructor fills in when a field is absent.
TOPIC_CONFIG_DEFAULTS: Mapping[str, Any] = {
    "readQueueNums": 16,
    "writeQueueNums": 16,
    "perm": 6,
    "topicFilterType": "SINGLE_TAG",
    "topicSysFlag": 0,
    "order": False,
}


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class TopicConfigStore:
    """Topic name -> config mapping with explicit persistence; thread-safe."""

    def __init__(self, config_dir: Path, clock: Callable[[], int] = _now_ms) -> None:
        self.path = config_dir / FILE_NAME
        self._clock = clock
        self._lock = threading.Lock()
        self._table: dict[str, dict[str, Any]] = {}
        self.data_version = DataVersion()

    def load(self) -> None:
        parsed = load_json_config(self.path)
        table: dict[str, dict[str, Any]] = {}
        version = DataVersion()
        if parsed is not None:
            raw = parsed.get("topicConfigTable")
            if isinstance(raw, dict):
                for name, config in raw.items():
                    if isinstance(name, str) and isinstance(config, dict):
                        table[name] = {**TOPIC_CONFIG_DEFAULTS, **config, "topicName": name}
                    else:
                        log.warning("skipping malformed topic config %r in %s", name, self.path)
            version = DataVersion.from_json(parsed.get("dataVersion"))
        with self._lock:
            self._table = table
            self.data_version = version

    def persist(self) -> None:
        with self._lock:
            table: dict[fastjson.JsonKey, fastjson.JsonValue] = {
                name: fastjson.Bean(config) for name, config in self._table.items()
            }
            version = self.data_version.to_json()
        save_json_config(self.path, fastjson.Bean({"dataVersion": version, "topicConfigTable": table}))

    def get(self, topic: str) -> dict[str, Any] | None:
        with self._lock:
            config = self._table.get(topic)
            return dict(config) if config is not None else None

    def entry(self, topic: str) -> Mapping[str, Any] | None:
        """The table's own mapping for ``topic``, not a copy: never modify it. Entries are replaced whole
        on every change, never edited, so the same object means the same config (what a cache of
        conversions keys on)."""
        return self._table.get(topic)  # one dict read: atomic, no lock needed

    def put(self, config: Mapping[str, Any], *, persist: bool = True) -> None:
        """Create or replace a topic's config (``topicName`` names it) and, by default, persist at once
        as Apache does on every topic change."""
        name = config.get("topicName")
        if not isinstance(name, str) or not name:
            raise ValueError("a topic config needs a non-empty topicName")
        entry = {**TOPIC_CONFIG_DEFAULTS, **config}
        with self._lock:
            previous = self._table.get(name)
            self._table[name] = entry
            self.data_version.bump(self._clock())
        if persist:
            self._persist_or_undo(name, entry, previous)

    def remove(self, topic: str, *, persist: bool = True) -> bool:
        with self._lock:
            previous = self._table.pop(topic, None)
            if previous is not None:
                self.data_version.bump(self._clock())
        if previous is not None and persist:
            self._persist_or_undo(topic, None, previous)
        return previous is not None

    def _persist_or_undo(
        self, name: str, entry: dict[str, Any] | None, previous: dict[str, Any] | None
    ) -> None:
        """Persist a change, or take it back and raise: a topic change the caller is told failed must not
        go on being served from memory and then vanish at the next start."""
        try:
            self.persist()
        except OSError:
            with self._lock:
                if self._table.get(name) is entry:  # nobody changed this topic since
                    if previous is None:
                        self._table.pop(name, None)
                    else:
                        self._table[name] = previous
            log.error("could not save topic %s to %s; the change is undone", name, self.path)
            raise

    def bump_version(self) -> None:
        """A new data version with the table unchanged (not persisted, as in Apache)."""
        with self._lock:
            self.data_version.bump(self._clock())

    def replace_all(
        self, table: Mapping[str, Mapping[str, Any]], version: DataVersion, *, persist: bool = True
    ) -> None:
        """Take another broker's whole table and its data version (a slave copying its master's)."""
        copied: dict[str, dict[str, Any]] = {}
        for name, config in table.items():
            copied[name] = {**TOPIC_CONFIG_DEFAULTS, **config, "topicName": name}
        with self._lock:
            self._table = copied
            self.data_version = DataVersion(version.timestamp, version.counter, version.state_version)
        if persist:
            self.persist()

    def topics(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return {name: dict(config) for name, config in self._table.items()}

    def __contains__(self, topic: object) -> bool:
        with self._lock:
            return topic in self._table

    def __len__(self) -> int:
        with self._lock:
            return len(self._table)
