"""MessageStore appends and reads: segment rolling, consume-queue statuses, filters, lookups, queries."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from broker.store import (
    BoundaryType,
    GetMessageStatus,
    MessageStore,
    PutMessageStatus,
    StoreConfig,
    StoreLockedError,
    tag_hash_code,
)
from rocketmq_wire.message import sysflag
from rocketmq_wire.message.ids import decode_offset_msg_id
from rocketmq_wire.message.layout import BLANK_MAGIC
from rocketmq_wire.message.properties import encode_properties
from rocketmq_wire.message.stored import MessageExt, decode_messages

SEGMENT = 64 * 1024
CONFIG = StoreConfig(
    commit_log_segment_size=SEGMENT,
    consume_queue_entries_per_file=50,
    max_hash_slot_num=64,
    max_index_num=200,
    max_transfer_count_on_message=1000,
    max_transfer_bytes_on_message=16 * 1024 * 1024,
)


class FakeClock:
    def __init__(self, start: int = 1_700_000_000_000) -> None:
        self.now = start

    def __call__(self) -> int:
        return self.now


def message(
    topic: str = "TopicA",
    queue_id: int = 0,
    body: bytes = b"hello",
    *,
    tags: str | None = None,
    keys: str | None = None,
    uniq: str | None = None,
    sys_flag: int = 0,
) -> MessageExt:
    properties: dict[str, str | None] = {"TAGS": tags, "KEYS": keys, "UNIQ_KEY": uniq}
    return MessageExt(
        topic=topic,
        body=body,
        queue_id=queue_id,
        properties_string=encode_properties(properties),
        born_host="192.168.1.7:50000",
        born_timestamp=1_700_000_000_000,
        sys_flag=sys_flag,
    )


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def store(tmp_path: Path, clock: FakeClock) -> Iterator[MessageStore]:
    opened = MessageStore(tmp_path / "store", CONFIG, store_host="10.1.2.3:10911", clock=clock)
    opened.open()
    yield opened
    opened.close()


def bodies(data: bytes) -> list[bytes]:
    return [m.body for m in decode_messages(data)]


def test_round_trip_across_segment_boundaries(store: MessageStore) -> None:
    sent = [bytes([i % 256]) * (700 + i * 13) for i in range(300)]
    results = [store.put_message(message(queue_id=i % 3, body=body)) for i, body in enumerate(sent)]
    assert all(r.status is PutMessageStatus.PUT_OK for r in results)
    files = sorted((store.root / "commitlog").iterdir())
    assert len(files) > 3
    assert [int(f.name) for f in files] == [i * SEGMENT for i in range(len(files))]
    assert all(len(f.name) == 20 and f.stat().st_size == SEGMENT for f in files)

    received: list[bytes] = []
    for queue_id in range(3):
        result = store.get_messages("TopicA", queue_id, 0, 1000)
        assert result.status is GetMessageStatus.FOUND
        assert result.next_begin_offset == result.max_offset == 100
        decoded = decode_messages(result.body)
        assert [m.queue_offset for m in decoded] == list(range(100))
        assert all(m.queue_id == queue_id for m in decoded)
        received.extend(m.body for m in decoded)
    assert sorted(received) == sorted(sent)

    # Every physical offset is a global byte offset, records never straddle files, and each file that
    # was left for the next one ends with the blank marker covering exactly the bytes left.
    for put in results:
        assert put.wrote_offset // SEGMENT == (put.wrote_offset + put.wrote_bytes - 1) // SEGMENT
        record = store.lookup_message_by_physical_offset(put.wrote_offset)
        assert record is not None and len(record) == put.wrote_bytes
        assert decode_messages(record)[0].commit_log_offset == put.wrote_offset
    for f in files[:-1]:
        data = f.read_bytes()
        last = max(r.wrote_offset + r.wrote_bytes for r in results if r.wrote_offset < int(f.name) + SEGMENT)
        position = last - int(f.name)
        size, magic = struct.unpack_from(">iI", data, position)
        assert (size, magic) == (SEGMENT - position, BLANK_MAGIC)


def test_put_result_carries_offsets_ids_and_timestamp(store: MessageStore, clock: FakeClock) -> None:
    first = store.put_message(message(body=b"a"))
    clock.now += 5
    second = store.put_message(message(body=b"b"))
    assert (first.queue_offset, second.queue_offset) == (0, 1)
    assert second.wrote_offset == first.wrote_offset + first.wrote_bytes
    assert second.store_timestamp == clock.now
    decoded_id = decode_offset_msg_id(second.msg_id)
    assert decoded_id.offset == second.wrote_offset
    assert decoded_id.address == "10.1.2.3:10911"
    stored = store.look_message_by_offset(second.wrote_offset)
    assert stored is not None
    assert (stored.store_host, stored.store_timestamp, stored.body) == ("10.1.2.3:10911", clock.now, b"b")


def test_batch_gets_consecutive_queue_offsets_and_joined_ids(store: MessageStore) -> None:
    store.put_message(message(body=b"first"))
    result = store.put_messages([message(body=b"x%d" % i) for i in range(4)])
    assert result.status is PutMessageStatus.PUT_OK
    assert result.queue_offsets == (1, 2, 3, 4)
    assert len(result.msg_id.split(",")) == 4
    got = store.get_messages("TopicA", 0, 1, 10)
    assert bodies(got.body) == [b"x0", b"x1", b"x2", b"x3"]


def test_batches_cross_consume_queue_files_and_interleave_queues(store: MessageStore) -> None:
    """A batch's consume-queue entries go in one write where they fit the queue's last file; batches that
    cross a file end (50 entries a file here) or mix queues and tags must read back entry for entry."""
    sent: dict[int, list[bytes]] = {0: [], 1: []}
    for round_ in range(9):
        # 7 + 11 entries a round: the runs of queue 0 end off the 50-entry file boundaries
        batch = [message(queue_id=0, body=b"a%d-%d" % (round_, i), tags=f"t{i % 3}") for i in range(7)]
        batch += [message(queue_id=1, body=b"b%d-%d" % (round_, i)) for i in range(11)]
        if round_ % 2:
            batch.insert(3, message(queue_id=1, body=b"c%d" % round_))  # queue 1 interrupts queue 0's run
        result = store.put_messages(batch)
        assert result.status is PutMessageStatus.PUT_OK
        for m in batch:
            sent[m.queue_id].append(m.body)
    for queue_id, expected in sent.items():
        got = store.get_messages("TopicA", queue_id, 0, 1000)
        decoded = decode_messages(got.body)
        assert [m.body for m in decoded] == expected
        assert [m.queue_offset for m in decoded] == list(range(len(expected)))
        for m in decoded:
            entry = store.get_commit_log_offset("TopicA", queue_id, m.queue_offset)
            assert entry == m.commit_log_offset
    tagged = store.get_messages("TopicA", 0, 0, 1000, tag_filter={tag_hash_code("t1")})
    assert [m.body for m in decode_messages(tagged.body)] == [
        b for b in sent[0] if int(b.split(b"-")[1]) % 3 == 1
    ]
    assert len(list((store.root / "consumequeue" / "TopicA" / "0").iterdir())) == 2


def test_statuses_of_out_of_range_offsets(store: MessageStore) -> None:
    assert store.get_messages("Nope", 0, 0).status is GetMessageStatus.NO_MATCHED_LOGIC_QUEUE
    for i in range(5):
        store.put_message(message(body=b"m%d" % i))
    one = store.get_messages("TopicA", 0, 5)
    assert (one.status, one.next_begin_offset) == (GetMessageStatus.OFFSET_OVERFLOW_ONE, 5)
    badly = store.get_messages("TopicA", 0, 9)
    assert (badly.status, badly.next_begin_offset) == (GetMessageStatus.OFFSET_OVERFLOW_BADLY, 5)
    found = store.get_messages("TopicA", 0, 3, 1)
    assert (found.status, found.next_begin_offset, found.queue_offsets) == (GetMessageStatus.FOUND, 4, [3])
    assert (found.min_offset, found.max_offset) == (0, 5)


def test_deleted_topic_has_no_logic_queue(store: MessageStore) -> None:
    store.put_message(message(queue_id=1))
    assert store.topics() == {"TopicA": [1]}
    assert store.delete_topic("TopicA") == 1
    assert store.get_messages("TopicA", 1, 0).status is GetMessageStatus.NO_MATCHED_LOGIC_QUEUE
    assert store.topics() == {}
    assert not (store.root / "consumequeue" / "TopicA").exists()


def test_queue_without_entries_reports_no_message(tmp_path: Path) -> None:
    (tmp_path / "consumequeue" / "TopicA" / "3").mkdir(parents=True)
    with MessageStore(tmp_path, CONFIG) as store:
        empty = store.get_messages("TopicA", 3, 0)
        assert (empty.status, empty.next_begin_offset) == (GetMessageStatus.NO_MESSAGE_IN_QUEUE, 0)


def test_tag_filter_uses_java_hash_codes(store: MessageStore) -> None:
    tags = ["TagA", "TagB", "", "TagA", "TagC", "TagA"]
    for i, tag in enumerate(tags):
        store.put_message(message(body=b"%d" % i, tags=tag or None))
    only_a = store.get_messages("TopicA", 0, 0, 32, tag_filter={tag_hash_code("TagA")})
    assert bodies(only_a.body) == [b"0", b"3", b"5"]
    assert only_a.next_begin_offset == 6
    # Codes given unsigned (as java_string_hash returns them) match the signed ones stored.
    negative_tag = next(t for t in ("TagZ", "zzzzzz", "ÿÿÿÿ") if tag_hash_code(t) < 0)
    store.put_message(message(body=b"neg", tags=negative_tag))
    unsigned = tag_hash_code(negative_tag) & 0xFFFFFFFF
    assert bodies(store.get_messages("TopicA", 0, 0, 32, tag_filter=[unsigned]).body) == [b"neg"]
    none = store.get_messages("TopicA", 0, 0, 32, tag_filter={tag_hash_code("Missing")})
    assert (none.status, none.next_begin_offset) == (GetMessageStatus.NO_MATCHED_MESSAGE, 7)


def test_consume_queue_entry_layout_matches_apache(store: MessageStore) -> None:
    result = store.put_message(message(tags="TagA"))
    entry = (store.root / "consumequeue" / "TopicA" / "0" / ("0" * 20)).read_bytes()[:20]
    assert struct.unpack(">qiq", entry) == (result.wrote_offset, result.wrote_bytes, tag_hash_code("TagA"))


def test_max_count_and_byte_limits(tmp_path: Path) -> None:
    config = StoreConfig(
        commit_log_segment_size=SEGMENT, max_transfer_count_on_message=4, max_transfer_bytes_on_message=1000
    )
    with MessageStore(tmp_path, config) as store:
        for _ in range(10):
            store.put_message(message(body=b"x" * 100))
        assert store.get_messages("TopicA", 0, 0, 32).message_count == 4
        assert store.get_messages("TopicA", 0, 0, 2).message_count == 2
        small = store.get_messages("TopicA", 0, 0, 32, max_bytes=400)
        assert small.message_count == 2 and small.next_begin_offset == 2


def test_message_filter_sees_stored_bytes(store: MessageStore) -> None:
    for i in range(6):
        store.put_message(message(body=b"%d" % i))
    even = store.get_messages(
        "TopicA", 0, 0, 32, message_filter=lambda data: int(decode_messages(data)[0].body) % 2 == 0
    )
    assert bodies(even.body) == [b"0", b"2", b"4"]


def test_offsets_by_timestamp(store: MessageStore, clock: FakeClock) -> None:
    base = clock.now
    for i in range(10):
        clock.now = base + i * 100
        store.put_message(message(body=b"%d" % i))
    store.put_message(message(body=b"same-ms-1"))  # offsets 9, 10 and 11 share one store time
    store.put_message(message(body=b"same-ms-2"))
    lower = BoundaryType.LOWER
    upper = BoundaryType.UPPER
    assert store.get_offset_by_timestamp("TopicA", 0, base) == 0
    assert store.get_offset_by_timestamp("TopicA", 0, base - 1) == 0
    assert store.get_offset_by_timestamp("TopicA", 0, base + 250, lower) == 3
    assert store.get_offset_by_timestamp("TopicA", 0, base + 300) == 3
    assert store.get_offset_by_timestamp("TopicA", 0, base + 900) == 9
    assert store.get_offset_by_timestamp("TopicA", 0, base + 10_000) == 12
    assert store.get_offset_by_timestamp("TopicA", 0, base + 250, upper) == 2
    assert store.get_offset_by_timestamp("TopicA", 0, base + 900, upper) == 11
    assert store.get_offset_by_timestamp("TopicA", 0, base - 5, upper) == 0
    assert store.get_offset_by_timestamp("Nope", 0, base) == 0
    assert store.get_store_time("TopicA", 0, 4) == base + 400
    assert store.get_store_time("TopicA", 0, 99) == -1
    assert store.get_earliest_message_time("TopicA", 0) == base
    assert store.get_earliest_message_time("TopicA", 7) == -1
    assert store.earliest_store_time() == base


def test_lookup_by_offset_rejects_positions_inside_a_record(store: MessageStore) -> None:
    result = store.put_message(message(body=b"payload"))
    assert store.lookup_message_by_physical_offset(result.wrote_offset + 4) is None
    assert store.lookup_message_by_physical_offset(10**9) is None


def test_query_by_key_and_unique_key(store: MessageStore, clock: FakeClock) -> None:
    base = clock.now
    for i in range(30):
        clock.now = base + i * 1000
        store.put_message(message(body=b"%d" % i, keys=f"order-{i % 3} all", uniq=f"UNIQ{i:04d}"))
    store.put_message(message(topic="Other", body=b"other", keys="all"))
    by_key = store.query_messages("TopicA", "order-1", 64)
    assert [int(b) for b in bodies(by_key.body)] == list(range(1, 30, 3))
    newest = store.query_messages("TopicA", "all", 4)
    assert bodies(newest.body) == [b"26", b"27", b"28", b"29"]
    windowed = store.query_messages("TopicA", "all", 64, base + 10_000, base + 12_000)
    assert bodies(windowed.body) == [b"10", b"11", b"12"]
    unique = store.query_messages("TopicA", "UNIQ0007", 10, unique_key=True)
    assert bodies(unique.body) == [b"7"]
    assert store.query_messages("TopicA", "UNIQ0007", 10).messages == []  # not a KEYS key
    assert bodies(store.query_messages("Other", "all", 10).body) == [b"other"]
    assert store.query_messages("TopicA", "missing", 10).messages == []


def test_index_rolls_into_new_files(tmp_path: Path) -> None:
    config = StoreConfig(commit_log_segment_size=SEGMENT, max_hash_slot_num=8, max_index_num=10)
    with MessageStore(tmp_path, config) as store:
        for i in range(40):
            store.put_message(message(body=b"%d" % i, keys="k"))
        assert len(list((tmp_path / "index").iterdir())) >= 4
        assert len(store.query_messages("TopicA", "k", 64).messages) == 40


def test_batches_index_as_single_puts_do_across_index_files(tmp_path: Path) -> None:
    """A batch's keys go to the index in one call, which may fill a file mid-batch: the files written must
    be byte for byte those of the same messages put one at a time, and every key must be found."""
    config = StoreConfig(commit_log_segment_size=SEGMENT, max_hash_slot_num=8, max_index_num=10)
    clock = FakeClock()

    def batch(i: int) -> list[MessageExt]:
        return [message(body=b"%d-%d" % (i, j), keys=f"k{j % 2} all", uniq=f"U{i}-{j}") for j in range(7)]

    with MessageStore(tmp_path / "batched", config, clock=clock) as store:
        for i in range(5):
            assert store.put_messages(batch(i)).status is PutMessageStatus.PUT_OK
        assert len(store.query_messages("TopicA", "all", 64).messages) == 35
        assert bodies(store.query_messages("TopicA", "U3-4", 4, unique_key=True).body) == [b"3-4"]
    with MessageStore(tmp_path / "single", config, clock=clock) as store:
        for i in range(5):
            for m in batch(i):
                store.put_message(m)
    batched = sorted((tmp_path / "batched" / "index").iterdir())
    single = sorted((tmp_path / "single" / "index").iterdir())
    assert len(batched) == len(single) >= 10
    assert [f.read_bytes() for f in batched] == [f.read_bytes() for f in single]


def test_half_transaction_messages_stay_out_of_consume_queues(store: MessageStore) -> None:
    prepared = store.put_message(message(body=b"half", sys_flag=sysflag.TRANSACTION_PREPARED_TYPE))
    normal = store.put_message(message(body=b"normal"))
    assert prepared.ok and prepared.queue_offset == 0
    assert normal.queue_offset == 0
    assert bodies(store.get_messages("TopicA", 0, 0).body) == [b"normal"]
    assert store.lookup_message_by_physical_offset(prepared.wrote_offset) is not None


def test_illegal_messages_are_refused(store: MessageStore) -> None:
    assert store.put_message(message(topic="bad/topic")).status is PutMessageStatus.MESSAGE_ILLEGAL
    assert store.put_message(message(topic="")).status is PutMessageStatus.MESSAGE_ILLEGAL
    huge = message(body=b"x" * (SEGMENT + 1))
    assert store.put_message(huge).status is PutMessageStatus.MESSAGE_ILLEGAL
    long_props = message(keys="k" * 40_000)
    assert store.put_message(long_props).status is PutMessageStatus.PROPERTIES_SIZE_EXCEEDED
    assert store.get_max_offset("TopicA", 0) == 0


def test_closed_store_refuses_appends(tmp_path: Path) -> None:
    store = MessageStore(tmp_path, CONFIG)
    assert store.put_message(message()).status is PutMessageStatus.SERVICE_NOT_AVAILABLE


def test_directory_lock_prevents_a_second_open(tmp_path: Path) -> None:
    with MessageStore(tmp_path, CONFIG):
        with pytest.raises(StoreLockedError):
            MessageStore(tmp_path, CONFIG).open()
    with MessageStore(tmp_path, CONFIG) as reopened:
        assert reopened.is_open
