"""Which groups consume which topic by POP (Apache's ``MessageRequestModeManager``), kept in
``config/messageRequestMode.json`` as Apache keeps it (the same JSON body), rewritten atomically on each
change before the change is answered."""

from __future__ import annotations

import logging
from pathlib import Path

from broker.store.atomic_file import read_if_exists, write_atomically
from rocketmq_wire.bodies.pop import MessageRequestModeSerializeWrapper, SetMessageRequestModeRequestBody

log = logging.getLogger("broker.pop.request_modes")

FILE_NAME = "messageRequestMode.json"


class MessageRequestModeManager:
    def __init__(self, config_dir: Path) -> None:
        self._path = config_dir / FILE_NAME
        self._table = MessageRequestModeSerializeWrapper()

    def load(self) -> None:
        """Read the saved table; an unreadable one stops the broker rather than silently switch groups back
        to PULL."""
        data = read_if_exists(self._path)
        if data is None:
            return
        self._table = MessageRequestModeSerializeWrapper.from_json(data)
        log.info("loaded the request modes of %d topic(s)", len(self._table.message_request_mode_map))

    def find(self, topic: str, group: str) -> SetMessageRequestModeRequestBody | None:
        return self._table.message_request_mode_map.get(topic, {}).get(group)

    def set(self, topic: str, group: str, body: SetMessageRequestModeRequestBody) -> None:
        """Record and save a group's mode; raises ``OSError`` (and keeps the old mode) when it could not be
        written."""
        groups = self._table.message_request_mode_map.setdefault(topic, {})
        previous = groups.get(group)
        groups[group] = body
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            write_atomically(self._path, self._table.to_json())
        except OSError:
            if previous is None:
                del groups[group]
            else:
                groups[group] = previous
            raise

    def wrapper(self) -> MessageRequestModeSerializeWrapper:
        return self._table
