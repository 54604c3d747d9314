"""The building blocks: segment files, consume queues and the Apache-layout index file."""

from __future__ import annotations

import errno
import os
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.store import index_file as index_file_module
from broker.store import segment as segment_module
from broker.store.consume_queue import ConsumeQueue, tag_hash_code, to_java_int
from broker.store.index_file import HEADER_SIZE, IndexFile, index_file_size, index_key_hash
from broker.store.index_service import IndexService
from broker.store.segment import Segment, parse_segment_name, segment_name
from broker.store.segment_queue import SegmentQueue
from rocketmq_wire.javahash import java_string_hash

# --- segments -----------------------------------------------------------------------------------------------


def test_segment_names_are_twenty_digit_offsets() -> None:
    assert segment_name(1073741824) == "00000000001073741824"
    assert parse_segment_name("00000000001073741824") == 1073741824
    assert parse_segment_name("1073741824") is None
    assert parse_segment_name("0000000000107374182x") is None


def test_segment_is_preallocated_and_truncation_zeroes_the_tail(tmp_path: Path) -> None:
    segment = Segment.create(tmp_path, 4096, 4096)
    assert segment.path.name == segment_name(4096)
    assert segment.path.stat().st_size == 4096
    assert segment.append(b"abcdef") == 4096
    assert segment.append(b"ghij") == 4102
    assert segment.read(0, 10) == b"abcdefghij"
    segment.truncate_to(3)
    assert (segment.write_position, segment.read(0, 10)) == (3, b"abc" + b"\0" * 7)
    assert segment.path.stat().st_size == 4096
    with pytest.raises(ValueError):
        segment.append(b"x" * 5000)
    segment.destroy()
    assert not segment.path.exists()


def test_segment_append_finishes_a_short_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    segment = Segment.create(tmp_path, 4096, 4096)  # not mapped (a consume-queue file): pwrite
    real_pwrite = os.pwrite
    calls: list[int] = []

    def short_pwrite(fd: int, data: bytes | memoryview, position: int) -> int:
        calls.append(position)
        return real_pwrite(fd, bytes(data[:3]), position)  # the kernel may write less than asked

    monkeypatch.setattr(os, "pwrite", short_pwrite)
    assert segment.append(b"0123456789") == 4096
    assert segment.read(0, 10) == b"0123456789" and segment.write_offset == 4096 + 10
    assert calls == [0, 3, 6, 9]
    segment.close()


def _refuse_pwrite(*args: object) -> int:
    raise AssertionError("a segment that could reserve its blocks wrote with pwrite")


