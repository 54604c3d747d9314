"""Shared plumbing of the broker's JSON config files (``config/*.json``): fastjson text, atomic rewrite,
Apache's ``.bak`` fallback on load, and the ``dataVersion`` stamp admin tools compare."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from broker.store.atomic_file import read_if_exists, write_atomically
from rocketmq_wire import fastjson
from rocketmq_wire.errors import CodecError

log = logging.getLogger("broker.store.json_config")


@dataclass(slots=True)
class DataVersion:
    """Apache's ``DataVersion``: bumped on every change so peers can tell whether they are up to date."""

    timestamp: int = 0
    counter: int = 0
    state_version: int = 0

    def bump(self, now_ms: int) -> None:
        self.timestamp = now_ms
        self.counter += 1

    def to_json(self) -> fastjson.Bean:
        return fastjson.Bean(
            {"counter": self.counter, "stateVersion": self.state_version, "timestamp": self.timestamp}
        )

    @classmethod
    def from_json(cls, value: object) -> DataVersion:
        if not isinstance(value, dict):
            return cls()
        return cls(
            timestamp=_as_int(value.get("timestamp")),
            counter=_as_int(value.get("counter")),
            state_version=_as_int(value.get("stateVersion")),
        )


def _as_int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def load_json_config(path: Path) -> dict[str, Any] | None:
    """The parsed file, falling back to the ``.bak`` copy Apache keeps; None if neither is usable."""
    for candidate in (path, path.with_name(path.name + ".bak")):
        data = read_if_exists(candidate)
        if not data or not data.strip():
            continue
        try:
            parsed = fastjson.loads(data)
        except CodecError:
            log.warning("config file %s is not valid JSON; ignoring it", candidate, exc_info=True)
            continue
        if isinstance(parsed, dict):
            return parsed
        log.warning("config file %s does not hold a JSON object; ignoring it", candidate)
    return None


def save_json_config(path: Path, value: fastjson.JsonValue) -> None:
    write_atomically(path, fastjson.dump_bytes(value))
