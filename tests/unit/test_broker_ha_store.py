"""The store's side of replication, without sockets: a slave store fed a master's commit log in arbitrary
pieces ends up with the same files and queues, refuses what does not continue its log, refuses puts, and
recovers from a record or a file tail cut short."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from broker.store import BrokerRole, MessageStore, PutMessageStatus, StoreConfig
from rocketmq_wire.message.properties import encode_properties
from rocketmq_wire.message.stored import MessageExt

SEGMENT = 16 * 1024
CONFIG = StoreConfig(commit_log_segment_size=SEGMENT, consume_queue_entries_per_file=50)
SLAVE_CONFIG = StoreConfig(
    commit_log_segment_size=SEGMENT, consume_queue_entries_per_file=50, broker_role=BrokerRole.SLAVE
)


def _message(i: int, size: int) -> MessageExt:
    return MessageExt(
        topic=f"Topic{i % 2}",
        body=bytes((i + j) % 256 for j in range(size)),
        queue_id=i % 3,
        properties_string=encode_properties({"TAGS": f"T{i % 4}", "KEYS": f"key{i}"}),
        born_host="127.0.0.1:4000",
        store_host="127.0.0.1:10911",
    )


def _fill(master: MessageStore, count: int, seed: int = 7) -> None:
    sizes = random.Random(seed)
    for i in range(count):
        assert master.put_message(_message(i, sizes.randint(1, 3000))).ok


def _copy(master: MessageStore, slave: MessageStore, start: int, cuts: random.Random) -> int:
    """Feed the slave what the master would stream from ``start``, in pieces of random size."""
    offset = start
    while True:
        chunk = master.read_commit_log(offset, cuts.randint(1, 5000))
        if chunk is None:
            return offset
        slave.append_replicated(offset, chunk)
        offset += len(chunk)


def _files(store: MessageStore, folder: str = "commitlog") -> dict[str, bytes]:
    root = store.root / folder
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_pieces_of_any_size_rebuild_the_same_log_and_queues(tmp_path: Path, seed: int) -> None:
    with MessageStore(tmp_path / "m", CONFIG) as master, MessageStore(tmp_path / "s", SLAVE_CONFIG) as slave:
        _fill(master, 60, seed)
        assert len(_files(master)) >= 4
        end = _copy(master, slave, 0, random.Random(seed))
        assert end == master.max_physical_offset == slave.max_physical_offset
        assert slave.dispatch_behind_bytes == 0
        assert _files(slave) == _files(master)
        for topic in ("Topic0", "Topic1"):
            for queue_id in range(3):
                assert slave.get_max_offset(topic, queue_id) == master.get_max_offset(topic, queue_id)
                got = slave.get_messages(topic, queue_id, 0, 1000, max_bytes=1 << 30)
                want = master.get_messages(topic, queue_id, 0, 1000, max_bytes=1 << 30)
                assert got.messages == want.messages and got.message_count > 0
        assert len(slave.query_messages("Topic1", "key7", 10).messages) == 1
    # Both directories hold the same consume queues once flushed and closed.
    assert _files(MessageStore(tmp_path / "s", SLAVE_CONFIG), "consumequeue") == _files(
        MessageStore(tmp_path / "m", CONFIG), "consumequeue"
    )


def test_a_partial_record_waits_for_the_rest(tmp_path: Path) -> None:
    with MessageStore(tmp_path / "m", CONFIG) as master, MessageStore(tmp_path / "s", SLAVE_CONFIG) as slave:
        assert master.put_message(_message(0, 500)).ok
        data = master.read_commit_log(0, SEGMENT)
        assert data is not None
        assert slave.append_replicated(0, data[:100]) == []
        assert slave.get_max_offset("Topic0", 0) == 0 and slave.dispatch_behind_bytes == 100
        [record] = slave.append_replicated(100, data[100:])
        assert record.body == _message(0, 500).body and slave.get_max_offset("Topic0", 0) == 1


def test_bytes_that_do_not_continue_the_log_are_refused(tmp_path: Path) -> None:
    with MessageStore(tmp_path / "m", CONFIG) as master, MessageStore(tmp_path / "s", SLAVE_CONFIG) as slave:
        _fill(master, 3)
        data = master.read_commit_log(0, SEGMENT)
        assert data is not None
        with pytest.raises(ValueError, match="inside a file"):
            slave.append_replicated(100, data)  # an empty log starts on a file boundary
        slave.append_replicated(0, data[:50])
        with pytest.raises(ValueError, match="do not continue"):
            slave.append_replicated(40, data[40:])
        with pytest.raises(ValueError, match="mappedFileSizeCommitLog"):
            slave.append_replicated(50, bytes(SEGMENT))  # larger than what is left of the file
        assert slave.max_physical_offset == 50


def test_an_empty_slave_may_start_at_any_file(tmp_path: Path) -> None:
    with MessageStore(tmp_path / "m", CONFIG) as master, MessageStore(tmp_path / "s", SLAVE_CONFIG) as slave:
        _fill(master, 40)
        last_file = master.max_physical_offset - master.max_physical_offset % SEGMENT
        assert last_file > 0
        _copy(master, slave, last_file, random.Random(5))
        assert slave.max_physical_offset == master.max_physical_offset
        assert slave.min_physical_offset == last_file
        name = f"{last_file:020d}"
        assert _files(slave) == {name: _files(master)[name]}


def test_a_slave_store_refuses_puts(tmp_path: Path) -> None:
    with MessageStore(tmp_path / "s", SLAVE_CONFIG) as slave:
        assert slave.put_message(_message(0, 10)).status is PutMessageStatus.SERVICE_NOT_AVAILABLE
        assert slave.max_physical_offset == 0


def test_reopened_slave_cuts_a_torn_record_and_continues(tmp_path: Path) -> None:
    with MessageStore(tmp_path / "m", CONFIG) as master:
        _fill(master, 10)
        first = master.read_commit_log(0, SEGMENT)
        assert first is not None
        with MessageStore(tmp_path / "s", SLAVE_CONFIG) as slave:
            slave.append_replicated(0, first[: len(first) - 30])  # the last record is cut short
            kept = slave.max_physical_offset
        with MessageStore(tmp_path / "s", SLAVE_CONFIG) as slave:
            resumed = slave.max_physical_offset
            assert resumed < kept  # the torn record is gone; the master sends it again from here
            _copy(master, slave, resumed, random.Random(1))
            assert _files(slave) == _files(master)
            assert slave.get_max_offset("Topic0", 0) == master.get_max_offset("Topic0", 0)


def test_reopened_slave_with_a_file_tail_in_flight_resumes_at_the_next_file(tmp_path: Path) -> None:
    with MessageStore(tmp_path / "m", CONFIG) as master:
        _fill(master, 30)
        assert master.max_physical_offset > SEGMENT
        first = master.read_commit_log(0, SEGMENT)
        assert first is not None and len(first) == SEGMENT  # the whole first file, marker and zeros
        marker = first.rstrip(b"\0")
        with MessageStore(tmp_path / "s", SLAVE_CONFIG) as slave:
            # The end-of-file marker arrived, the zeros after it did not (yet).
            slave.append_replicated(0, first[: len(marker) + 100])
        with MessageStore(tmp_path / "s", SLAVE_CONFIG) as slave:
            assert slave.max_physical_offset == SEGMENT
            _copy(master, slave, SEGMENT, random.Random(2))
            assert _files(slave) == _files(master)
            for queue_id in range(3):
                assert slave.get_max_offset("Topic1", queue_id) == master.get_max_offset("Topic1", queue_id)
