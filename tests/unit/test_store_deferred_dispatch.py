"""Appends on an event loop get their consume-queue and index entries one loop turn later, in a group:
readers never notice, queue offsets are handed out at append time, and a failed dispatch is redone."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.store import GetMessageStatus, MessageStore, PutMessageStatus, StoreConfig
from broker.store.checkpoint import load_checkpoint
from broker.store.consume_queue import ConsumeQueue
from rocketmq_wire.message.properties import encode_properties
from rocketmq_wire.message.stored import MessageExt, decode_messages

CONFIG = StoreConfig(
    commit_log_segment_size=64 * 1024,
    consume_queue_entries_per_file=50,
    max_hash_slot_num=64,
    max_index_num=200,
)


def message(queue_id: int, body: bytes, *, keys: str = "") -> MessageExt:
    return MessageExt(
        topic="TopicA",
        body=body,
        queue_id=queue_id,
        properties_string=encode_properties({"KEYS": keys or None, "TAGS": "t"}),
        born_host="192.168.1.7:50000",
    )


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MessageStore]:
    opened = MessageStore(tmp_path / "store", CONFIG, store_host="10.1.2.3:10911")
    opened.open()
    yield opened
    opened.close()


def queue_file_entries(store: MessageStore, queue_id: int) -> int:
    return queue_file_entries_of(store.root, queue_id)


def queue_file_entries_of(root: Path, queue_id: int) -> int:
    """Entries written to the queue's first file on disk (no written 20-byte entry is all zeros: the
    record size in it is not)."""
    path = root / "consumequeue" / "TopicA" / str(queue_id) / f"{0:020d}"
    if not path.exists():
        return 0
    data = path.read_bytes()
    return sum(1 for at in range(0, len(data), 20) if data[at : at + 20].strip(b"\0"))


async def test_appends_of_one_turn_are_dispatched_together_on_the_next(store: MessageStore) -> None:
    results = [store.put_message(message(i % 2, b"m%d" % i)) for i in range(5)]
    assert all(r.status is PutMessageStatus.PUT_OK for r in results)
    # Queue offsets were handed out at append time, though no entry is written yet.
    assert [r.queue_offset for r in results] == [0, 0, 1, 1, 2]
    assert queue_file_entries(store, 0) == 0
    assert store.dispatch_behind_bytes == sum(r.wrote_bytes for r in results)

    await asyncio.sleep(0)
    assert (queue_file_entries(store, 0), queue_file_entries(store, 1)) == (3, 2)
    assert store.dispatch_behind_bytes == 0
    assert store.put_message(message(0, b"later")).queue_offset == 3


async def test_readers_see_appends_of_the_turn_they_run_in(store: MessageStore) -> None:
    first = store.put_message(message(0, b"one", keys="k1"))
    store.put_message(message(0, b"two", keys="k2"))
    # No loop turn between the appends and these reads.
    assert store.get_max_offset("TopicA", 0) == 2
    pulled = store.get_messages("TopicA", 0, 0, 32)
    assert pulled.status is GetMessageStatus.FOUND
    assert [m.body for m in decode_messages(pulled.body)] == [b"one", b"two"]
    store.put_message(message(0, b"three", keys="k3"))
    assert [m.body for m in decode_messages(store.query_messages("TopicA", "k3", 4).body)] == [b"three"]
    assert store.get_commit_log_offset("TopicA", 0, 0) == first.wrote_offset
    assert store.topics() == {"TopicA": [0]}


async def test_a_failed_dispatch_is_redone_from_the_commit_log(
    store: MessageStore, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    store.put_message(message(0, b"before"))
    await asyncio.sleep(0)
    real_put_run = ConsumeQueue.put_run
    failures = [OSError(28, "No space left on device")]

    def put_run_failing_once(queue: ConsumeQueue, *args: object) -> None:
        if failures:
            raise failures.pop()
        real_put_run(queue, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(ConsumeQueue, "put_run", put_run_failing_once)
    store.put_message(message(0, b"lost?", keys="kx"))
    store.put_message(message(0, b"after"))
    with caplog.at_level(logging.ERROR, logger="broker.store"):
        await asyncio.sleep(0)
    assert "retrying from the commit log" in caplog.text
    assert not failures
    assert store.dispatch_behind_bytes > 0

    pulled = store.get_messages("TopicA", 0, 0, 32)
    assert [m.body for m in decode_messages(pulled.body)] == [b"before", b"lost?", b"after"]
    assert [m.body for m in decode_messages(store.query_messages("TopicA", "kx", 4).body)] == [b"lost?"]
    assert store.dispatch_behind_bytes == 0
    assert store.put_message(message(0, b"next")).queue_offset == 3


async def test_a_topic_deleted_in_the_turn_of_its_appends_stays_deleted(store: MessageStore) -> None:
    store.put_message(message(0, b"doomed"))
    assert store.delete_topic("TopicA") == 1
    await asyncio.sleep(0)
    assert store.topics() == {}
    assert store.get_max_offset("TopicA", 0) == 0


async def test_checkpoint_and_close_cover_appends_not_dispatched_yet(tmp_path: Path) -> None:
    root = tmp_path / "store"
    store = MessageStore(root, CONFIG)
    store.open()
    last = store.put_message(message(1, b"pending"))
    checkpoint = store.checkpoint()
    # The checkpoint says everything up to the end of the commit log has its entries: it must be so.
    assert checkpoint.dispatched_offset == store.max_physical_offset == last.wrote_offset + last.wrote_bytes
    assert store.dispatch_behind_bytes == 0
    assert queue_file_entries_of(root, 1) == 1
    store.put_message(message(1, b"at close"))
    store.close()
    saved = load_checkpoint(root)
    assert saved is not None and saved.dispatched_offset > checkpoint.dispatched_offset
    assert queue_file_entries_of(root, 1) == 2
    reopened = MessageStore(root, CONFIG)
    reopened.open()
    try:
        assert reopened.recovery is not None
        pulled = reopened.get_messages("TopicA", 1, 0, 32)
        assert [m.body for m in decode_messages(pulled.body)] == [b"pending", b"at close"]
        assert reopened.get_commit_log_offset("TopicA", 1, 0) == last.wrote_offset
    finally:
        reopened.close()


def test_appends_without_an_event_loop_are_dispatched_at_once(store: MessageStore) -> None:
    store.put_message(message(0, b"now"))
    assert store.dispatch_behind_bytes == 0
    assert queue_file_entries(store, 0) == 1