def test_segment_writes_through_its_map_and_reserves_blocks_just_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    size = 16 * segment_module.RESERVE_AHEAD
    segment = Segment.create(tmp_path, 0, size, mapped=True)
    real_pwrite = os.pwrite
    pwritten: list[tuple[int, int]] = []

    def pwrite_of_a_page_or_more(fd: int, data: bytes | memoryview, position: int) -> int:
        if len(data) < segment_module.PWRITE_FROM:
            _refuse_pwrite()
        pwritten.append((position, len(data)))
        return real_pwrite(fd, data, position)

    monkeypatch.setattr(os, "pwrite", pwrite_of_a_page_or_more)
    assert segment.append(b"first") == 0
    assert segment.read(0, 5) == b"first"
    allocated = segment.path.stat().st_blocks * 512
    # Blocks are reserved a step ahead, and the rest of the file stays a hole.
    assert segment_module.RESERVE_AHEAD <= allocated <= 2 * segment_module.RESERVE_AHEAD
    # A write of many pages (a batch) is one pwrite, into blocks reserved first all the same.
    big = bytes(range(256)) * (segment_module.RESERVE_AHEAD // 128)  # two steps' worth in one write
    assert segment.append(big) == 5 and pwritten == [(5, len(big))]
    assert segment.read(5, len(big)) == big
    assert 5 + len(big) <= segment.path.stat().st_blocks * 512  # reserved before the pwrite
    assert segment.path.stat().st_blocks * 512 <= 4 * segment_module.RESERVE_AHEAD
    # The map and pwrite share the page cache: a small write after the big one, in its last page, lands.
    assert segment.append(b"tail") == 5 + len(big) and len(pwritten) == 1
    assert segment.read(5 + len(big) - 2, 6) == big[-2:] + b"tail"
    segment.truncate_to(3)  # the blocks go, the map reads zeros there, a new write reserves them again
    assert segment.read(0, 8) == b"fir" + b"\0" * 5
    assert segment.append(b"st") == 3 and segment.read(0, 8) == b"first\0\0\0"
    segment.close()
    with open(segment.path, "rb") as written:
        assert written.read(8) == b"first\0\0\0"


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc/self/fd (Linux)")
@pytest.mark.parametrize("mapped", [False, True], ids=["pwrite", "mapped"])
def test_segment_files_take_one_descriptor_each(tmp_path: Path, mapped: bool) -> None:
    """A broker has a consume-queue file per queue: a map may not hold a second descriptor for each (the
    consume queues map theirs only when the accelerator's FileMap, which holds none, is at hand)."""
    if mapped and not segment_module.maps_hold_no_descriptor():
        pytest.skip("no C FileMap here: consume-queue files are not mapped, so there is nothing to count")
    queue = SegmentQueue(tmp_path / "cq", 40, mapped=mapped)
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(6):
        queue.create_next().append(b"q" * 20)
    assert len(os.listdir("/proc/self/fd")) - before == 6
    queue.close()
    assert len(os.listdir("/proc/self/fd")) == before


def test_without_the_accelerator_a_mapped_segment_uses_pythons_mmap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(segment_module, "_c", None)
    assert not segment_module.maps_hold_no_descriptor()
    segment = Segment.create(tmp_path, 0, 8192, mapped=True)
    monkeypatch.setattr(os, "pwrite", _refuse_pwrite)
    assert segment.append(b"abc") == 0 and segment.append(b"def") == 3
    assert segment.read(0, 6) == b"abcdef"
    assert isinstance(segment._map, segment_module._PythonFileMap)
    segment.close()
    assert segment._map is None


def _map_flags(path: Path) -> set[str]:
    """The ``VmFlags`` of this process's map of ``path`` (``rr``: no readahead on faults, MADV_RANDOM)."""
    lines = Path("/proc/self/smaps").read_text().splitlines()
    for index, line in enumerate(lines):
        if line.endswith(" " + str(path)):
            for entry in lines[index + 1 :]:
                if entry.startswith("VmFlags:"):
                    return set(entry.split()[1:])
    raise AssertionError(f"{path} is not mapped")


@pytest.mark.skipif(
    not Path("/proc/self/smaps").is_file(), reason="reads VmFlags in /proc/self/smaps (Linux)"
)
@pytest.mark.parametrize("native", [True, False], ids=["FileMap", "mmap"])
def test_written_maps_ask_for_no_readahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, native: bool
) -> None:
    """A write fault with readahead brings in a large folio that every later fsync writes back whole; the
    store's maps (segments, with or without the accelerator, and the key index) ask the kernel not to."""
    if native and segment_module._c is None:
        pytest.skip("the C accelerator is not built here: only the mmap path exists")
    if native and not segment_module.maps_hold_no_descriptor():
        pytest.skip("this build of the accelerator has no FileMap (not a POSIX system)")
    if not native:
        monkeypatch.setattr(segment_module, "_c", None)
    segment = Segment.create(tmp_path, 0, 1 << 20, mapped=True)
    segment.append(b"x" * 100)
    index = IndexFile.create(tmp_path / "index", 16, 16)
    try:
        assert "rr" in _map_flags(segment.path)
        assert "rr" in _map_flags(index.path)
    finally:
        segment.close()
        index.close()


def test_segment_on_a_file_system_that_cannot_reserve_blocks_writes_with_pwrite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tried: list[tuple[int, int]] = []

    def unsupported(fd: int, offset: int, length: int) -> None:
        tried.append((offset, length))
        raise OSError(errno.EOPNOTSUPP, "Operation not supported")

    monkeypatch.setattr(segment_module, "_reserve_blocks", unsupported)
    segment = Segment.create(tmp_path, 0, 8192, mapped=True)
    assert segment.append(b"abc") == 0 and segment.append(b"def") == 3
    assert segment.read(0, 6) == b"abcdef"
    assert len(tried) == 1  # asked once, then the segment keeps to pwrite
    segment.close()


