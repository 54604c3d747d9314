"""Drive the project's message store through injected faults and print, per fault class, how many appends
it acknowledged and how many of those are read back at their acknowledged queue offset, live and after a
restart. Runs against any version of the store (it uses only ``MessageStore``'s public calls), so the same
figures can be taken before and after a change.

    .venv/bin/python -m benchmarks.store_faults [--messages N] [--seed S]

Fault classes:

* ``cq-emfile``: consume-queue writes fail with EMFILE for a stretch of the run, then work again;
* ``cq-enospc-burst``: every seventh dispatch fails with ENOSPC;
* ``fsync-eio``: one commit-log fsync fails with EIO (SYNC_FLUSH); the next succeeds, as Linux's does over
  pages it lost, so a lost page is simulated by zeroing what that fsync covered before the restart.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import errno
import os
import random
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import broker.store.segment as segment_module
from broker.store import MessageStore, PutMessageStatus, StoreConfig
from broker.store.config import FlushDiskType
from broker.store.consume_queue import ConsumeQueue
from rocketmq_wire.message.properties import encode_properties
from rocketmq_wire.message.stored import MessageExt, decode_messages

CONFIG = StoreConfig(
    commit_log_segment_size=256 * 1024,
    consume_queue_entries_per_file=100,
    max_hash_slot_num=128,
    max_index_num=512,
)
TOPIC = "FaultReport"
QUEUES = 4


def _message(index: int, rng: random.Random) -> MessageExt:
    return MessageExt(
        topic=TOPIC,
        body=b"f%06d:" % index + rng.randbytes(rng.randrange(0, 200)),
        queue_id=index % QUEUES,
        properties_string=encode_properties({"KEYS": f"k{index}", "UNIQ_KEY": f"U{index:08d}"}),
        born_host="192.168.1.7:50000",
    )


def _read(store: MessageStore) -> dict[tuple[int, int], bytes]:
    found: dict[tuple[int, int], bytes] = {}
    for queue_id in range(QUEUES):
        offset = store.get_min_offset(TOPIC, queue_id)
        while True:
            result = store.get_messages(TOPIC, queue_id, offset, 32)
            if not result.messages:
                break
            for queue_offset, record in zip(result.queue_offsets, decode_messages(result.body), strict=True):
                found[(queue_id, queue_offset)] = record.body
            offset = result.next_begin_offset
    return found


def _kept(acked: list[tuple[tuple[int, int], bytes]], read: dict[tuple[int, int], bytes]) -> int:
    """Acknowledgements whose body is at their (queue, offset); two given the same offset cannot both be."""
    return sum(1 for key, body in acked if read.get(key) == body)


@contextmanager
def _failing_consume_queue(fails: Callable[[], bool], error: int) -> Iterator[None]:
    real_put, real_run = ConsumeQueue.put, ConsumeQueue.put_run

    def put(queue: ConsumeQueue, *args: int) -> bool:
        if fails():
            raise OSError(error, os.strerror(error))
        return real_put(queue, *args)

    def put_run(queue: ConsumeQueue, *args: object) -> None:
        if fails():
            raise OSError(error, os.strerror(error))
        real_run(queue, *args)  # type: ignore[arg-type]

    ConsumeQueue.put, ConsumeQueue.put_run = put, put_run  # type: ignore[method-assign]
    try:
        yield
    finally:
        ConsumeQueue.put, ConsumeQueue.put_run = real_put, real_run  # type: ignore[method-assign]


async def _dispatch_faults(root: Path, count: int, rng: random.Random, pattern: str) -> dict[str, int]:
    store = MessageStore(root, CONFIG)
    store.open()
    acked: list[tuple[tuple[int, int], bytes]] = []
    refused = 0
    step = [0]

    def fails() -> bool:
        if pattern == "cq-emfile":
            return count // 4 <= step[0] < count // 2
        return step[0] % 7 == 3

    error = errno.EMFILE if pattern == "cq-emfile" else errno.ENOSPC
    with _failing_consume_queue(fails, error):
        for index in range(count):
            step[0] = index
            record = _message(index, rng)
            result = store.put_message(record)
            if result.status is PutMessageStatus.PUT_OK:
                acked.append(((record.queue_id, result.queue_offset), record.body))
            else:
                refused += 1
            await asyncio.sleep(0)  # a loop turn: the deferred dispatch runs (and may fail) here
    await asyncio.sleep(0.2)
    live = _kept(acked, _read(store))
    store.close()
    reopened = MessageStore(root, CONFIG)
    reopened.open()
    after = _kept(acked, _read(reopened))
    reopened.close()
    return {"acknowledged": len(acked), "refused": refused, "read_live": live, "read_after_restart": after}


async def _fsync_fault(root: Path, count: int, rng: random.Random) -> dict[str, int]:
    config = dataclasses.replace(CONFIG, flush_disk_type=FlushDiskType.SYNC_FLUSH)
    store = MessageStore(root, config)
    await store.start()
    acked: list[tuple[tuple[int, int], bytes]] = []
    refused = timeouts = 0
    lost_from: list[int] = []
    real_sync = segment_module._sync_data

    def sync(fd: int) -> None:
        if not lost_from and len(acked) >= count // 3:
            # The kernel drops what this fsync covered and says so once; later fsyncs succeed.
            lost_from.append(store.flushed_physical_offset)
            raise OSError(errno.EIO, "Input/output error")
        real_sync(fd)

    segment_module._sync_data = sync  # type: ignore[assignment]
    try:
        for index in range(count):
            record = _message(index, rng)
            result = await store.put_message_async(record)
            if result.status is PutMessageStatus.PUT_OK:
                acked.append(((record.queue_id, result.queue_offset), record.body))
            elif result.status is PutMessageStatus.FLUSH_DISK_TIMEOUT:
                timeouts += 1
            else:
                refused += 1
    finally:
        segment_module._sync_data = real_sync  # type: ignore[assignment]
    await store.stop()
    # The pages of the failed fsync never reached the disk: zero the commit log from there to the end of
    # what the failed fsync covered (the next fsync's offsets are past it).
    if lost_from:
        _zero_commit_log(root, lost_from[0], CONFIG.commit_log_segment_size, rng)
    reopened = MessageStore(root, config)
    reopened.open()
    after = _kept(acked, _read(reopened))
    reopened.close()
    return {
        "acknowledged": len(acked),
        "refused": refused,
        "flush_timeouts": timeouts,
        "read_after_restart": after,
    }


def _zero_commit_log(root: Path, start: int, segment_size: int, rng: random.Random) -> None:
    """Zero one page of the commit log at ``start`` (a lost writeback)."""
    path = root / "commitlog" / f"{start - start % segment_size:020d}"
    with path.open("r+b") as file:
        file.seek(start % segment_size)
        file.write(b"\0" * 4096)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=2000, help="appends per fault class")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        for name in ("cq-emfile", "cq-enospc-burst", "fsync-eio"):
            rng = random.Random(args.seed)
            root = Path(work) / name
            try:
                if name == "fsync-eio":
                    result = asyncio.run(_fsync_fault(root, args.messages, rng))
                else:
                    result = asyncio.run(_dispatch_faults(root, args.messages, rng, name))
            except Exception as exc:  # a store that cannot even reopen is a figure too
                print(f"{name:16} failed: {type(exc).__name__}: {exc}", flush=True)
                continue
            figures = ", ".join(f"{key} {value}" for key, value in result.items())
            print(f"{name:16} {figures}", flush=True)


if __name__ == "__main__":
    main()
