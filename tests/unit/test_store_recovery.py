"""Recovery: restarts keep everything, torn tails are cut, derived files are rebuilt without duplicates.

A crash is simulated by copying the directory of a store that is still open: the copy holds exactly what
the files held at that moment (the page cache survives a process crash), with no final checkpoint.
"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from broker.store import GetMessageStatus, MessageStore, StoreConfig
from broker.store.checkpoint import Checkpoint, load_checkpoint
from rocketmq_wire.message.properties import encode_properties
from rocketmq_wire.message.stored import MessageExt, decode_messages

SEGMENT = 32 * 1024
CONFIG = StoreConfig(
    commit_log_segment_size=SEGMENT,
    consume_queue_entries_per_file=16,
    max_hash_slot_num=32,
    max_index_num=40,
    max_transfer_count_on_message=10_000,
    max_transfer_bytes_on_message=64 * 1024 * 1024,
)


def message(queue_id: int, body: bytes, topic: str = "TopicR") -> MessageExt:
    """A message keyed by its body up to the first dot (bodies are padded with dots to vary sizes)."""
    name = body.split(b".")[0].decode()
    return MessageExt(
        topic=topic,
        body=body,
        queue_id=queue_id,
        properties_string=encode_properties({"KEYS": f"key-{name} shared", "TAGS": "t"}),
        born_host="127.0.0.1:1234",
    )


def fill(store: MessageStore, count: int, start: int = 0, queues: int = 3) -> list[int]:
    offsets = []
    for i in range(start, start + count):
        result = store.put_message(message(i % queues, b"m%05d" % i + b"." * (i % 200)))
        assert result.ok
        offsets.append(result.wrote_offset)
    return offsets


def queue_bodies(store: MessageStore, queue_id: int, topic: str = "TopicR") -> list[bytes]:
    result = store.get_messages(topic, queue_id, store.get_min_offset(topic, queue_id), 100_000)
    if result.status is not GetMessageStatus.FOUND:
        return []
    decoded = decode_messages(result.body)
    assert [m.queue_offset for m in decoded] == list(
        range(result.min_offset, result.min_offset + len(decoded))
    )
    return [m.body.split(b".")[0] for m in decoded]


def expected(count: int, queue_id: int, queues: int = 3) -> list[bytes]:
    return [b"m%05d" % i for i in range(count) if i % queues == queue_id]


def crash_copy(store: MessageStore, destination: Path) -> Path:
    shutil.copytree(store.root, destination)
    return destination


def test_restart_keeps_everything(tmp_path: Path) -> None:
    with MessageStore(tmp_path, CONFIG) as store:
        fill(store, 400)
        end = store.max_physical_offset
    with MessageStore(tmp_path, CONFIG) as store:
        assert store.recovery is not None and store.recovery.redispatched_records == 0
        assert store.max_physical_offset == end
        for queue_id in range(3):
            assert queue_bodies(store, queue_id) == expected(400, queue_id)
        assert len(store.query_messages("TopicR", "key-m00123", 10).messages) == 1
        next_result = store.put_message(message(1, b"after"))
        assert next_result.wrote_offset >= end
        assert next_result.queue_offset == len(expected(400, 1))


def test_crash_after_checkpoint_redispatches_the_tail(tmp_path: Path) -> None:
    store = MessageStore(tmp_path / "live", CONFIG)
    store.open()
    fill(store, 100)
    store.checkpoint()
    fill(store, 150, start=100)
    copy = crash_copy(store, tmp_path / "crashed")
    store.close()
    with MessageStore(copy, CONFIG) as recovered:
        assert recovered.recovery is not None
        assert recovered.recovery.redispatched_records >= 150
        assert not recovered.recovery.torn_tail
        for queue_id in range(3):
            assert queue_bodies(recovered, queue_id) == expected(250, queue_id)
        found = recovered.query_messages("TopicR", "shared", 64)
        assert len(found.messages) == 64
        assert len({m.commit_log_offset for m in decode_messages(found.body)}) == 64


@pytest.mark.parametrize("tail", ["garbage", "half-record", "bad-crc"])
def test_torn_tail_is_cut(tmp_path: Path, tail: str) -> None:
    with MessageStore(tmp_path, CONFIG) as store:
        fill(store, 50)
        end = store.max_physical_offset
        probe = store.put_message(message(0, b"probe"))
        record = store.lookup_message_by_physical_offset(probe.wrote_offset)
        assert record is not None
    segment = tmp_path / "commitlog" / f"{end - end % SEGMENT:020d}"
    with open(segment, "r+b") as f:
        f.seek(end % SEGMENT)
        if tail == "garbage":
            f.write(bytes(range(1, 200)))
        elif tail == "half-record":
            f.write(record[: len(record) // 2] + b"\0" * len(record))
        else:
            f.write(record[:-3] + bytes([record[-3] ^ 0xFF]) + record[-2:])
    # Re-checkpoint at the old end, as if the probe had been appended after the last checkpoint.
    (tmp_path / "checkpoint").write_bytes(Checkpoint(end).encode())
    with MessageStore(tmp_path, CONFIG) as store:
        assert store.recovery is not None and store.recovery.torn_tail
        assert store.max_physical_offset == end
        assert queue_bodies(store, 0) == expected(50, 0)
        assert store.get_max_offset("TopicR", 0) == len(expected(50, 0))
        again = store.put_message(message(0, b"again"))
        assert (again.wrote_offset, again.queue_offset) == (end, len(expected(50, 0)))
    with MessageStore(tmp_path, CONFIG) as store:
        assert queue_bodies(store, 0) == [*expected(50, 0), b"again"]


def test_consume_queue_entries_past_a_cut_are_removed(tmp_path: Path) -> None:
    store = MessageStore(tmp_path / "live", CONFIG)
    store.open()
    fill(store, 60)
    store.checkpoint()
    offsets = fill(store, 40, start=60)
    copy = crash_copy(store, tmp_path / "crashed")
    store.close()
    # Corrupt message 80: it and everything after it must vanish, including their queue entries,
    # which the crashed process had already written.
    victim = offsets[20]
    segment = copy / "commitlog" / f"{victim - victim % SEGMENT:020d}"
    data = bytearray(segment.read_bytes())
    data[victim % SEGMENT + 4] ^= 0x55  # the magic
    segment.write_bytes(bytes(data))
    with MessageStore(copy, CONFIG) as recovered:
        assert recovered.max_physical_offset == victim
        for queue_id in range(3):
            assert queue_bodies(recovered, queue_id) == expected(80, queue_id)
        assert recovered.get_max_offset("TopicR", 2) == len(expected(80, 2))
        assert recovered.query_messages("TopicR", "key-m00085", 4).messages == []
        assert len(recovered.query_messages("TopicR", "key-m00079", 4).messages) == 1


def test_missing_checkpoint_rebuilds_queues_and_index(tmp_path: Path) -> None:
    with MessageStore(tmp_path, CONFIG) as store:
        fill(store, 300)
    (tmp_path / "checkpoint").unlink()
    shutil.rmtree(tmp_path / "consumequeue")
    shutil.rmtree(tmp_path / "index")
    with MessageStore(tmp_path, CONFIG) as store:
        assert store.recovery is not None and store.recovery.redispatched_records == 300
        for queue_id in range(3):
            assert queue_bodies(store, queue_id) == expected(300, queue_id)
        assert len(store.query_messages("TopicR", "key-m00007", 5).messages) == 1


def test_missing_checkpoint_does_not_duplicate_queue_entries(tmp_path: Path) -> None:
    with MessageStore(tmp_path, CONFIG) as store:
        fill(store, 120)
    (tmp_path / "checkpoint").unlink()
    with MessageStore(tmp_path, CONFIG) as store:
        for queue_id in range(3):
            assert queue_bodies(store, queue_id) == expected(120, queue_id)
            assert store.get_max_offset("TopicR", queue_id) == 40
        shared = store.query_messages("TopicR", "shared", 64)
        offsets = [m.commit_log_offset for m in decode_messages(shared.body)]
        assert len(offsets) == len(set(offsets)) == 64


def test_unreadable_checkpoint_is_ignored(tmp_path: Path) -> None:
    with MessageStore(tmp_path, CONFIG) as store:
        fill(store, 30)
    (tmp_path / "checkpoint").write_bytes(b"\x07" * 4096)
    assert load_checkpoint(tmp_path) is None
    with MessageStore(tmp_path, CONFIG) as store:
        assert store.recovery is not None and store.recovery.checkpoint_offset == 0
        assert queue_bodies(store, 1) == expected(30, 1)


def test_checkpoint_keeps_apache_fields(tmp_path: Path) -> None:
    clock_value = 1_650_000_000_123
    with MessageStore(tmp_path, CONFIG, clock=lambda: clock_value) as store:
        fill(store, 3)
        end = store.max_physical_offset
    data = (tmp_path / "checkpoint").read_bytes()
    assert len(data) == 4096
    assert struct.unpack_from(">qqq", data, 0) == (clock_value, clock_value, clock_value)
    checkpoint = load_checkpoint(tmp_path)
    assert checkpoint is not None and checkpoint.dispatched_offset == end
    assert not (tmp_path / "abort").exists()


def test_abort_file_marks_an_open_store(tmp_path: Path) -> None:
    store = MessageStore(tmp_path, CONFIG)
    store.open()
    assert (tmp_path / "abort").exists()
    store.close()
    assert not (tmp_path / "abort").exists()


def test_index_of_another_size_is_rebuilt(tmp_path: Path) -> None:
    with MessageStore(tmp_path, CONFIG) as store:
        fill(store, 100)
    bigger = StoreConfig(
        commit_log_segment_size=SEGMENT,
        consume_queue_entries_per_file=16,
        max_hash_slot_num=64,
        max_index_num=500,
    )
    with MessageStore(tmp_path, bigger) as store:
        assert store.recovery is not None and store.recovery.dispatched_from == 0
        assert len(store.query_messages("TopicR", "key-m00003", 5).messages) == 1
        assert len(store.query_messages("TopicR", "shared", 64).messages) == 64
        assert len(list((tmp_path / "index").iterdir())) == 1
