"""The POP table's durable file: the newest whole version survives torn appends, damage and compaction."""

from __future__ import annotations

import fcntl
import os
import shutil
from pathlib import Path

import pytest

from broker.store.snapshot_journal import SnapshotJournal, frame, newest_record


def journal_in(directory: Path, **options: int) -> SnapshotJournal:
    return SnapshotJournal(directory / "table.json", directory / "table.journal", **options)


def test_the_newest_version_is_read_back_and_folded_into_the_base_file(tmp_path: Path) -> None:
    table = journal_in(tmp_path)
    assert table.read() is None, "nothing written yet"
    for version in (b"v1", b"v2", b"v3"):
        table.write(version)
    table.close()
    assert (tmp_path / "table.journal").stat().st_size == 3 * len(frame(b"v1"))
    again = journal_in(tmp_path)
    assert again.read() == b"v3"
    assert (tmp_path / "table.json").read_bytes() == b"v3"
    assert (tmp_path / "table.journal").stat().st_size == 0, "folded: appends start on an empty journal"
    again.write(b"v4")
    assert journal_in(tmp_path).read() == b"v4"


def test_a_torn_or_damaged_last_record_leaves_the_one_before(tmp_path: Path) -> None:
    table = journal_in(tmp_path)
    table.write(b"kept")
    table.write(b"torn")
    table.close()
    path = tmp_path / "table.journal"
    whole = path.read_bytes()
    path.write_bytes(whole[:-2])  # a crash in the middle of the last append
    assert journal_in(tmp_path).read() == b"kept"

    table = journal_in(tmp_path)
    table.write(b"first")
    table.write(b"second")
    table.close()
    damaged = bytearray(path.read_bytes())
    damaged[-1] ^= 0xFF
    path.write_bytes(bytes(damaged))
    assert newest_record(bytes(damaged)) == (b"first", len(frame(b"first")))
    assert journal_in(tmp_path).read() == b"first"


def test_a_failed_append_is_cut_off_before_the_next_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = journal_in(tmp_path)
    table.read()
    table.write(b"before")
    real_write = os.write

    def half_then_full_disk(fd: int, data: memoryview) -> int:
        real_write(fd, bytes(data[: len(data) // 2]))
        monkeypatch.setattr(os, "write", real_write)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_full_disk)
    with pytest.raises(OSError):
        table.write(b"refused")
    table.write(b"after")
    table.close()
    raw = (tmp_path / "table.journal").read_bytes()
    assert raw == frame(b"before") + frame(b"after"), "the partial record is gone"
    assert journal_in(tmp_path).read() == b"after"


def test_a_long_journal_is_compacted_and_a_crash_at_any_write_reads_the_newest(tmp_path: Path) -> None:
    live = tmp_path / "live"
    live.mkdir()
    table = journal_in(live, compact_bytes=100)
    table.read()
    for index in range(20):
        version = b"version %d " % index + b"x" * 20
        table.write(version)
        assert (live / "table.journal").stat().st_size <= 100
        crashed = tmp_path / f"crash{index}"
        shutil.copytree(live, crashed)  # the files as a kill -9 right after this write would leave them
        assert journal_in(crashed).read() == version
    assert (live / "table.json").read_bytes().startswith(b"version "), "compacted at least once"


def test_only_a_synchronous_journal_is_opened_o_dsync(tmp_path: Path) -> None:
    for sync in (True, False):
        table = SnapshotJournal(tmp_path / f"{sync}.json", tmp_path / f"{sync}.journal", sync=sync)
        table.write(b"v")
        assert table._fd is not None
        flags = fcntl.fcntl(table._fd, fcntl.F_GETFL)
        assert bool(flags & os.O_DSYNC) is sync
        table.close()
        assert journal_in_pair(tmp_path, sync).read() == b"v"


def journal_in_pair(directory: Path, sync: bool) -> SnapshotJournal:
    return SnapshotJournal(directory / f"{sync}.json", directory / f"{sync}.journal")
