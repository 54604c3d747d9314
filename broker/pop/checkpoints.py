"""What a broker remembers about popped messages: per group and queue, how far popping got and the open
checkpoints (messages handed out and not yet acknowledged or revived).

Apache keeps this in its revive topic (checkpoint and ack messages, merged in memory by
``PopBufferMergeService``). Here the table is small -- only open checkpoints -- so each new version of it,
one JSON document, is made durable before a pop, ack or change is answered: a broker never answers for a
checkpoint it could not read back after a crash. Versions are appended to ``popCheckpoints.journal``
(one synchronous write each, :mod:`broker.store.snapshot_journal`) and folded into ``popCheckpoints.json``
now and then.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path

from broker.store.snapshot_journal import SnapshotJournal

log = logging.getLogger("broker.pop.checkpoints")

FILE_NAME = "popCheckpoints.json"
JOURNAL_NAME = "popCheckpoints.journal"


@dataclasses.dataclass(slots=True)
class Checkpoint:
    """Messages of one queue handed out by one pop (or moved by one change of invisible time)."""

    start_offset: int
    pop_time: int
    invisible_time: int
    offsets: list[int]
    acked: set[int] = dataclasses.field(default_factory=set)
    revive_qid: int = 0

    @property
    def visible_at(self) -> int:
        return self.pop_time + self.invisible_time

    def pending(self) -> list[int]:
        """Offsets neither acknowledged nor revived yet."""
        return [o for o in self.offsets if o not in self.acked]

    @property
    def done(self) -> bool:
        return not self.pending()

    def to_json(self) -> dict[str, object]:
        return {
            "startOffset": self.start_offset,
            "popTime": self.pop_time,
            "invisibleTime": self.invisible_time,
            "offsets": self.offsets,
            "acked": sorted(self.acked),
            "reviveQid": self.revive_qid,
        }

    @classmethod
    def from_json(cls, data: dict[str, object]) -> Checkpoint:
        def number(key: str) -> int:
            value = data[key]
            if not isinstance(value, int):
                raise ValueError(f"checkpoint field {key} is not a number: {value!r}")
            return value

        def numbers(key: str) -> list[int]:
            value = data.get(key, [])
            if not isinstance(value, list) or not all(isinstance(v, int) for v in value):
                raise ValueError(f"checkpoint field {key} is not a list of numbers: {value!r}")
            return list(value)

        return cls(
            start_offset=number("startOffset"),
            pop_time=number("popTime"),
            invisible_time=number("invisibleTime"),
            offsets=numbers("offsets"),
            acked=set(numbers("acked")),
            revive_qid=number("reviveQid"),
        )


@dataclasses.dataclass(slots=True)
class QueuePopState:
    """One group's popping of one queue: the next offset to hand out and the open checkpoints."""

    next_offset: int
    checkpoints: list[Checkpoint] = dataclasses.field(default_factory=list)
    #: Orderly pops: how many times each offset not yet consumed was handed out (Apache's
    #: ``ConsumerOrderInfoManager`` counts, which become the messages' reconsume times).
    deliveries: dict[int, int] = dataclasses.field(default_factory=dict)

    def find(self, start_offset: int, pop_time: int) -> Checkpoint | None:
        for ck in self.checkpoints:
            if ck.start_offset == start_offset and ck.pop_time == pop_time:
                return ck
        return None

    def committable_offset(self) -> int:
        """The consumer offset this queue may commit: below it everything was acknowledged or revived."""
        starts = [min(ck.pending()) for ck in self.checkpoints if not ck.done]
        return min([*starts, self.next_offset])


#: (group, topic, queue id) -> its state.
QueueKey = tuple[str, str, int]


class CheckpointTable:
    """The open checkpoints of every group, saved under ``config_dir`` (``popCheckpoints.json`` and its
    journal)."""

    def __init__(self, config_dir: Path, *, sync: bool = True) -> None:
        self._path = config_dir / FILE_NAME
        self._file = SnapshotJournal(self._path, config_dir / JOURNAL_NAME, sync=sync)
        self.queues: dict[QueueKey, QueuePopState] = {}

    @property
    def sync(self) -> bool:
        """Each write reaches the disk before it returns (else the page cache: see the journal's note)."""
        return self._file.sync

    def load(self) -> None:
        """Read the table a previous run saved; an unreadable file stops the broker (it would otherwise
        silently forget in-flight messages)."""
        data = self._file.read()
        self.queues = {}
        if data is None:
            return
        try:
            table = json.loads(data)
            for entry in table["queues"]:
                key = (str(entry["group"]), str(entry["topic"]), int(entry["queueId"]))
                self.queues[key] = QueuePopState(
                    next_offset=int(entry["nextOffset"]),
                    checkpoints=[Checkpoint.from_json(ck) for ck in entry["checkpoints"]],
                    deliveries={int(o): int(n) for o, n in entry.get("deliveries", {}).items()},
                )
        except (ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{self._path} does not read as a POP checkpoint table: {exc}") from exc
        log.info("loaded POP state of %d queue(s) from %s", len(self.queues), self._path)

    def save(self) -> None:
        """Write the table durably; raises ``OSError`` when it could not be written."""
        self.write(self.snapshot())

    def snapshot(self) -> bytes:
        """The table as :meth:`write` stores it, as it is now."""
        entries = [
            {
                "group": group,
                "topic": topic,
                "queueId": queue_id,
                "nextOffset": state.next_offset,
                "checkpoints": [ck.to_json() for ck in state.checkpoints],
                "deliveries": {str(o): n for o, n in state.deliveries.items()},
            }
            for (group, topic, queue_id), state in self.queues.items()
        ]
        return json.dumps({"queues": entries}).encode()

    def write(self, data: bytes) -> None:
        """Replace the file with ``data`` (a :meth:`snapshot`), durably; ``OSError`` when it failed. Safe in
        a worker thread: it touches the file only."""
        self._file.write(data)

    def close(self) -> None:
        self._file.close()
