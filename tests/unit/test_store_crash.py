"""Crash safety: a child process appends with SYNC_FLUSH and reports each acknowledged message; it is
SIGKILLed at random points, the store is reopened each time, and every acknowledged message must be
readable exactly once in its queue, at the offset it was acknowledged with."""

from __future__ import annotations

import random
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

from broker.store import FlushDiskType, GetMessageStatus, MessageStore, StoreConfig
from rocketmq_wire.message.stored import decode_messages

CONFIG_ARGS = {
    "commit_log_segment_size": 64 * 1024,
    "consume_queue_entries_per_file": 64,
    "max_hash_slot_num": 64,
    "max_index_num": 256,
    "flush_interval_consume_queue_ms": 20,
    "max_transfer_count_on_message": 1_000_000,
    "max_transfer_bytes_on_message": 1 << 30,
}

CHILD = textwrap.dedent(
    """
    import asyncio, random, sys
    from broker.store import FlushDiskType, MessageStore, StoreConfig
    from rocketmq_wire.message.properties import encode_properties
    from rocketmq_wire.message.stored import MessageExt

    root, round_no, config_args = sys.argv[1], int(sys.argv[2]), eval(sys.argv[3])
    config = StoreConfig(flush_disk_type=FlushDiskType.SYNC_FLUSH, **config_args)

    async def producer(store, task, rng):
        seq = 0
        while True:
            topic = "CrashT%d" % (task % 2)
            queue_id = rng.randrange(3)
            body = ("%d-%d-%d:" % (round_no, task, seq)).encode() + b"x" * rng.randrange(0, 700)
            props = encode_properties({"KEYS": "r%d-t%d-s%d" % (round_no, task, seq)})
            message = MessageExt(topic=topic, body=body, queue_id=queue_id, properties_string=props,
                                 born_host="127.0.0.1:9")
            result = await store.put_message_async(message)
            if result.status.name == "PUT_OK":
                sys.stdout.write("ACK %s %d %d %s\\n" % (topic, queue_id, result.queue_offset, body.hex()))
                sys.stdout.flush()
            seq += 1

    async def main():
        store = MessageStore(root, config)
        await store.start()
        sys.stdout.write("READY\\n")
        sys.stdout.flush()
        rng = random.Random(round_no)
        await asyncio.gather(*(producer(store, task, random.Random(rng.random())) for task in range(12)))

    asyncio.run(main())
    """
)


def run_child(root: Path, round_no: int, kill_after: int) -> list[tuple[str, int, int, bytes]]:
    """Start a child, SIGKILL it after ``kill_after`` acknowledgements, return every complete ack line."""
    errors_path = root.parent / f"child-{round_no}.stderr"
    with open(errors_path, "w") as errors_file:
        process = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(root), str(round_no), repr(CONFIG_ARGS)],
            stdout=subprocess.PIPE,
            stderr=errors_file,
            text=True,
        )
    watchdog = threading.Timer(15.0, process.kill)
    watchdog.start()
    lines: list[str] = []
    try:
        assert process.stdout is not None
        ready = process.stdout.readline()
        assert ready == "READY\n", f"child failed to start: {ready!r} {errors_path.read_text()}"
        while len(lines) < kill_after:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line)
        process.kill()
        # Read the rest through the same buffered reader: readline() may already hold part of it.
        rest = process.stdout.read()
        process.wait()
    finally:
        watchdog.cancel()
    assert len(lines) >= kill_after, f"child stopped early: {errors_path.read_text()}"
    lines.extend(rest.splitlines(keepends=True))
    acks = []
    for line in lines:
        if not line.endswith("\n"):
            continue  # cut mid-write by the kill: never acknowledged as far as the parent knows
        _, topic, queue_id, offset, body_hex = line.split()
        acks.append((topic, int(queue_id), int(offset), bytes.fromhex(body_hex)))
    return acks


def read_queues(root: Path) -> dict[tuple[str, int], list[bytes]]:
    config = StoreConfig(flush_disk_type=FlushDiskType.ASYNC_FLUSH, **CONFIG_ARGS)  # type: ignore[arg-type]
    queues: dict[tuple[str, int], list[bytes]] = {}
    with MessageStore(root, config) as store:
        for topic, queue_ids in store.topics().items():
            for queue_id in queue_ids:
                result = store.get_messages(topic, queue_id, 0, 1_000_000)
                assert result.status is GetMessageStatus.FOUND
                decoded = decode_messages(result.body)
                assert [m.queue_offset for m in decoded] == list(range(result.max_offset))
                assert all((m.topic, m.queue_id) == (topic, queue_id) for m in decoded)
                queues[(topic, queue_id)] = [m.body for m in decoded]
    return queues


def check(root: Path, acked: list[tuple[str, int, int, bytes]]) -> None:
    queues = read_queues(root)
    for bodies in queues.values():
        assert len(bodies) == len(set(bodies)), "a message appears twice in one queue"
    for topic, queue_id, offset, body in acked:
        stored = queues.get((topic, queue_id), [])
        assert offset < len(stored), f"acknowledged {topic}/{queue_id}@{offset} is missing"
        assert stored[offset] == body, f"{topic}/{queue_id}@{offset} holds another message"


def test_sigkill_never_loses_an_acknowledged_message(tmp_path: Path) -> None:
    root = tmp_path / "store"
    rng = random.Random(20240611)
    acked: list[tuple[str, int, int, bytes]] = []
    for round_no in range(6):
        kill_after = 0 if round_no == 2 else rng.randrange(50, 600)
        new = run_child(root, round_no, kill_after)
        assert len(new) >= kill_after
        acked.extend(new)
        # Check a copy, so the next child recovers from the crashed state itself, not from our clean close.
        snapshot = tmp_path / f"check-{round_no}"
        shutil.copytree(root, snapshot)
        check(snapshot, acked)
        shutil.rmtree(snapshot)
    assert len(acked) > 500
    assert len(list((root / "commitlog").iterdir())) > 3
    check(root, acked)
