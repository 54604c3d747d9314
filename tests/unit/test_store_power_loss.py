"""Power loss, simulated by keeping only what was fsynced: every SYNC_FLUSH acknowledgement survives it.

Each fsync (``fdatasync`` of segments, ``fsync`` of index, checkpoint and config files) is intercepted and
records the file's content at that moment, by inode. The "power loss" then puts every file of the store
back to its last recorded content, and a file never synced loses its content (its size too), as a page
cache that never reached the disk would. The store reopened on that must hold every message it
acknowledged, at the queue offset it acknowledged, whatever the point of the loss.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import random
from collections.abc import Callable
from pathlib import Path

import pytest

import broker.store.segment as segment_module
from broker.store import MessageStore, PutMessageStatus, StoreConfig
from broker.store.config import FlushDiskType
from rocketmq_wire.message.properties import encode_properties
from rocketmq_wire.message.stored import MessageExt, decode_messages

CONFIG = StoreConfig(
    commit_log_segment_size=16 * 1024,  # many segment rolls
    consume_queue_entries_per_file=40,
    max_hash_slot_num=64,
    max_index_num=120,  # several index files
    flush_disk_type=FlushDiskType.SYNC_FLUSH,
    flush_interval_consume_queue_ms=50,
)


class Disk:
    """What an fsync made durable, by path; :meth:`lose_power` puts the files back to it.

    A file renamed after its fsync (the checkpoint and config files are written to a temporary name, synced,
    then renamed) keeps its content under the new name once its directory is synced, as on a real disk."""

    def __init__(self) -> None:
        self.synced: dict[str, bytes] = {}
        self._paths_by_inode: dict[int, str] = {}

    def record(self, fd: int) -> None:
        path = os.readlink(f"/proc/self/fd/{fd}")
        if os.path.isdir(path):
            for entry in os.scandir(path):
                earlier = self._paths_by_inode.get(entry.inode())
                if earlier is not None and earlier != entry.path and not os.path.exists(earlier):
                    self.synced[entry.path] = self.synced.pop(earlier, b"")
                    self._paths_by_inode[entry.inode()] = entry.path
            return
        size = os.fstat(fd).st_size
        self.synced[path] = os.pread(fd, size, 0) if size else b""
        self._paths_by_inode[os.fstat(fd).st_ino] = path

    def wrap(self, sync: Callable[[int], None]) -> Callable[[int], None]:
        def synced(fd: int) -> None:
            sync(fd)
            self.record(fd)

        return synced

    def lose_power(self, root: Path) -> int:
        """Every file back to what was synced (empty if nothing was); returns how many had synced content."""
        restored = 0
        for path in root.rglob("*"):
            if not path.is_file() or path.name == "lock":
                continue
            content = self.synced.get(str(path))
            path.write_bytes(content or b"")
            restored += content is not None
        return restored


def message(index: int, rng: random.Random) -> MessageExt:
    return MessageExt(
        topic="PowerLoss",
        body=b"p%06d:" % index + rng.randbytes(rng.randrange(0, 600)),
        queue_id=index % 3,
        properties_string=encode_properties({"KEYS": f"k{index}", "UNIQ_KEY": f"U{index:08d}"}),
        born_host="192.168.1.7:50000",
    )


def read_all(store: MessageStore) -> dict[tuple[int, int], bytes]:
    found: dict[tuple[int, int], bytes] = {}
    for queue_id in range(3):
        offset = store.get_min_offset("PowerLoss", queue_id)
        while True:
            result = store.get_messages("PowerLoss", queue_id, offset, 32)
            if not result.messages:
                break
            for queue_offset, record in zip(result.queue_offsets, decode_messages(result.body), strict=True):
                found[(queue_id, queue_offset)] = record.body
            offset = result.next_begin_offset
    return found


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
async def test_every_sync_flush_acknowledgement_survives_a_power_loss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    rng = random.Random(seed)
    disk = Disk()
    monkeypatch.setattr(segment_module, "_sync_data", disk.wrap(segment_module._sync_data))
    monkeypatch.setattr(os, "fsync", disk.wrap(os.fsync))
    root = tmp_path / "store"
    store = MessageStore(root, dataclasses.replace(CONFIG))
    await store.start()
    acknowledged: dict[tuple[int, int], bytes] = {}
    loss_after = rng.randrange(50, 400)

    async def send(index: int) -> None:
        record = message(index, rng)
        result = await store.put_message_async(record)
        if result.status is PutMessageStatus.PUT_OK:
            acknowledged[(record.queue_id, result.queue_offset)] = record.body

    index = 0
    while index < loss_after:
        burst = rng.randrange(1, 16)
        await asyncio.gather(*(send(index + i) for i in range(burst)))
        index += burst
        if rng.random() < 0.2:
            await asyncio.sleep(0.06)  # let the periodic checkpoint run now and then
    # The power goes: nothing more is written. The store is abandoned, not closed: its flusher stops and
    # its files are let go without a flush, then every file goes back to what was synced.
    if store._flusher is not None:
        await store._flusher.stop()
    store._release_files()
    assert disk.lose_power(root) > 0 and acknowledged

    reopened = MessageStore(root, dataclasses.replace(CONFIG))
    reopened.open()
    try:
        read = read_all(reopened)
        missing = [key for key, body in acknowledged.items() if read.get(key) != body]
        assert not missing, f"{len(missing)} of {len(acknowledged)} acknowledged messages lost: {missing[:5]}"
    finally:
        reopened.close()