def test_a_full_disk_fails_a_segment_write_instead_of_faulting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(fd: int, offset: int, length: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(segment_module, "_reserve_blocks", full)
    segment = Segment.create(tmp_path, 0, 8192, mapped=True)
    with pytest.raises(OSError) as failed:
        segment.append(b"abc")
    assert failed.value.errno == errno.ENOSPC
    assert segment.write_position == 0 and segment.read(0, 3) == b"\0\0\0"
    segment.close()


def test_segment_queue_finds_rolls_and_cuts(tmp_path: Path) -> None:
    queue = SegmentQueue(tmp_path, 1024)
    first = queue.create_next(0)
    first.append(b"a" * 1024)
    second = queue.create_next()
    second.append(b"b" * 100)
    assert (queue.min_offset, queue.max_offset) == (0, 1124)
    assert queue.find(1023) is first and queue.find(1024) is second and queue.find(2048) is None
    assert queue.flush() == 1124
    assert queue.flushed_offset == 1124
    syncs = queue.sync_count
    assert queue.flush() == 1124 and queue.sync_count == syncs  # nothing new: no fsync
    third = queue.create_next()
    queue.set_end(1050)
    assert not third.path.exists()
    assert queue.max_offset == 1050 and second.read(26, 10) == b"\0" * 10


def test_segment_queue_starts_its_flush_walk_past_the_files_known_durable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    queue = SegmentQueue(tmp_path, 64)
    for _ in range(40):
        queue.create_next().append(b"d" * 64)
    last = queue.create_next()
    last.append(b"e" * 10)
    assert queue.flush() == 40 * 64 + 10 == queue.flushed_offset
    looked: list[int] = []
    real_flush = Segment.flush

    def counted(segment: Segment) -> bool:
        looked.append(segment.start)
        return real_flush(segment)

    monkeypatch.setattr(Segment, "flush", counted)
    last.append(b"f" * 5)
    assert queue.flushed_offset == 40 * 64 + 10  # written, not yet synced
    assert queue.flush() == 40 * 64 + 15
    assert looked == [last.start]  # not the 40 files before it
    # A cut below the floor: the file it cuts is no longer wholly synced, and the walk sees it again.
    queue.set_end(10 * 64 + 7)
    assert queue.flushed_offset == 10 * 64 + 7 == queue.max_offset
    queue.find(10 * 64).append(b"g")  # type: ignore[union-attr]
    assert queue.flushed_offset == 10 * 64 + 7
    assert queue.flush() == 10 * 64 + 8


def test_segment_queue_load_ignores_files_before_a_gap(tmp_path: Path) -> None:
    for start in (0, 2048, 3072):
        (tmp_path / segment_name(start)).write_bytes(b"\0" * 1024)
    (tmp_path / "not-a-segment").write_bytes(b"x")
    queue = SegmentQueue(tmp_path, 1024)
    queue.load()
    assert [s.start for s in queue.segments] == [2048, 3072]


def test_segment_queue_refuses_misaligned_files(tmp_path: Path) -> None:
    (tmp_path / segment_name(100)).write_bytes(b"\0" * 1024)
    with pytest.raises(ValueError):
        SegmentQueue(tmp_path, 1024).load()


# --- consume queue ------------------------------------------------------------------------------------------


def test_tag_hash_code_is_javas_signed_hash() -> None:
    assert tag_hash_code(None) == tag_hash_code("") == 0
    assert tag_hash_code("TagA") == to_java_int(java_string_hash("TagA"))
    assert to_java_int(0xFFFFFFFF) == -1
    assert to_java_int(-5) == -5
    # "polygenelubricants".hashCode() is Integer.MIN_VALUE in Java.
    assert tag_hash_code("polygenelubricants") == -(2**31)


def test_consume_queue_entries_span_files(tmp_path: Path) -> None:
    queue = ConsumeQueue(tmp_path, "T", 3, entries_per_file=4)
    for i in range(10):
        assert queue.put(i, 1000 + i * 50, 50, i - 5)
    assert not queue.put(4, 9999, 1, 0)  # already there: re-dispatch is a no-op
    assert (queue.min_offset, queue.max_offset, queue.file_count) == (0, 10, 3)
    assert sorted(p.name for p in (tmp_path / "T" / "3").iterdir()) == [
        segment_name(0),
        segment_name(80),
        segment_name(160),
    ]
    entries = queue.read(2, 6)
    assert entries is not None
    assert [(e.queue_offset, e.commit_log_offset, e.tags_code) for e in entries] == [
        (i, 1000 + i * 50, i - 5) for i in range(2, 8)
    ]
    assert queue.read(10, 5) == []
    raw = (tmp_path / "T" / "3" / segment_name(0)).read_bytes()
    assert struct.unpack_from(">qiq", raw, 20) == (1050, 50, -4)


def test_consume_queue_starting_mid_file_pads_like_apache(tmp_path: Path) -> None:
    queue = ConsumeQueue(tmp_path, "T", 0, entries_per_file=10)
    queue.put(13, 5000, 40, 0)
    assert (queue.min_offset, queue.max_offset) == (13, 14)
    raw = (tmp_path / "T" / "0" / segment_name(200)).read_bytes()
    assert struct.unpack_from(">qiq", raw, 0) == (0, 0x7FFFFFFF, 0)
    entry = queue.get(13)
    assert entry is not None and entry.commit_log_offset == 5000
    assert queue.get(12) is None


def test_consume_queue_truncates_and_recovers(tmp_path: Path) -> None:
    queue = ConsumeQueue(tmp_path, "T", 0, entries_per_file=4)
    for i in range(10):
        queue.put(i, i * 100, 100, 0)
    queue.truncate_from_physical(650)
    assert queue.max_offset == 7
    queue.close()
    reloaded = ConsumeQueue(tmp_path, "T", 0, entries_per_file=4)
    reloaded.load()
    reloaded.recover()
    assert reloaded.max_offset == 7
    last = reloaded.last()
    assert last is not None and last.commit_log_offset == 600
    reloaded.correct_min_offset(250)
    assert reloaded.min_offset == 3
    assert reloaded.delete_expired(450) == 1  # the first file's entries all end at or before 400
    assert reloaded.min_offset == 5
    assert reloaded.read(2, 3) is None


def test_consume_queue_search_is_a_bisection(tmp_path: Path) -> None:
    queue = ConsumeQueue(tmp_path, "T", 0, entries_per_file=8)
    for i in range(30):
        queue.put(i, i * 10, 10, 0)
    assert queue.search(lambda e: e.commit_log_offset >= 155) == 16
    assert queue.search(lambda e: False) == 30
    assert queue.search(lambda e: True) == 0


# --- index file ---------------------------------------------------------------------------------------------


def test_index_key_hash_is_javas_abs_hash() -> None:
    assert index_key_hash("T#k") == abs(to_java_int(java_string_hash("T#k")))
    assert index_key_hash("polygenelubricants") == 0  # Math.abs(MIN_VALUE) stays negative: Apache uses 0
    assert all(index_key_hash(f"T#{i}") >= 0 for i in range(200))


def test_index_file_layout_and_lookup(tmp_path: Path) -> None:
    path = tmp_path / "20240611043000000"
    index = IndexFile.create(path, slot_count=4, entry_count=10)
    assert path.stat().st_size == index_file_size(4, 10) == 40 + 4 * 4 + 10 * 20
    base = 1_700_000_000_000
    assert index.put(["T#a", "T#b"], 100, base) == 2
    assert index.put(["T#a"], 200, base + 3_500) == 1
    assert index.lookup("T#a", 10, 0, 2**62) == [200, 100]
    assert index.lookup("T#a", 1, 0, 2**62) == [200]
    assert index.lookup("T#b", 10, 0, 2**62) == [100]
    assert index.lookup("T#a", 10, base + 2000, base + 9000) == [200]
    assert index.lookup("T#zzz", 10, 0, 2**62) == []
    data = path.read_bytes()
    begin_ts, end_ts, begin_phy, end_phy, _slots, count = struct.unpack_from(">qqqqii", data, 0)
    assert (begin_ts, end_ts, begin_phy, end_phy, count) == (base, base + 3_500, 100, 200, 4)
    # Entry 3 (the second put of T#a): key hash, offset, seconds after begin, previous entry of its slot.
    entry = struct.unpack_from(">iqii", data, HEADER_SIZE + 4 * 4 + 3 * 20)
    assert entry == (index_key_hash("T#a"), 200, 3, 1)
    index.close()
    reopened = IndexFile(path, 4, 10)
    assert reopened.lookup("T#a", 10, 0, 2**62) == [200, 100]
    reopened.close()


def test_index_service_rolls_and_drops(tmp_path: Path) -> None:
    clock_value = [1_700_000_000_000]
    service = IndexService(tmp_path, 4, 5, lambda: clock_value[0])
    for i in range(12):
        clock_value[0] += 1
        service.put([f"T#k{i % 2}"], i * 100, clock_value[0])
    names = [f.path.name for f in service.files]
    assert len(names) == 3 and names == sorted(names)
    assert service.last_indexed_offset == 1100
    assert service.lookup("T", "k1", 64, 0, 2**62) == [1100, 900, 700, 500, 300, 100]
    assert service.drop_from(1000) == 800
    assert service.last_indexed_offset == 700
    assert service.delete_expired(500) == 1
    assert service.lookup("T", "k0", 64, 0, 2**62) == [600, 400]
    service.close()


def test_consume_queue_recovery_cuts_a_torn_entry(tmp_path: Path) -> None:
    queue = ConsumeQueue(tmp_path, "T", 0, entries_per_file=8)
    for i in range(5):
        queue.put(i, i * 100, 100, 0)
    queue.close()
    path = tmp_path / "T" / "0" / segment_name(0)
    with open(path, "r+b") as f:
        f.seek(5 * 20)
        f.write(struct.pack(">q", 500))  # the offset half of a sixth entry; its size never made it
    reloaded = ConsumeQueue(tmp_path, "T", 0, entries_per_file=8)
    reloaded.load()
    reloaded.recover()
    assert reloaded.max_offset == 5
    assert path.read_bytes()[100:120] == b"\0" * 20
    assert reloaded.put(5, 500, 100, 0)
    entry = reloaded.get(5)
    assert entry is not None and entry.size == 100


@pytest.mark.skipif(index_file_module._c is None, reason="the C accelerator is not built or is switched off")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    puts=st.lists(
        st.lists(
            st.tuples(
                st.one_of(
                    st.sampled_from(["T#a", "polygenelubricants"]),
                    st.text(alphabet=st.sampled_from(["a", "#", "\u00e9", "\U0001f600"])),
                ),
                st.integers(0, 2**40),
                st.one_of(st.integers(-(2**40), 2**45), st.just(0)),
            ),
            max_size=4,
        ),
        max_size=8,
    ),
    slot_count=st.integers(1, 5),
    entry_count=st.integers(1, 12),
)
def test_index_entries_written_in_c_match_the_reference_byte_for_byte(
    tmp_path_factory: pytest.TempPathFactory,
    puts: list[list[tuple[str, int, int]]],
    slot_count: int,
    entry_count: int,
) -> None:
    """Slots, chains, the full file, begin and end in the header: the same bytes and counts either way."""
    folder = tmp_path_factory.mktemp("index")
    outcomes = []
    for accelerated in (True, False):
        index = IndexFile.create(folder / f"c-{accelerated}", slot_count, entry_count)
        saved = index_file_module._c
        index_file_module._c = saved if accelerated else None
        try:
            written = [index.put_entries(list(entries)) for entries in puts]
        finally:
            index_file_module._c = saved
        state = (index.count, index.used_slots, index.begin_phy_offset, index.end_phy_offset)
        index.close()
        outcomes.append((written, state, index.path.read_bytes()))
    assert outcomes[0] == outcomes[1]


def test_index_entries_the_c_writer_declines_go_to_the_reference(tmp_path: Path) -> None:
    index = IndexFile.create(tmp_path / "declined", slot_count=4, entry_count=10)
    with pytest.raises(struct.error):  # an offset beyond a Java long: C declines, the reference refuses
        index.put_entries([("T#a", 100, 1), ("T#b", 2**63, 2)])
    assert index.count <= 1 and index.lookup("T#a", 10, 0, 2**62) == []
    assert index.put_entries([("T#a", 100, 1)]) == 1  # and the file takes the next entries as before
    assert index.lookup("T#a", 10, 0, 2**62) == [100]
    index.close()
