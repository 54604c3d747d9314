"""The slave joins the contiguous transfers one read brings into one append, never across a commit-log
file's end, and still drops the link on a transfer that does not continue its log."""

from __future__ import annotations

import dataclasses

import pytest

from broker.config import BrokerConfig
from broker.ha.protocol import Transfer
from broker.ha.slave import ReplicationSlave, _LinkBroken

FILE = 100


@dataclasses.dataclass
class _Config:
    commit_log_segment_size: int = FILE


class _Store:
    """Records the appends a slave makes; its log ends where the last one did."""

    def __init__(self, end: int = 0) -> None:
        self.config = _Config()
        self.max_physical_offset = end
        self.appends: list[tuple[int, bytes]] = []

    def append_replicated(self, offset: int, data: bytes) -> list[object]:
        assert offset % FILE + len(data) <= FILE, "an append crossed a file's end"
        self.appends.append((offset, data))
        self.max_physical_offset = offset + len(data)
        return []


def _slave(store: _Store) -> ReplicationSlave:
    return ReplicationSlave(store, BrokerConfig())  # type: ignore[arg-type]


def test_contiguous_transfers_become_one_append_per_file() -> None:
    store = _Store()
    pieces = [(0, b"a" * 30), (30, b"b" * 30), (60, b""), (60, b"c" * 40), (100, b"d" * 20), (120, b"e" * 10)]
    _slave(store)._apply([Transfer(offset, body) for offset, body in pieces])
    assert store.appends == [(0, b"a" * 30 + b"b" * 30 + b"c" * 40), (100, b"d" * 20 + b"e" * 10)]
    assert store.max_physical_offset == 130


def test_a_heartbeat_alone_appends_nothing() -> None:
    store = _Store(end=250)
    _slave(store)._apply([Transfer(250, b"")])
    assert store.appends == []


def test_a_gap_inside_one_read_drops_the_link_after_storing_what_came_before() -> None:
    store = _Store(end=200)
    with pytest.raises(_LinkBroken, match="offset 240"):
        _slave(store)._apply([Transfer(200, b"x" * 20), Transfer(240, b"y" * 5)])
    assert store.appends == [(200, b"x" * 20)]
